// RUN: spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5,0.1,0.4,0.1 ranks=2' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-choose-tree -split-input-file 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5 ranks=2' -split-input-file 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not spec-opt %s --spec-choose-tree='acceptance=0.6 ranks=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not spec-opt %s --spec-choose-tree='acceptance=0.6,1.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not spec-opt %s --spec-choose-tree='acceptance=0.6 verify-cost=-1' -split-input-file 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not spec-opt %s --spec-choose-tree='acceptance=0.6 max-nodes=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=NODES
// RUN: not spec-opt %s --spec-choose-tree='acceptance=0.6 draft-cost=-0.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=DRAFT

// NONE: error: spec-choose-tree: no acceptance given; pass acceptance=<a[1][0],...> (per depth, `ranks` entries: the acceptance of each rank of that depth's head)
// SHAPE: error: spec-choose-tree: acceptance has 3 entries, not a whole number of depths of 2 ranks
// RANKS: error: spec-choose-tree: ranks must be at least 1, got 0
// RANGE: error: spec-choose-tree: acceptance entries must lie in [0, 1], got 1.5
// VERIFY: error: spec-choose-tree: verify-cost must not be negative, got -1
// NODES: error: spec-choose-tree: max-nodes must be at least 1, got 0
// DRAFT: error: spec-choose-tree: draft-cost must not be negative, got -5.000000e-01

// Three depths of acceptance for two heads: the third depth has no head to
// propose it.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
// expected-error @below {{the acceptance covers 3 depths but decoder @decoder has 2 Medusa heads}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy)
