// RUN: spec-opt %s --spec-lower-rounds -split-input-file -verify-diagnostics

// Before spec-kv-cache-inplace: the functional cache.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    tensor<?x4x?x8xf32> {spec.io = #spec.io<past_key, index = 0>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>})
// expected-error @below {{decoder @decoder: its batched target @target_slots takes no kv_cache (run spec-kv-cache-inplace first)}}
spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @target_slots}

// -----

// A tree mask (or any other input) a round does not give.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>},
    tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
// expected-error @below {{decoder @decoder: its batched target @target_slots takes arguments besides token ids, positions, its cache, the first slot and the past lengths}}
spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @target_slots}

// -----

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{decoder @decoder: no batched target @missing}}
spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @missing}

// -----

// The draft's twin before spec-kv-cache-inplace.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<draft>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
func.func private @draft_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>})
// expected-error @below {{decoder @decoder: its batched draft @draft_slots takes no kv_cache (run spec-kv-cache-inplace first)}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) {spec.slot_target = @target_slots, spec.slot_draft = @draft_slots}

// -----

// Medusa heads propose in greedy rounds only through the head logits the
// batched target returns for every row.
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
// expected-error @below {{decoder @decoder: its batched target @target_slots does not return the logits of head 1 for every row}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy) {spec.slot_target = @target_slots}

// -----

// An MTP module in the rounds reads the target's hidden states, which its
// batched target must return.
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
func.func private @module_slots(
    tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>},
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>, spec.slots = 4 : i64}
// expected-error @below {{decoder @decoder: its batched target @target_slots does not return the hidden states its MTP module reads}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.greedy) {spec.slot_target = @target_slots, spec.slot_draft = @module_slots}

// -----

// The module's twin must take them.
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
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
func.func private @module_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>, spec.slots = 4 : i64}
// expected-error @below {{decoder @decoder: its batched MTP module @module_slots takes no previous hidden states}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.greedy) {spec.slot_target = @target_slots, spec.slot_draft = @module_slots}

// -----

// Sampled heads' plain-round keys (the seed + 2^19 + the position) stay
// apart from every other draw only in a context under 2^19 positions.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x524288x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        !spec.kv_cache<2x4x2x524288x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
// expected-error @below {{decoder @decoder: sampled heads in batched rounds need a context under 524287 positions, not 524288}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.rejection<temperature = 0.7>) {spec.slot_target = @target_slots}
