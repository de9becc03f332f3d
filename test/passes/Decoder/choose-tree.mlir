// RUN: spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5,0.1 ranks=2 max-nodes=3' -split-input-file -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5,0.1 ranks=2' -split-input-file 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5,0.1 ranks=2 verify-cost=0.3' -split-input-file 2>&1 | FileCheck %s --check-prefix=CHAIN
// RUN: spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5,0.1 ranks=2 verify-cost=1' -split-input-file 2>&1 | FileCheck %s --check-prefix=NOPAY
// RUN: spec-opt %s --spec-choose-tree='acceptance=0.9,0.5 verify-cost=0.01' -split-input-file 2>&1 | FileCheck %s --check-prefix=DEEP
// RUN: spec-opt %s --spec-choose-tree='acceptance=0.6,0.2,0.5,0.1 ranks=2 draft-cost=0.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=DRAFT

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
func.func private @head3(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 3>}

// Path probabilities: [0] 0.6, [0, 0] 0.3, [1] 0.2, [1, 0] 0.1, [0, 1]
// 0.06, [1, 1] 0.02. The three best form the tree; the third head goes.
// expected-remark @below {{a tree of 3 candidates [[0], [1], [0, 0]]: 2.10 expected tokens per target forward, predicted speedup 2.10x (verify cost 0.000 per extra row, at most 3 candidates)}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2, @head3]>) verify(#spec.greedy)
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// With rows free (a memory-bound target), every candidate that can be
// accepted pays.
// ALL: remark: a tree of 6 candidates {{\[}}[0], [1], [0, 0], [0, 1], [1, 0], [1, 1]]: 2.28 expected tokens per target forward, predicted speedup 2.28x
// ALL: tree(#spec.tree<parents = [0, 0, 1, 1, 2, 2], ranks = [0, 1, 0, 1, 0, 1]>)

// When a row costs 0.3 target steps: 1.6 / 1.3 beats 1.9 / 1.6 and 2.1 /
// 1.9. One most likely candidate is a chain of one head, without a tree.
// CHAIN: remark: a chain of 1 candidate {{\[}}[0]]: 1.60 expected tokens per target forward, predicted speedup 1.23x (verify cost 0.300 per extra row, at most 63 candidates)
// CHAIN: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy){{$}}

// NOPAY: warning: no tree of the Medusa heads' candidates predicts a speedup above 1x (verify cost 1.000 per extra row, at most 63 candidates); decoder left unchanged
// NOPAY: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2, @head3]>) verify(#spec.greedy){{$}}

// One rank per depth: 0.9, 0.45 and 0.225 are paths of a chain through
// the third head; 1 + 0.9 + 0.45 + 0.225 over 1.03 beats two heads' 2.35 /
// 1.02.
// DEEP: remark: a chain of 2 candidates {{\[}}[0], [0, 0]]: 2.35 expected tokens per target forward, predicted speedup 2.30x

// -----

// Decoders with an MTP module or a tree already are skipped.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @module(tensor<?x4xf32>, tensor<?xi64>) -> (tensor<?x8xf32>, tensor<?x4xf32>)
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}

// CHECK: spec.decoder @mtp_decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.greedy){{$}}
spec.decoder @mtp_decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.greedy)
// CHECK: spec.decoder @tree_decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)
spec.decoder @tree_decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)

// -----

// A draft's tree: gamma becomes its depth. Each depth costs a draft
// forward: at 0.5 target steps each, the two candidates of depth 1 (1.8 /
// 1.5) beat the six of depth 2 (2.28 / 2.0) and the chain of one (1.6 /
// 1.5).
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<draft>}
// expected-remark @below {{a tree of 3 candidates [[0], [1], [0, 0]]: 2.10 expected tokens per target forward, predicted speedup 2.10x (verify cost 0.000 per extra row, draft cost 0.000 per depth, at most 3 candidates)}}
spec.decoder @draft_decoder target(@target) proposer(#spec.draft<@draft, gamma = 5>) verify(#spec.greedy)
// CHECK: spec.decoder @draft_decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
// DRAFT: remark: a tree of 2 candidates {{\[}}[0], [1]]: 1.80 expected tokens per target forward, predicted speedup 1.20x (verify cost 0.000 per extra row, draft cost 0.500 per depth, at most 63 candidates)
// DRAFT: spec.decoder @draft_decoder target(@target) proposer(#spec.draft<@draft, gamma = 1>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)
