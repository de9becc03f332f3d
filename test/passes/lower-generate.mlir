// RUN: spec-opt %s --spec-lower-generate | FileCheck %s
// RUN: spec-opt %s --spec-lower-generate=decoder=sampled | FileCheck %s --check-prefix=ONE

// A target and a draft in the in-place cache form that spec-kv-cache-inplace
// gives, paired greedily with gamma = 2 and by rejection sampling.

func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 16, eos_token_id = 15>}
func.func private @draft(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<1x1x32x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x1x32x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<draft>}

spec.decoder @greedy target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// A target with two Medusa heads fused for every position.
func.func private @fused(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 2>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.fused_from = @target,
                spec.config = #spec.model_config<vocab_size = 16, eos_token_id = 15>}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
spec.decoder @medusa target(@fused) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy)

// A target returning its hidden states and a DeepSeek-style MTP module, both
// with in-place caches.
func.func private @trunk(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
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
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
spec.decoder @deepseek target(@trunk) proposer(#spec.mtp<[@module]>) verify(#spec.greedy)
spec.decoder @sampled target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.rejection<temperature = 0.8>)

// The sequence buffer has the smaller cache's capacity (32).
// CHECK-LABEL: func.func @greedy_generate(
// CHECK-SAME: %[[PROMPT:[^:]*]]: tensor<?xi64> {spec.name = "prompt"}, %[[MAX:[^:]*]]: index, %[[KEY:[^:]*]]: i64, %[[STOP:[^:]*]]: tensor<?xi64> {spec.name = "stop_tokens"})
// CHECK-SAME: -> (tensor<32xi64>, index, index, tensor<3xi64>, i64, i64)

// Prefill both caches with the prompt; the first token from the target.
// CHECK: %[[TC:.*]] = spec.cache.alloc : !spec.kv_cache<2x2x64x8xf32>
// CHECK: %[[T:.*]]:2 = call @target(%{{.*}}, %{{.*}}, %[[TC]], %{{.*}})
// CHECK: %[[DC:.*]] = spec.cache.alloc : !spec.kv_cache<1x1x32x8xf32>
// CHECK: %[[D:.*]]:2 = call @draft(%{{.*}}, %{{.*}}, %[[DC]], %{{.*}})
// CHECK: spec.propose %{{.*}} rule(#spec.greedy) : tensor<1x16xf32> -> tensor<1xi64>, tensor<1x16xf32>

// The last loop values count rounds by accepted proposals (0, 1 or 2), sum
// the nanoseconds spent proposing and verifying, and say whether a token
// committed so far ends the generation: EOS or a stop token, starting with
// the first one; a round sets it when any token it committed does.
// CHECK: %[[HIST0:.*]] = arith.constant dense<0> : tensor<3xi64>
// CHECK: arith.cmpi eq, %{{.*}}, %c15_i64 : i64
// CHECK: %[[FIRSTSTOP:.*]] = scf.for {{.*}} -> (i1) {
// CHECK: tensor.extract %[[STOP]]
// CHECK: %[[LOOP:.*]]:12 = scf.while {{.*}}, %{{.*}} = %[[HIST0]], %{{.*}} = %c0_i64{{.*}}, %{{.*}} = %c0_i64{{.*}}, %[[ENDED:.*]] = %[[FIRSTSTOP]])

// The loop runs while tokens are wanted, a round fits the context, and
// nothing has ended it.
// CHECK: arith.cmpi ult, %{{.*}}, %[[MAX]] : index
// CHECK: arith.constant 31 : index
// CHECK: arith.xori %[[ENDED]], %true : i1
// CHECK: scf.condition

// Propose: gamma draft forwards, each choosing with spec.propose, timed.
// CHECK: %[[START:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK: %[[PSTART:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK: %[[PROPOSE:.*]]:5 = scf.for %{{.*}} = %{{.*}} to %c2
// CHECK: func.call @draft(
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: scf.yield

// Verify: one target forward on the last token and the two proposals.
// CHECK: %[[V:.*]]:2 = spec.verify @target(
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[V]]#0[0, 0, 0] [1, 3, 16] [1, 1, 1] : tensor<?x?x16xf32> to tensor<3x16xf32>

// Accept, then commit: the accepted proposals and the next token go into the
// sequence; the lengths move to the accepted prefix.
// CHECK: %[[N:.*]], %[[NEXT:.*]] = spec.accept %[[PROPOSE]]#2, %[[ROWS]] rule(#spec.greedy) : tensor<2xi64>, tensor<3x16xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [%[[N]]] [1]
// CHECK: %[[NEWT:.*]] = arith.addi %{{.*}}, %[[N]] : index
// CHECK: tensor.insert %[[NEXT]] into %{{.*}}[%[[NEWT]]]
// CHECK: %[[NEWD:.*]] = arith.minui %[[NEWT]], %[[PROPOSE]]#1 : index
// CHECK: %[[END:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK: %[[TOTAL:.*]] = arith.subi %[[END]], %[[START]] : i64
// CHECK: %[[SAWEOS:.*]] = scf.for {{.*}} -> (i1)
// CHECK: arith.cmpi eq, %{{.*}}, %c15_i64{{.*}} : i64
// CHECK: tensor.extract %[[STOP]]
// CHECK: %[[COUNT:.*]] = tensor.extract %[[HIST:.*]][%[[N]]] : tensor<3xi64>
// CHECK: %[[INC:.*]] = arith.addi %[[COUNT]], %c1_i64 : i64
// CHECK: %[[NEWHIST:.*]] = tensor.insert %[[INC]] into %[[HIST]][%[[N]]] : tensor<3xi64>
// CHECK: %[[PROPOSING:.*]] = arith.addi %{{.*}}, %[[PTIME:.*]] : i64
// CHECK: %[[VTIME:.*]] = arith.subi %[[TOTAL]], %[[PTIME]] : i64
// CHECK: %[[VERIFYING:.*]] = arith.addi %{{.*}}, %[[VTIME]] : i64
// CHECK: scf.yield %{{.*}}, %[[V]]#1, %[[PROPOSE]]#0, %[[NEWT]], %[[NEWD]], {{.*}}, %[[NEWHIST]], %[[PROPOSING]], %[[VERIFYING]], %[[SAWEOS]]
// When fewer than gamma + 1 positions are left, the target alone fills the
// context: a second loop of one-token forwards from the first's state.
// CHECK: %[[TAIL:.*]]:8 = scf.while ({{.*}} = %[[LOOP]]#0, {{.*}} = %[[LOOP]]#1, {{.*}} = %[[LOOP]]#3, {{.*}} = %[[LOOP]]#5, {{.*}} = %[[LOOP]]#6, {{.*}} = %[[LOOP]]#7, {{.*}} = %[[LOOP]]#10, {{.*}} = %[[LOOP]]#11)
// CHECK: arith.constant 31 : index
// CHECK: scf.condition
// CHECK: } do {
// CHECK: func.call @target(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x?xi64>, tensor<?x?xi64>, !spec.kv_cache<2x2x64x8xf32>, index)
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: scf.yield
// CHECK: return %[[TAIL]]#0, %{{.*}}, %[[TAIL]]#4, %[[LOOP]]#8, %[[LOOP]]#9, %[[TAIL]]#6

// The Medusa decoder's target-only baseline runs the target the heads were
// fused into (spec.fused_from), so it does not compute the heads.
// CHECK-LABEL: func.func @medusa_target_only(
// CHECK: call @target(
// CHECK-NOT: @fused
// CHECK: func.call @target(
// CHECK-NOT: @fused

// Medusa: the fused forward verifies the last token and the heads'
// proposals; the next proposals come from the heads at the row of the last
// accepted token.
// CHECK-LABEL: func.func @medusa_generate(
// CHECK-SAME: -> (tensor<64xi64>, index, index, tensor<3xi64>, i64, i64)
// CHECK: %[[P:.*]]:4 = call @fused(
// CHECK: %[[W:.*]]:12 = scf.while
// CHECK: arith.constant 63 : index
// CHECK: } do {
// CHECK: %[[FV:.*]]:4 = spec.verify @fused(
// CHECK: %[[FROWS:.*]] = tensor.extract_slice %[[FV]]#0[0, 0, 0] [1, 3, 16] [1, 1, 1]
// CHECK: %[[FN:.*]], %[[FNEXT:.*]] = spec.accept %{{.*}}, %[[FROWS]] rule(#spec.greedy) : tensor<2xi64>, tensor<3x16xf32>
// CHECK: tensor.extract_slice %[[FV]]#1[0, %[[FN]], 0] [1, 1, 16] [1, 1, 1]
// CHECK: spec.propose
// CHECK: tensor.extract_slice %[[FV]]#2[0, %[[FN]], 0] [1, 1, 16] [1, 1, 1]
// CHECK: spec.propose
// CHECK: scf.yield %{{.*}}, %[[FV]]#3, %{{.*}}, %{{.*}}, %{{.*}}, %[[FNEXT]]

// MTP module: after each verification the module sees the new positions'
// hidden states (rows [0, n + 1) of the target's) and the tokens after them.
// CHECK-LABEL: func.func @deepseek_generate(
// CHECK: %[[PRE:.*]]:3 = call @trunk(
// CHECK: call @module(
// CHECK: scf.while
// CHECK: } do {
// CHECK: %[[DV:.*]]:3 = spec.verify @trunk(
// CHECK: %[[DN:.*]], %{{.*}} = spec.accept %{{.*}}, %{{.*}} rule(#spec.greedy) : tensor<1xi64>, tensor<2x16xf32>
// CHECK: %[[COUNT:.*]] = arith.addi %[[DN]], %{{.*}} : index
// CHECK: tensor.extract_slice %[[DV]]#1[0, 0, 0] [1, %[[COUNT]], 4] [1, 1, 1]
// CHECK: func.call @module(

// Rejection sampling: proposals carry q and keys; accept uses them.
// CHECK-LABEL: func.func @sampled_generate(
// CHECK: spec.propose %{{.*}} key(%{{.*}}) rule(#spec.rejection<temperature = 0.8>)
// CHECK: spec.accept %{{.*}}, %{{.*}} probs(%{{.*}} : tensor<2x16xf32>) key(%{{.*}}) rule(#spec.rejection<temperature = 0.8>)

// ONE-NOT: func.func @greedy_generate
// ONE: func.func @sampled_generate
