// RUN: spec-opt %s --spec-lower-generate -split-input-file -verify-diagnostics

func.func private @target(tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<draft>}
// expected-error @below {{spec-lower-generate: @target is not in the in-place cache form (input_ids, position_ids, kv_cache, past_length) -> (logits [1 x n x vocab], ..., kv_cache); run spec-kv-cache-inplace first}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{spec-lower-generate: decoders with MTP heads are not lowered yet; only drafts are}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
