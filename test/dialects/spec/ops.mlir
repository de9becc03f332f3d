// RUN: spec-opt %s | spec-opt | FileCheck %s
// RUN: spec-opt %s --mlir-print-op-generic | spec-opt | FileCheck %s
// RUN: spec-opt %s --emit-bytecode | spec-opt | FileCheck %s

// Every op, attribute and type of the spec dialect, printed and parsed back.

// CHECK-LABEL: func.func private @target
// CHECK-SAME: spec.config = #spec.model_config<vocab_size = 259, bos_token_id = 256, eos_token_id = 257, pad_token_id = 258, max_context = 512, tokenizer = "sha256:0123abcd">
// CHECK-SAME: spec.role = #spec.role<target>
func.func private @target(tensor<?xi64>, !spec.kv_cache<2x4x512x32xf32>)
    -> (tensor<?x259xf32>, !spec.kv_cache<2x4x512x32xf32>)
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259,
                    bos_token_id = 256, eos_token_id = 257, pad_token_id = 258,
                    max_context = 512, tokenizer = "sha256:0123abcd">}

// What a model function's arguments and results are.
// CHECK-LABEL: func.func private @described
// CHECK-SAME: (tensor<?x?xi64> {spec.io = #spec.io<token_ids>}, tensor<?x2x?x4xf32> {spec.io = #spec.io<past_key, index = 0>}, index {spec.io = #spec.io<past_length>})
// CHECK-SAME: -> (tensor<?x?x8xf32> {spec.io = #spec.io<head_logits, index = 2>}, tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>})
func.func private @described(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                             tensor<?x2x?x4xf32> {spec.io = #spec.io<past_key, index = 0>},
                             index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x8xf32> {spec.io = #spec.io<head_logits, index = 2>},
        tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>})

// Optional config fields stay optional.
// CHECK-LABEL: func.func private @draft
// CHECK-SAME: spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:0123abcd">
// CHECK-SAME: spec.role = #spec.role<draft>
func.func private @draft(tensor<?xi64>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 259,
                    tokenizer = "sha256:0123abcd">}

// CHECK-LABEL: func.func private @head1
// CHECK-SAME: spec.role = #spec.role<medusa_head, depth = 1>
func.func private @head1(tensor<?x64xf32>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// CHECK-LABEL: func.func private @head2
// CHECK-SAME: spec.role = #spec.role<medusa_head, depth = 2>
func.func private @head2(tensor<?x64xf32>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}

// CHECK-LABEL: func.func private @mtp1
// CHECK-SAME: spec.role = #spec.role<mtp_module, depth = 1>
func.func private @mtp1(tensor<?x64xf32>, tensor<?xi64>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}

// CHECK: spec.decoder @draft_greedy target(@target) proposer(#spec.draft<@draft, gamma = 4>) verify(#spec.greedy)
spec.decoder @draft_greedy target(@target)
    proposer(#spec.draft<@draft, gamma = 4>) verify(#spec.greedy)

// The target alone (specc without --draft or --mtp-head).
// CHECK: spec.decoder @target_only target(@target) proposer(#spec.none) verify(#spec.greedy)
spec.decoder @target_only target(@target) proposer(#spec.none) verify(#spec.greedy)

// A draft that stops at its first token below 40% (off, 0, is elided).
// CHECK: spec.decoder @draft_stopping target(@target) proposer(#spec.draft<@draft, gamma = 8, min_confidence = 0.4>) verify(#spec.greedy)
spec.decoder @draft_stopping target(@target)
    proposer(#spec.draft<@draft, gamma = 8, min_confidence = 0.4>) verify(#spec.greedy)
// CHECK: spec.decoder @draft_not_stopping target(@target) proposer(#spec.draft<@draft, gamma = 8>) verify(#spec.greedy)
spec.decoder @draft_not_stopping target(@target)
    proposer(#spec.draft<@draft, gamma = 8, min_confidence = 0.0>) verify(#spec.greedy)

// Defaults of the sampling rule are elided when printed.
// CHECK: spec.decoder @draft_sampled target(@target) proposer(#spec.draft<@draft, gamma = 1>) verify(#spec.rejection<temperature = 0.8, top_k = 40, top_p = 0.95>) {acceptance_rate = 7.500000e-01 : f64}
spec.decoder @draft_sampled target(@target)
    proposer(#spec.draft<@draft, gamma = 1>)
    verify(#spec.rejection<temperature = 0.8, top_k = 40, top_p = 0.95>)
    {acceptance_rate = 0.75}

// CHECK: spec.decoder @medusa target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.rejection<>)
spec.decoder @medusa target(@target) proposer(#spec.mtp<[@head1, @head2]>)
    verify(#spec.rejection<temperature = 1.0, top_k = 0, top_p = 1.0>)

// CHECK: spec.decoder @deepseek target(@target) proposer(#spec.mtp<[@mtp1]>) verify(#spec.greedy)
spec.decoder @deepseek target(@target) proposer(#spec.mtp<[@mtp1]>)
    verify(#spec.greedy)

// Medusa heads verifying a tree of candidates: [[0], [1], [0, 0]].
// CHECK: spec.decoder @medusa_tree target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
spec.decoder @medusa_tree target(@target) proposer(#spec.mtp<[@head1, @head2]>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// The same tree, sampling.
// CHECK: spec.decoder @medusa_tree_sampling target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.rejection<temperature = 0.8>) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
spec.decoder @medusa_tree_sampling target(@target) proposer(#spec.mtp<[@head1, @head2]>)
    verify(#spec.rejection<temperature = 0.8>) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// A draft proposing a tree gamma deep: [[0], [1], [0, 0]].
// CHECK: spec.decoder @draft_tree target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
spec.decoder @draft_tree target(@target) proposer(#spec.draft<@draft, gamma = 2>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// A module chained: it runs again at depths 2 and 3.
// CHECK: spec.decoder @deepseek_chain target(@target) proposer(#spec.mtp<[@mtp1, @mtp1, @mtp1]>) verify(#spec.greedy)
spec.decoder @deepseek_chain target(@target)
    proposer(#spec.mtp<[@mtp1, @mtp1, @mtp1]>) verify(#spec.greedy)

// CHECK-LABEL: func.func @move
// CHECK: spec.cache.move %{{.*}} from %{{.*}} to %{{.*}} : !spec.kv_cache<2x4x512x32xf32>, tensor<?xindex>
func.func @move(%cache: !spec.kv_cache<2x4x512x32xf32>, %rows: tensor<?xindex>,
                %to: index) -> !spec.kv_cache<2x4x512x32xf32> {
  %moved = spec.cache.move %cache from %rows to %to
      : !spec.kv_cache<2x4x512x32xf32>, tensor<?xindex>
  return %moved : !spec.kv_cache<2x4x512x32xf32>
}

// CHECK-LABEL: func.func @step
func.func @step(%last: tensor<1xi64>, %head_logits: tensor<4x259xf32>,
                %key: i64) -> (index, i64, index) {
  // CHECK: %[[CACHE:.*]] = spec.cache.alloc : !spec.kv_cache<2x4x512x32xf32>
  %cache = spec.cache.alloc : !spec.kv_cache<2x4x512x32xf32>
  // CHECK: spec.propose %{{.*}} rule(#spec.greedy) : tensor<4x259xf32> -> tensor<4xi64>, tensor<4x259xf32>
  %proposals, %q = spec.propose %head_logits rule(#spec.greedy)
      : tensor<4x259xf32> -> tensor<4xi64>, tensor<4x259xf32>
  // CHECK: spec.propose %{{.*}} key(%{{.*}}) rule(#spec.rejection<temperature = 0.7>) : tensor<4x259xf32> -> tensor<4xi64>, tensor<4x259xf32>
  %sampled, %q2 = spec.propose %head_logits key(%key)
      rule(#spec.rejection<temperature = 0.7>)
      : tensor<4x259xf32> -> tensor<4xi64>, tensor<4x259xf32>
  %candidates = tensor.concat dim(0) %last, %proposals
      : (tensor<1xi64>, tensor<4xi64>) -> tensor<5xi64>
  %dyn = tensor.cast %candidates : tensor<5xi64> to tensor<?xi64>
  // CHECK: %[[VERIFY:.*]]:2 = spec.verify @target(%{{.*}}, %[[CACHE]]) : (tensor<?xi64>, !spec.kv_cache<2x4x512x32xf32>) -> (tensor<?x259xf32>, !spec.kv_cache<2x4x512x32xf32>)
  %logits, %verified = spec.verify @target(%dyn, %cache)
      : (tensor<?xi64>, !spec.kv_cache<2x4x512x32xf32>)
      -> (tensor<?x259xf32>, !spec.kv_cache<2x4x512x32xf32>)
  %rows = tensor.cast %logits : tensor<?x259xf32> to tensor<5x259xf32>
  // CHECK: %[[N:.*]], %[[NEXT:.*]] = spec.accept %{{.*}}, %{{.*}} rule(#spec.greedy) : tensor<4xi64>, tensor<5x259xf32>
  %n, %next = spec.accept %proposals, %rows rule(#spec.greedy)
      : tensor<4xi64>, tensor<5x259xf32>
  // CHECK: spec.accept %{{.*}}, %{{.*}} probs(%{{.*}} : tensor<4x259xf32>) key(%{{.*}}) rule(#spec.rejection<temperature = 0.7>) : tensor<4xi64>, tensor<5x259xf32>
  %n2, %next2 = spec.accept %sampled, %rows probs(%q2 : tensor<4x259xf32>)
      key(%key) rule(#spec.rejection<temperature = 0.7>)
      : tensor<4xi64>, tensor<5x259xf32>
  // CHECK: %[[KEEP:.*]] = arith.addi %[[N]], %{{.*}} : index
  %c1 = arith.constant 1 : index
  %keep = arith.addi %n, %c1 : index
  // CHECK: %[[COMMITTED:.*]] = spec.cache.commit %[[VERIFY]]#1, %[[KEEP]] : !spec.kv_cache<2x4x512x32xf32>
  %committed = spec.cache.commit %verified, %keep
      : !spec.kv_cache<2x4x512x32xf32>
  // CHECK: spec.cache.length %[[COMMITTED]] : !spec.kv_cache<2x4x512x32xf32>
  %length = spec.cache.length %committed : !spec.kv_cache<2x4x512x32xf32>
  return %n, %next, %length : index, i64, index
}

// CHECK-LABEL: func.func @cache_ops
func.func @cache_ops(%k: tensor<2x4x?x32xf32>, %v: tensor<2x4x?x32xf32>)
    -> (tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>) {
  %c0 = spec.cache.alloc : !spec.kv_cache<2x4x512x32xf32>
  // CHECK: %[[A:.*]] = spec.cache.append %{{.*}}, %{{.*}}, %{{.*}} : !spec.kv_cache<2x4x512x32xf32>, tensor<2x4x?x32xf32>
  %c1 = spec.cache.append %c0, %k, %v
      : !spec.kv_cache<2x4x512x32xf32>, tensor<2x4x?x32xf32>
  // CHECK: %[[R:.*]] = spec.cache.rollback %[[A]] : !spec.kv_cache<2x4x512x32xf32>
  %c2 = spec.cache.rollback %c1 : !spec.kv_cache<2x4x512x32xf32>
  // CHECK: spec.cache.view %[[R]] : !spec.kv_cache<2x4x512x32xf32> -> tensor<2x4x?x32xf32>
  %keys, %values = spec.cache.view %c2
      : !spec.kv_cache<2x4x512x32xf32> -> tensor<2x4x?x32xf32>
  return %keys, %values : tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>
}

// Half-precision caches.
// CHECK-LABEL: func.func @bf16_cache
// CHECK-SAME: !spec.kv_cache<1x1x16x8xbf16>
func.func @bf16_cache(%c: !spec.kv_cache<1x1x16x8xbf16>)
    -> !spec.kv_cache<1x1x16x8xbf16> {
  return %c : !spec.kv_cache<1x1x16x8xbf16>
}

// In-place access inside a model function, at an explicit position.
// CHECK-LABEL: func.func @layer_access
func.func @layer_access(%c0: !spec.kv_cache<4x2x512x32xf32>, %pos: index,
                        %k: tensor<1x2x?x32xf32>, %v: tensor<?x2x?x32xf32>,
                        %n: index) -> tensor<1x2x?x32xf32> {
  // CHECK: %[[K:.*]] = spec.cache.write %{{.*}} keys layer 0 at %{{.*}}, %{{.*}} : !spec.kv_cache<4x2x512x32xf32>, tensor<1x2x?x32xf32>
  %c1 = spec.cache.write %c0 keys layer 0 at %pos, %k
      : !spec.kv_cache<4x2x512x32xf32>, tensor<1x2x?x32xf32>
  // CHECK: %[[V:.*]] = spec.cache.write %[[K]] values layer 3 at %{{.*}}, %{{.*}} : !spec.kv_cache<4x2x512x32xf32>, tensor<?x2x?x32xf32>
  %c2 = spec.cache.write %c1 values layer 3 at %pos, %v
      : !spec.kv_cache<4x2x512x32xf32>, tensor<?x2x?x32xf32>
  // CHECK: spec.cache.read %[[V]] keys layer 0 length %{{.*}} : !spec.kv_cache<4x2x512x32xf32> -> tensor<1x2x?x32xf32>
  %keys = spec.cache.read %c2 keys layer 0 length %n
      : !spec.kv_cache<4x2x512x32xf32> -> tensor<1x2x?x32xf32>
  return %keys : tensor<1x2x?x32xf32>
}

// A cache of 8 slots, written and read a batch of sequences at a time.
// CHECK-LABEL: func.func @slot_access
func.func @slot_access(%c0: !spec.kv_cache<4x8x2x512x32xf32>, %first: index,
                       %lengths: tensor<?xi64>, %k: tensor<?x2x?x32xf32>,
                       %count: index, %n: index) -> tensor<?x2x?x32xf32> {
  // CHECK: %[[K:.*]] = spec.cache.write_slots %{{.*}} keys layer 1 slots %{{.*}} lengths %{{.*}}, %{{.*}} : !spec.kv_cache<4x8x2x512x32xf32>, tensor<?xi64>, tensor<?x2x?x32xf32>
  %c1 = spec.cache.write_slots %c0 keys layer 1 slots %first lengths %lengths, %k
      : !spec.kv_cache<4x8x2x512x32xf32>, tensor<?xi64>, tensor<?x2x?x32xf32>
  // CHECK: spec.cache.read_slots %[[K]] keys layer 1 slots %{{.*}} count %{{.*}} length %{{.*}} : !spec.kv_cache<4x8x2x512x32xf32> -> tensor<?x2x?x32xf32>
  %keys = spec.cache.read_slots %c1 keys layer 1 slots %first count %count length %n
      : !spec.kv_cache<4x8x2x512x32xf32> -> tensor<?x2x?x32xf32>
  return %keys : tensor<?x2x?x32xf32>
}
