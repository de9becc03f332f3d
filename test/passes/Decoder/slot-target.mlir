// RUN: spec-opt %s --spec-slot-target | FileCheck %s
// RUN: spec-opt %s --spec-slot-target=slots=3 | FileCheck %s --check-prefix=SLOTS

// Each decoder's target (and draft) gets a batched twin, named on the
// decoder, for spec-kv-cache-inplace to give a cache of slots; the
// decoder's loops keep the target. A name already taken gets a suffix.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @target_slots(tensor<?xi64>)

spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy)

// CHECK: func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<target>}
// CHECK-NEXT: func.func private @[[CLONE:target_slots_[0-9]+]](tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<target>, spec.slots = 8 : i64}
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @[[CLONE]]}
// SLOTS: spec.slots = 3 : i64

func.func private @target2(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func @draft(%ids: tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<draft>} {
  %0 = tensor.empty() : tensor<1x1x8xf32>
  %1 = tensor.cast %0 : tensor<1x1x8xf32> to tensor<?x?x8xf32>
  return %1 : tensor<?x?x8xf32>
}
spec.decoder @drafted target(@target2) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// CHECK: func.func @draft(
// CHECK: func.func @draft_slots(%{{.*}}: tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<draft>, spec.slots = 8 : i64}
// CHECK: spec.decoder @drafted target(@target2) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) {spec.slot_draft = @draft_slots, spec.slot_target = @target2_slots}

// A target with Medusa heads fused in (spec.fused_from): chains, greedy or
// sampled, propose with the heads in rounds, so the twin is the fused
// target; a tree decoder's rounds run the target alone, so its twin is the
// one the heads were fused into.
func.func private @plain(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @fused(tensor<?x?xi64>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32> {spec.io = #spec.io<head_logits, index = 1>})
    attributes {spec.role = #spec.role<target>, spec.fused_from = @plain}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
spec.decoder @greedy_heads target(@fused) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
spec.decoder @sampled_heads target(@fused) proposer(#spec.mtp<[@head1]>) verify(#spec.rejection<temperature = 0.7>)
spec.decoder @tree_heads target(@fused) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)

// CHECK: func.func private @plain_slots(
// CHECK: func.func private @fused_slots(
// CHECK-SAME: spec.fused_from = @plain
// CHECK: spec.decoder @greedy_heads {{.*}} {spec.slot_target = @fused_slots}
// CHECK: spec.decoder @sampled_heads {{.*}} {spec.slot_target = @fused_slots_{{[0-9]+}}}
// CHECK: spec.decoder @tree_heads {{.*}} {spec.slot_target = @plain_slots}

// An MTP module proposes in the rounds when it is a chain of one, greedy
// or sampled: it gets a twin as a draft does. A deeper chain's rounds run
// the target alone.
func.func private @target3(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func @module(%hidden: tensor<?x?x4xf32>, %ids: tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>} {
  %0 = tensor.empty() : tensor<1x1x8xf32>
  %1 = tensor.cast %0 : tensor<1x1x8xf32> to tensor<?x?x8xf32>
  return %1 : tensor<?x?x8xf32>
}
spec.decoder @one_module target(@target3) proposer(#spec.mtp<[@module]>) verify(#spec.rejection<temperature = 0.7>)
spec.decoder @chained target(@target3) proposer(#spec.mtp<[@module, @module]>) verify(#spec.greedy)

// CHECK: func.func @module(
// CHECK: func.func @module_slots(%{{.*}}: tensor<?x?x4xf32>, %{{.*}}: tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<mtp_module, depth = 1>, spec.slots = 8 : i64}
// CHECK: spec.decoder @one_module {{.*}} {spec.slot_draft = @module_slots, spec.slot_target = @target3_slots}
// CHECK: spec.decoder @chained {{.*}} {spec.slot_target = @target3_slots_{{[0-9]+}}}
