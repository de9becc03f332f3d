// RUN: spec-opt %s --spec-compose-heads -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-compose-heads='heads=head1 decoder-name=medusa sampling=true temperature=0.7 top-k=4 top-p=0.5' | FileCheck %s --check-prefix=OPTIONS
// RUN: spec-opt %s --spec-compose-heads='depth=1' | FileCheck %s --check-prefix=FIRST
// RUN: spec-opt %s --spec-compose-heads='tree-parents=0,0,1 tree-ranks=0,1,0' | FileCheck %s --check-prefix=TREE
// RUN: spec-opt %s --spec-compose-heads='target=target' | FileCheck %s

// Medusa heads, found by their role in the module's order.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}

// CHECK: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy)
// OPTIONS: spec.decoder @medusa target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.rejection<temperature = 0.7, top_k = 4, top_p = 0.5>)
// FIRST: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
// TREE: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
