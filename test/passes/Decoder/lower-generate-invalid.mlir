// RUN: spec-opt %s --spec-lower-generate -split-input-file -verify-diagnostics

func.func private @target(tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<draft>}
// expected-error @below {{@target is not in the in-place cache form (input_ids, position_ids, kv_cache, past_length) -> (logits [1 x n x vocab], ..., kv_cache); run spec-kv-cache-inplace first}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

// Heads fused for the last position only.
func.func private @target_fused(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                                tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                                !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                                index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x1x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{target @target_fused does not return the logits of head 1 (#spec.io<head_logits, index = 1>) for every position; fuse the heads with spec-fuse-mtp-heads{last-position-only=false} first}}
spec.decoder @decoder target(@target_fused) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)

// -----

// A module chained to depth 2 that does not return its hidden states.
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @module(tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>},
                          tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
// expected-error @below {{MTP module @module at depth 1 must return its hidden states [1 x n x hidden] (#spec.io<hidden_states>) for depth 2 to run on}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module, @module]>) verify(#spec.greedy)

// -----

// Depth 2's module takes hidden states of another size than depth 1 gives.
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @m1(tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>},
                      tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                      tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                      !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                      index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
func.func private @m2(tensor<?x?x6xf32> {spec.io = #spec.io<previous_hidden_states>},
                      tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                      tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                      !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                      index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 2>}
// expected-error @below {{MTP module @m2 at depth 2 does not take [1 x n x 4] hidden states, which depth 1 gives}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@m1, @m2]>) verify(#spec.greedy)

// -----

// An MTP module without the target's hidden states.
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @module(tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>},
                          tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
// expected-error @below {{the MTP module needs the target's hidden_states result and a previous_hidden_states argument}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.greedy)

// -----

// A tree needs a target that takes the tree mask.
func.func private @fused(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{target @fused does not take a tree mask (#spec.io<tree_mask>) to verify the decoder's tree; run spec-tree-attention first}}
spec.decoder @decoder target(@fused) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)

// -----

// A draft's tree deeper than one needs a draft that takes the tree mask.
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>},
                          tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<draft>}
// expected-error @below {{draft @draft does not take a tree mask (#spec.io<tree_mask>) to propose the decoder's tree below its first depth; run spec-tree-attention first}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 1], ranks = [0, 0]>)

