// RUN: spec-opt %s --spec-lower-rounds -split-input-file -verify-diagnostics

// A decoder whose proposer does not propose in batched rounds gets rounds
// of the target alone, and says so.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @module(tensor<?x?x4xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
// expected-remark @below {{decoder @decoder: its batched rounds run the target alone (MTP modules propose in rounds as a chain of one)}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module, @module]>) verify(#spec.greedy) {spec.slot_target = @target_slots}

// -----

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
// expected-remark @below {{decoder @decoder: its batched rounds run the target alone (no trees in rounds yet)}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>) {spec.slot_target = @target_slots}
