// RUN: spec-opt %s -split-input-file -verify-diagnostics

// Every verifier of the spec dialect, one refusal per split.

//===----------------------------------------------------------------------===//
// Attributes and types
//===----------------------------------------------------------------------===//

// expected-error @below {{role 'medusa_head' requires a depth (1 for the first proposal)}}
func.func private @f() attributes {spec.role = #spec.role<medusa_head>}

// -----

// expected-error @below {{role 'target' does not take a depth}}
func.func private @f() attributes {spec.role = #spec.role<target, depth = 1>}

// -----

// expected-error @below {{depth must be at least 1, got 0}}
func.func private @f() attributes {spec.role = #spec.role<mtp_module, depth = 0>}

// -----

// expected-error @below {{expected ::specula::spec::FunctionRole to be one of: target, draft, medusa_head, mtp_module}}
// expected-error @below {{failed to parse Spec_RoleAttr parameter 'kind'}}
func.func private @f() attributes {spec.role = #spec.role<verifier>}

// -----

// expected-error @below {{vocab_size must be positive, got 0}}
func.func private @f() attributes {spec.config = #spec.model_config<vocab_size = 0>}

// -----

// expected-error @below {{eos_token_id 259 is outside the vocabulary [0, 259)}}
func.func private @f() attributes {spec.config = #spec.model_config<vocab_size = 259, eos_token_id = 259>}

// -----

// expected-error @below {{pad_token_id -1 is outside the vocabulary [0, 259)}}
func.func private @f() attributes {spec.config = #spec.model_config<vocab_size = 259, pad_token_id = -1>}

// -----

// expected-error @below {{max_context must be positive, got 0}}
func.func private @f() attributes {spec.config = #spec.model_config<vocab_size = 259, max_context = 0>}

// -----

// expected-error @below {{tokenizer fingerprint must not be empty}}
func.func private @f() attributes {spec.config = #spec.model_config<vocab_size = 259, tokenizer = "">}

// -----

// expected-error @below {{struct is missing required parameter: vocab_size}}
func.func private @f() attributes {spec.config = #spec.model_config<eos_token_id = 1>}

// -----

// expected-error @below {{gamma (tokens proposed per step) must be at least 1, got 0}}
spec.decoder @d target(@t) proposer(#spec.draft<@draft, gamma = 0>) verify(#spec.greedy)

// -----

// expected-error @below {{min_confidence (a probability below which the draft stops proposing) must lie in [0, 1), got 1.0}}
spec.decoder @d target(@t) proposer(#spec.draft<@draft, gamma = 4, min_confidence = 1.0>) verify(#spec.greedy)

// -----

// expected-error @below {{'spec.decoder' op min_confidence stops a draft's proposals early under greedy verification only}}
spec.decoder @d target(@t) proposer(#spec.draft<@draft, gamma = 4, min_confidence = 0.5>) verify(#spec.rejection<temperature = 1.0>)

// -----

// expected-error @below {{'spec.decoder' op a draft's tree has a fixed shape; min_confidence stops chains of proposals}}
spec.decoder @d target(@t) proposer(#spec.draft<@draft, gamma = 1, min_confidence = 0.5>) verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>)

// -----

// expected-error @below {{'spec.decoder' op 'spec.cross_tokenizer' marks a draft proposing chains}}
spec.decoder @d target(@t) proposer(#spec.draft<@draft, gamma = 1>) verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>) {spec.cross_tokenizer}

// -----

// expected-error @below {{'spec.decoder' op 'spec.cross_tokenizer' marks a draft proposing chains}}
spec.decoder @d target(@t) proposer(#spec.none) verify(#spec.greedy) {spec.cross_tokenizer}

// -----

// expected-error @below {{'spec.decoder' op a tree of candidates needs a proposer; #spec.none proposes nothing}}
spec.decoder @d target(@t) proposer(#spec.none) verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>)

// -----

// An empty head list does not parse; the verifier's own check is exercised
// from C++ in test/unit/dialects/spec/SpecDialectTest.cpp.
// expected-error @below {{expected attribute value}}
// expected-error @below {{failed to parse Spec_MTPProposerAttr parameter 'heads'}}
spec.decoder @d target(@t) proposer(#spec.mtp<[]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.decoder' op head 2 @h1 is listed twice; only an MTP module can run again, at the depth after its own}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1, @h1]>) verify(#spec.greedy)

// -----

// A chained module runs at consecutive depths only.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @m1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<mtp_module, depth = 1>}
func.func private @m2(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<mtp_module, depth = 2>}
// expected-error @below {{'spec.decoder' op head 3 @m1 is listed twice; only an MTP module can run again, at the depth after its own}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@m1, @m2, @m1]>) verify(#spec.greedy)

// -----

// expected-error @below {{temperature must be positive and finite, got 0.0 (use #spec.greedy for temperature 0)}}
spec.decoder @d target(@t) proposer(#spec.mtp<[@h1]>) verify(#spec.rejection<temperature = 0.0>)

// -----

// expected-error @below {{top_k must be non-negative (0 disables it), got -3}}
spec.decoder @d target(@t) proposer(#spec.mtp<[@h1]>) verify(#spec.rejection<top_k = -3>)

// -----

// expected-error @below {{top_p must lie in (0, 1], got 1.5}}
spec.decoder @d target(@t) proposer(#spec.mtp<[@h1]>) verify(#spec.rejection<top_p = 1.5>)

// -----

// expected-error @below {{top_p must lie in (0, 1], got 0.0}}
spec.decoder @d target(@t) proposer(#spec.mtp<[@h1]>) verify(#spec.rejection<top_p = 0.0>)

// -----

// expected-error @below {{kv_cache shape must be layers x [slots x] kv_heads x capacity x head_dim (4 or 5 dimensions), got 3}}
func.func private @f(!spec.kv_cache<2x4x32xf32>)

// -----

// expected-error @below {{kv_cache capacity must be positive, got 0}}
func.func private @f(!spec.kv_cache<2x4x0x32xf32>)

// -----

// expected-error @below {{kv_cache element type must be a float type, got 'i8'}}
func.func private @f(!spec.kv_cache<2x4x16x32xi8>)

// -----

// expected-error @below {{expected static shape}}
func.func private @f(!spec.kv_cache<2x4x?x32xf32>)

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

// -----

// expected-error @below {{'spec.role' is only valid on function operations}}
module attributes {spec.role = #spec.role<target>} {}

// -----

// expected-error @below {{'spec.role' must be a #spec.role attribute, got "target"}}
func.func private @f() attributes {spec.role = "target"}

// -----

// expected-error @below {{'spec.config' must be a #spec.model_config attribute, got 259 : i64}}
func.func private @f() attributes {spec.config = 259}

// -----

// expected-error @below {{unknown spec dialect attribute 'spec.vocab'; expected 'spec.role', 'spec.config', 'spec.fused_from', 'spec.context_capacity', 'spec.slots', 'spec.slot_target', 'spec.slot_draft', 'spec.cross_tokenizer', 'spec.slot_cache_shape', 'spec.column_tiles' or 'spec.row_tiles'}}
func.func private @f() attributes {spec.vocab = 259}

// -----

// expected-error @below {{'spec.fused_from' must name a function (@symbol), got "target"}}
func.func private @f() attributes {spec.fused_from = "target"}

// -----

func.func private @head(tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.fused_from' names @head, which is not a function of role target}}
func.func private @f() attributes {spec.fused_from = @head}

// -----

// expected-error @below {{'spec.fused_from' names @missing, which is not a function of role target}}
func.func private @f() attributes {spec.fused_from = @missing}

// -----

// expected-error @below {{'spec.context_capacity' must be a positive integer, got 0 : i64}}
func.func private @f() attributes {spec.context_capacity = 0 : i64}

//===----------------------------------------------------------------------===//
// spec.io
//===----------------------------------------------------------------------===//

// -----

// expected-error @below {{'past_key' requires an index (the layer)}}
func.func private @f(tensor<?xf32> {spec.io = #spec.io<past_key>})

// -----

// expected-error @below {{'head_logits' requires an index (the head's depth)}}
func.func private @f() -> (tensor<?xf32> {spec.io = #spec.io<head_logits>})

// -----

// expected-error @below {{'logits' does not take an index}}
func.func private @f() -> (tensor<?xf32> {spec.io = #spec.io<logits, index = 1>})

// -----

// expected-error @below {{the index of 'head_logits' must be at least 1, got 0}}
func.func private @f() -> (tensor<?xf32> {spec.io = #spec.io<head_logits, index = 0>})

// -----

// expected-error @below {{the index of 'present_value' must be at least 0, got -1}}
func.func private @f() -> (tensor<?xf32> {spec.io = #spec.io<present_value, index = -1>})

// -----

// expected-error @below {{'spec.io' must be a #spec.io attribute, got "input_ids"}}
func.func private @f(tensor<?xi64> {spec.io = "input_ids"})

// -----

// expected-error @below {{unknown spec dialect argument or result attribute 'spec.input'; expected 'spec.io' or 'spec.name'}}
func.func private @f(tensor<?xi64> {spec.input = 1})

//===----------------------------------------------------------------------===//
// spec.decoder
//===----------------------------------------------------------------------===//

// -----

func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op target @missing does not name a symbol}}
spec.decoder @d target(@missing) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

// expected-note @below {{symbol defined here}}
memref.global "private" @other : memref<4xf32>
// expected-error @below {{'spec.decoder' op target @other is not a function}}
spec.decoder @d target(@other) proposer(#spec.mtp<[@other]>) verify(#spec.greedy)

// -----

// expected-note @below {{function defined here}}
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op target @target has no 'spec.role' attribute; expected role 'target'}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
// expected-note @below {{function defined here}}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
// expected-error @below {{'spec.decoder' op draft @draft has role 'target', expected 'draft'}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?x8xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op target @target must take token ids (a tensor of signless integers) as its first argument, got 'tensor<?x8xf32>'}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> i64 attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op draft @draft must return logits (a ranked tensor of floats, vocabulary last) as its first result, got 'i64'}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 9>}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op target @target returns logits over 8 tokens but its spec.config has vocab_size 9}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x259xf32> attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 259>}
func.func private @draft(tensor<?xi64>) -> tensor<?x300xf32> attributes {spec.role = #spec.role<draft>, spec.config = #spec.model_config<vocab_size = 300>}
// expected-error @below {{'spec.decoder' op vocabulary size mismatch: target @target has 259 tokens, draft @draft has 300}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

// Without configs, the logits' static vocabulary dimensions are compared.
func.func private @target(tensor<?xi64>) -> tensor<?x259xf32> attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> tensor<?x256xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op vocabulary size mismatch: target @target has 259 tokens, draft @draft has 256}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x259xf32> attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:aaaa">}
func.func private @draft(tensor<?xi64>) -> tensor<?x259xf32> attributes {spec.role = #spec.role<draft>, spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bbbb">}
// expected-error @below {{'spec.decoder' op tokenizer mismatch: target @target has "sha256:aaaa", draft @draft has "sha256:bbbb"; token ids would mean different text}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
// expected-note @below {{function defined here}}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op head 1 @h1 has role 'draft', expected 'medusa_head' or 'mtp_module'}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 2>}
func.func private @h2(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.decoder' op head 1 @h1 has depth 2; heads must be listed in depth order 1..2}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1, @h2]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @h2(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<mtp_module, depth = 2>}
// expected-error @below {{'spec.decoder' op head 2 @h2 is a 'mtp_module' but head 1 is a 'medusa_head'; one decoder uses one kind of head}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1, @h2]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.decoder' op head 1 @h1 must take a hidden state (a tensor of floats) as its first argument, got 'tensor<?xi64>'}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x9xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.decoder' op vocabulary size mismatch: target @target has 8 tokens, head 1 @h1 has 9}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.decoder' op acceptance_rate must lie in [0, 1], got 1.5}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy) {acceptance_rate = 1.5}

//===----------------------------------------------------------------------===//
// spec.propose
//===----------------------------------------------------------------------===//

// -----

func.func @f(%logits: tensor<4x8xf32>) {
  // expected-error @below {{'spec.propose' op tokens must have the logits' shape without the vocabulary dimension ('tensor<4x8xf32>'), got 'tensor<3xi64>'}}
  %t, %q = spec.propose %logits rule(#spec.greedy) : tensor<4x8xf32> -> tensor<3xi64>, tensor<4x8xf32>
  return
}

// -----

func.func @f(%logits: tensor<4x8xf32>) {
  // expected-error @below {{'spec.propose' op probs must have the logits' type 'tensor<4x8xf32>', got 'tensor<4x8xf16>'}}
  %t, %q = spec.propose %logits rule(#spec.greedy) : tensor<4x8xf32> -> tensor<4xi64>, tensor<4x8xf16>
  return
}

// -----

func.func @f(%logits: tensor<4x8xf32>) {
  // expected-error @below {{'spec.propose' op sampling with #spec.rejection needs a generator key}}
  %t, %q = spec.propose %logits rule(#spec.rejection<>) : tensor<4x8xf32> -> tensor<4xi64>, tensor<4x8xf32>
  return
}

// -----

func.func @f(%logits: tensor<f32>) {
  // expected-error @below {{'spec.propose' op logits must have a vocabulary dimension}}
  %t, %q = spec.propose %logits rule(#spec.greedy) : tensor<f32> -> tensor<i64>, tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// spec.verify
//===----------------------------------------------------------------------===//

// -----

func.func @f(%ids: tensor<?xi64>) {
  // expected-error @below {{'spec.verify' op callee @nowhere does not name a symbol}}
  %logits = spec.verify @nowhere(%ids) : (tensor<?xi64>) -> tensor<?x8xf32>
  return
}

// -----

// expected-note @below {{function defined here}}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
func.func @f(%ids: tensor<?xi64>) {
  // expected-error @below {{'spec.verify' op callee @draft has role 'draft', expected 'target'}}
  %logits = spec.verify @draft(%ids) : (tensor<?xi64>) -> tensor<?x8xf32>
  return
}

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func @f(%ids: tensor<?xi32>) {
  // expected-error @below {{'spec.verify' op type '(tensor<?xi32>) -> tensor<?x8xf32>' does not match the signature '(tensor<?xi64>) -> tensor<?x8xf32>' of target @target}}
  %logits = spec.verify @target(%ids) : (tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func @f(%ids: tensor<?xi64>) {
  // expected-error @below {{'spec.verify' op type '(tensor<?xi64>) -> (tensor<?x8xf32>, tensor<?x8xf32>)' does not match the signature '(tensor<?xi64>) -> tensor<?x8xf32>' of target @target}}
  %logits:2 = spec.verify @target(%ids) : (tensor<?xi64>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// spec.accept
//===----------------------------------------------------------------------===//

// -----

func.func @f(%p: tensor<4xi64>, %logits: tensor<4x8xf32>) {
  // expected-error @below {{'spec.accept' op target logits must have one row more than there are proposals (5), got 4}}
  %n, %next = spec.accept %p, %logits rule(#spec.greedy) : tensor<4xi64>, tensor<4x8xf32>
  return
}

// -----

func.func @f(%p: tensor<1x4xi64>, %logits: tensor<5x8xf32>) {
  // expected-error @below {{'spec.accept' op proposals must be a 1-D tensor of gamma tokens, got 'tensor<1x4xi64>'}}
  %n, %next = spec.accept %p, %logits rule(#spec.greedy) : tensor<1x4xi64>, tensor<5x8xf32>
  return
}

// -----

func.func @f(%p: tensor<4xi64>, %logits: tensor<1x5x8xf32>) {
  // expected-error @below {{'spec.accept' op target logits must be 2-D (gamma + 1 positions x vocabulary), got 'tensor<1x5x8xf32>'}}
  %n, %next = spec.accept %p, %logits rule(#spec.greedy) : tensor<4xi64>, tensor<1x5x8xf32>
  return
}

// -----

func.func @f(%p: tensor<4xi64>, %logits: tensor<5x8xf32>, %q: tensor<4x8xf32>, %key: i64) {
  // expected-error @below {{'spec.accept' op #spec.greedy verification takes neither proposal probabilities nor a generator key}}
  %n, %next = spec.accept %p, %logits probs(%q : tensor<4x8xf32>) key(%key) rule(#spec.greedy) : tensor<4xi64>, tensor<5x8xf32>
  return
}

// -----

func.func @f(%p: tensor<4xi64>, %logits: tensor<5x8xf32>, %key: i64) {
  // expected-error @below {{'spec.accept' op #spec.rejection verification needs the proposal probabilities (probs) and a generator key (key)}}
  %n, %next = spec.accept %p, %logits key(%key) rule(#spec.rejection<>) : tensor<4xi64>, tensor<5x8xf32>
  return
}

// -----

func.func @f(%p: tensor<4xi64>, %logits: tensor<5x8xf32>, %q: tensor<4x9xf32>, %key: i64) {
  // expected-error @below {{'spec.accept' op proposal probabilities must be gamma x vocabulary with the logits' element type, got 'tensor<4x9xf32>'}}
  %n, %next = spec.accept %p, %logits probs(%q : tensor<4x9xf32>) key(%key) rule(#spec.rejection<>) : tensor<4xi64>, tensor<5x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// KV caches
//===----------------------------------------------------------------------===//

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %k: tensor<2x4x32xf32>) {
  // expected-error @below {{'spec.cache.append' op keys must be layers x kv_heads x positions x head_dim (rank 4), got 'tensor<2x4x32xf32>'}}
  %r = spec.cache.append %c, %k, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<2x4x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %k: tensor<2x2x1x32xf32>) {
  // expected-error @below {{'spec.cache.append' op keys dimension 1 is 2 but the cache's is 4}}
  %r = spec.cache.append %c, %k, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<2x2x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %k: tensor<2x4x1x32xf16>) {
  // expected-error @below {{'spec.cache.append' op keys element type 'f16' does not match the cache's 'f32'}}
  %r = spec.cache.append %c, %k, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<2x4x1x32xf16>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %k: tensor<2x4x17x32xf32>) {
  // expected-error @below {{'spec.cache.append' op keys hold 17 positions, more than the cache's capacity 16}}
  %r = spec.cache.append %c, %k, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<2x4x17x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %k: tensor<2x4x1x32xf32>, %v: tensor<2x4x2x32xf32>) {
  // expected-error @below {{'spec.cache.append' op failed to verify that all of {keys, values} have same type}}
  %r = "spec.cache.append"(%c, %k, %v) : (!spec.kv_cache<2x4x16x32xf32>, tensor<2x4x1x32xf32>, tensor<2x4x2x32xf32>) -> !spec.kv_cache<2x4x16x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>) {
  // expected-error @below {{'spec.cache.view' op keys dimension 3 is 16 but the cache's is 32}}
  %k, %v = spec.cache.view %c : !spec.kv_cache<2x4x16x32xf32> -> tensor<2x4x?x16xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>) {
  %n = arith.constant -1 : index
  // expected-error @below {{'spec.cache.commit' op count must be non-negative, got -1}}
  %r = spec.cache.commit %c, %n : !spec.kv_cache<2x4x16x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>) {
  %n = arith.constant 17 : index
  // expected-error @below {{'spec.cache.commit' op count 17 exceeds the cache's capacity 16}}
  %r = spec.cache.commit %c, %n : !spec.kv_cache<2x4x16x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>) {
  // expected-error @below {{'spec.cache.rollback' op failed to verify that all of {cache, result} have same type}}
  %r = "spec.cache.rollback"(%c) : (!spec.kv_cache<2x4x16x32xf32>) -> !spec.kv_cache<2x4x8x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %p: index, %k: tensor<1x4x1x32xf32>) {
  // expected-error @below {{'spec.cache.write' op layer 2 is out of range: the cache has 2 layers}}
  %r = spec.cache.write %c keys layer 2 at %p, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<1x4x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %p: index, %k: tensor<2x4x1x32xf32>) {
  // expected-error @below {{'spec.cache.write' op caches hold batch 1; new entries has batch 2}}
  %r = spec.cache.write %c keys layer 0 at %p, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<2x4x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %p: index, %k: tensor<1x2x1x32xf32>) {
  // expected-error @below {{'spec.cache.write' op new entries has 2 KV heads but the cache has 4}}
  %r = spec.cache.write %c values layer 0 at %p, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<1x2x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %p: index, %k: tensor<1x4x1x16xf32>) {
  // expected-error @below {{'spec.cache.write' op new entries has head dimension 16 but the cache has 32}}
  %r = spec.cache.write %c values layer 0 at %p, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<1x4x1x16xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %p: index, %k: tensor<1x4x1x32xf16>) {
  // expected-error @below {{'spec.cache.write' op new entries element type 'f16' does not match the cache's 'f32'}}
  %r = spec.cache.write %c values layer 0 at %p, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<1x4x1x32xf16>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %n: index) {
  // expected-error @below {{'spec.cache.read' op entries hold 17 positions, more than the cache's capacity 16}}
  %r = spec.cache.read %c keys layer 1 length %n : !spec.kv_cache<2x4x16x32xf32> -> tensor<1x4x17x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %n: index) {
  // expected-error @below {{'spec.cache.read' op entries must be batch x kv_heads x positions x head_dim (rank 4), got 'tensor<4x?x32xf32>'}}
  %r = spec.cache.read %c keys layer 1 length %n : !spec.kv_cache<2x4x16x32xf32> -> tensor<4x?x32xf32>
  return
}

// -----

// expected-error @below {{kv_cache slots must be positive, got 0}}
func.func private @f(!spec.kv_cache<2x0x4x16x32xf32>)

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %p: index, %k: tensor<1x4x1x32xf32>) {
  // expected-error @below {{'spec.cache.write' op takes one sequence's cache, got one of 3 slots (read and write those with spec.cache.read_slots and spec.cache.write_slots)}}
  %r = spec.cache.write %c keys layer 0 at %p, %k : !spec.kv_cache<2x3x4x16x32xf32>, tensor<1x4x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %k: tensor<1x4x?x32xf32>) {
  // expected-error @below {{'spec.cache.append' op takes one sequence's cache, got one of 3 slots}}
  %r = spec.cache.append %c, %k, %k : !spec.kv_cache<2x3x4x16x32xf32>, tensor<1x4x?x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x4x16x32xf32>, %s: index, %l: tensor<?xi64>, %k: tensor<?x4x1x32xf32>) {
  // expected-error @below {{'spec.cache.write_slots' op takes a cache of slots (layers x slots x kv_heads x capacity x head_dim), got '!spec.kv_cache<2x4x16x32xf32>'}}
  %r = spec.cache.write_slots %c keys layer 0 slots %s lengths %l, %k : !spec.kv_cache<2x4x16x32xf32>, tensor<?xi64>, tensor<?x4x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %s: index, %l: tensor<2xi64>, %k: tensor<3x4x1x32xf32>) {
  // expected-error @below {{'spec.cache.write_slots' op new entries have 3 sequences but there are 2 past lengths}}
  %r = spec.cache.write_slots %c keys layer 0 slots %s lengths %l, %k : !spec.kv_cache<2x3x4x16x32xf32>, tensor<2xi64>, tensor<3x4x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %s: index, %l: tensor<?xi64>, %k: tensor<4x4x1x32xf32>) {
  // expected-error @below {{'spec.cache.write_slots' op new entries have 4 sequences, more than the cache's 3 slots}}
  %r = spec.cache.write_slots %c keys layer 0 slots %s lengths %l, %k : !spec.kv_cache<2x3x4x16x32xf32>, tensor<?xi64>, tensor<4x4x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %s: index, %l: tensor<?xi64>, %k: tensor<?x2x1x32xf32>) {
  // expected-error @below {{'spec.cache.write_slots' op new entries has 2 KV heads but the cache has 4}}
  %r = spec.cache.write_slots %c values layer 1 slots %s lengths %l, %k : !spec.kv_cache<2x3x4x16x32xf32>, tensor<?xi64>, tensor<?x2x1x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %s: index, %n: index) {
  // expected-error @below {{'spec.cache.read_slots' op entries have 5 sequences, more than the cache's 3 slots}}
  %r = spec.cache.read_slots %c keys layer 0 slots %s count %n length %n : !spec.kv_cache<2x3x4x16x32xf32> -> tensor<5x4x?x32xf32>
  return
}

// -----

func.func @f(%c: !spec.kv_cache<2x3x4x16x32xf32>, %s: index, %n: index) {
  // expected-error @below {{'spec.cache.read_slots' op layer 2 is out of range: the cache has 2 layers}}
  %r = spec.cache.read_slots %c keys layer 2 slots %s count %n length %n : !spec.kv_cache<2x3x4x16x32xf32> -> tensor<?x4x?x32xf32>
  return
}

// -----

// expected-error @below {{'spec.slots' must be a positive integer, got 0 : i64}}
func.func private @f() attributes {spec.slots = 0 : i64}

// -----

// expected-error @below {{'spec.slot_target' names a function (@symbol) on a spec.decoder}}
func.func private @f() attributes {spec.slot_target = @f}

// -----

// expected-error @below {{'spec.cross_tokenizer' is a unit attribute of spec.decoder}}
func.func private @f() attributes {spec.cross_tokenizer}

// -----

// expected-error @below {{'spec.column_tiles' is a unit attribute of loops}}
func.func private @f() attributes {spec.column_tiles}

// -----

// expected-error @below {{'spec.row_tiles' is a unit attribute of loops}}
func.func private @f() attributes {spec.row_tiles}

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{a tree has one parent and one rank per candidate, got 2 parents and 1 ranks}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0]>)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{candidate 2 has parent 2; parents are the root (0) or earlier candidates}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 2], ranks = [0, 0]>)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{candidates 1 and 2 are the same token (rank 0 under parent 0)}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 0]>)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{candidate 1 has rank -1; ranks count from 0}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [-1]>)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @h1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{'spec.decoder' op the tree is 2 candidates deep but the proposer has 1 heads}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@h1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 1], ranks = [0, 0]>)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// expected-error @below {{'spec.decoder' op the tree is 1 candidates deep but the draft proposes gamma = 2 per round; a draft's tree is gamma deep}}
spec.decoder @d target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>)

// -----

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<target>}
func.func private @m1(tensor<?x4xf32>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<mtp_module, depth = 1>}
// expected-error @below {{'spec.decoder' op trees of candidates are verified for Medusa heads and drafts; MTP modules propose one chain}}
spec.decoder @d target(@target) proposer(#spec.mtp<[@m1]>) verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>)

// -----

func.func @move(%cache: !spec.kv_cache<2x4x512x32xf32>, %rows: tensor<?xi64>,
                %to: index) -> !spec.kv_cache<2x4x512x32xf32> {
  // expected-error @below {{'spec.cache.move' op operand #1 must be 1D tensor of index values, but got 'tensor<?xi64>'}}
  %moved = spec.cache.move %cache from %rows to %to
      : !spec.kv_cache<2x4x512x32xf32>, tensor<?xi64>
  return %moved : !spec.kv_cache<2x4x512x32xf32>
}
