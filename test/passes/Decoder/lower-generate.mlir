// RUN: spec-opt %s --spec-lower-generate -split-input-file \
// RUN:   | FileCheck %s --implicit-check-not=spec.verify
// RUN: spec-opt %s --spec-lower-generate=decoder=sampled -split-input-file \
// RUN:   | FileCheck %s --check-prefix=ONE

// A target and a draft in the in-place cache form that spec-kv-cache-inplace
// gives, paired greedily with gamma = 2.

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

// The target-only baseline: one target forward per token, no second loop.
// CHECK-LABEL: func.func @greedy_target_only(
// CHECK-SAME: -> (tensor<32xi64>, index, index, tensor<1xi64>, i64, i64)
// CHECK: call @target(
// CHECK: scf.while
// CHECK: } do {
// CHECK: func.call @target(
// CHECK-NOT: scf.while
// CHECK: return

// The sequence buffer has the smaller cache's capacity (32).
// CHECK-LABEL: func.func @greedy_generate(
// CHECK-SAME: %[[PROMPT:[^:]*]]: tensor<?xi64> {spec.name = "prompt"}, %[[MAX:[^:]*]]: index, %[[KEY:[^:]*]]: i64, %[[STOP:[^:]*]]: tensor<?xi64> {spec.name = "stop_tokens"})
// CHECK-SAME: -> (tensor<32xi64>, index, index, tensor<3xi64>, i64, i64)
// CHECK-SAME: attributes {llvm.emit_c_interface, spec.context_capacity = 32 : i64}

// Prefill both caches with the prompt; the first token from the target.
// CHECK: %[[TC:.*]] = spec.cache.alloc : !spec.kv_cache<2x2x64x8xf32>
// CHECK: %[[T:.*]]:2 = call @target(%{{.*}}, %{{.*}}, %[[TC]], %{{.*}})
// CHECK-NEXT: %[[DC:.*]] = spec.cache.alloc : !spec.kv_cache<1x1x32x8xf32>
// CHECK: %[[D:.*]]:2 = call @draft(%{{.*}}, %{{.*}}, %[[DC]], %{{.*}})
// CHECK: spec.propose %{{.*}} rule(#spec.greedy) : tensor<1x16xf32> -> tensor<1xi64>, tensor<1x16xf32>

// The loop's values after the state and the draft's: rounds counted by
// accepted proposals (0, 1 or 2), nanoseconds proposing and verifying, and
// whether a committed token ended the generation: EOS, a stop token or the
// runtime's answer that the run is cancelled, starting with the first one.
// CHECK: %[[HIST0:.*]] = arith.constant dense<0> : tensor<3xi64>
// CHECK: %[[FIRSTCANCEL:.*]] = call @specrt_on_token(%{{.*}}) : (i64) -> i1
// CHECK: arith.cmpi eq, %{{.*}}, %c15_i64 : i64
// CHECK: %[[FIRSTSCAN:.*]] = scf.for {{.*}} -> (i1) {
// CHECK-NEXT: tensor.extract %[[STOP]]
// CHECK: %[[FIRSTSTOP:.*]] = arith.ori %[[FIRSTCANCEL]], %[[FIRSTSCAN]] : i1
// CHECK: %[[LOOP:[^:]*]]:{{[0-9]+}} = scf.while ({{.*}} = %{{.*}}, {{.*}} = %[[T]]#1, {{.*}} = %[[D]]#1, {{.*}} = %[[HIST0]], {{.*}} = %c0_i64{{.*}}, {{.*}} = %c0_i64{{.*}}, {{.*}} = %[[FIRSTSTOP]])

// The loop runs while tokens are wanted, a round fits the context, and
// nothing has ended it.
// CHECK-NEXT: arith.cmpi ult, %{{.*}}, %[[MAX]] : index
// CHECK-NEXT: arith.constant 31 : index
// CHECK-NEXT: arith.constant 3 : index
// CHECK: arith.xori
// CHECK: scf.condition

// A round: the state (sequence, target cache, length, generated, forwards,
// last token), the draft's (cache, cached positions), the counters.
// CHECK: } do {
// CHECK-NEXT: ^bb0(%[[SEQ:[^:]*]]: tensor<32xi64>, %[[CACHE:[^:]*]]: !spec.kv_cache<2x2x64x8xf32>, %[[LEN:[^:]*]]: index, %[[GEN:[^:]*]]: index, %[[STEPS:[^:]*]]: index, %[[LAST:[^:]*]]: i64, %[[DCACHE:[^:]*]]: !spec.kv_cache<1x1x32x8xf32>, %[[CACHED:[^:]*]]: index, %[[HIST:[^:]*]]: tensor<3xi64>, %[[PNS:[^:]*]]: i64, %[[VNS:[^:]*]]: i64, %[[ENDED:[^:]*]]: i1):
// CHECK-NEXT: %[[START:.*]] = func.call @specrt_clock_ns() : () -> i64

// Propose: gamma draft forwards, each choosing with spec.propose, timed.
// CHECK: %[[PSTART:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK: %[[PROPOSE:[^:]*]]:{{[0-9]+}} = scf.for %[[K:.*]] = %{{.*}} to %c2 step %{{.*}} iter_args(%{{.*}} = %[[DCACHE]], %{{.*}} = %[[CACHED]], %{{.*}}, %{{.*}}, %{{.*}} = %[[LAST]])
// CHECK-NEXT: %[[END:.*]] = arith.addi %[[LEN]], %[[K]] : index
// CHECK: tensor.insert %{{.*}} into %[[SEQ]][%[[END]]]
// CHECK: func.call @draft(
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[K]]] : tensor<2xi64>
// CHECK-NEXT: tensor.insert_slice %{{.*}} into %{{.*}}[%[[K]], 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<2x16xf32>
// CHECK-NEXT: arith.addi
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[PEND:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK-NEXT: %[[PTIME:.*]] = arith.subi %[[PEND]], %[[PSTART]] : i64

// Verify: one target forward on the last token and the two proposals.
// CHECK: tensor.from_elements %[[LAST]], %[[LAST]], %[[LAST]] : tensor<3xi64>
// CHECK: %[[V:[^:]*]]:2 = spec.verify @target(%{{.*}}, %{{.*}}, %[[CACHE]], %[[LEN]])
// CHECK-NEXT: %[[ROWS:.*]] = tensor.extract_slice %[[V]]#0[0, 0, 0] [1, 3, 16] [1, 1, 1] : tensor<?x?x16xf32> to tensor<3x16xf32>

// Accept, then commit: the accepted proposals and the next token go into the
// sequence; the lengths move to the accepted prefix.
// CHECK-NEXT: %[[N:.*]], %[[NEXT:.*]] = spec.accept %[[PROPOSE]]#2, %[[ROWS]] rule(#spec.greedy) : tensor<2xi64>, tensor<3x16xf32>
// CHECK-NEXT: %[[ACC:.*]] = tensor.extract_slice %[[PROPOSE]]#2[0] [%[[N]]] [1]
// CHECK-NEXT: arith.constant 1 : index
// CHECK-NEXT: %[[AFTER:.*]] = arith.addi %[[LEN]], %{{.*}} : index
// CHECK-NEXT: %[[WITH:.*]] = tensor.insert_slice %[[ACC]] into %[[SEQ]][%[[AFTER]]] [%[[N]]] [1]
// CHECK-NEXT: %[[NEWT:.*]] = arith.addi %[[AFTER]], %[[N]] : index
// CHECK-NEXT: %[[NEWSEQ:.*]] = tensor.insert %[[NEXT]] into %[[WITH]][%[[NEWT]]]
// CHECK-NEXT: %[[NEWD:.*]] = arith.minui %[[NEWT]], %[[PROPOSE]]#1 : index
// CHECK: %[[NEWGEN:.*]] = arith.addi %[[GEN]], %{{.*}} : index
// CHECK: %[[NEWSTEPS:.*]] = arith.addi %[[STEPS]], %{{.*}} : index

// The counters: time, then any committed token that ends the generation
// (each committed token also goes to the runtime's streaming hook), the
// histogram, the time split.
// CHECK-NEXT: %[[RNDEND:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK-NEXT: %[[TOTAL:.*]] = arith.subi %[[RNDEND]], %[[START]] : i64
// CHECK: %[[SAWEOS:.*]] = scf.for {{.*}} -> (i1)
// CHECK: %[[COMMITTED:.*]] = tensor.extract %[[NEWSEQ]][%{{.*}}] : tensor<32xi64>
// CHECK-NEXT: %[[CANCELLED:.*]] = func.call @specrt_on_token(%[[COMMITTED]]) : (i64) -> i1
// CHECK: arith.cmpi eq, %[[COMMITTED]], %c15_i64{{.*}} : i64
// CHECK: tensor.extract %[[STOP]]
// CHECK: arith.ori %[[CANCELLED]], %{{.*}} : i1
// CHECK: %[[COUNT:.*]] = tensor.extract %[[HIST]][%[[N]]] : tensor<3xi64>
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: %[[INC:.*]] = arith.addi %[[COUNT]], %{{.*}} : i64
// CHECK-NEXT: %[[NEWHIST:.*]] = tensor.insert %[[INC]] into %[[HIST]][%[[N]]] : tensor<3xi64>
// CHECK-NEXT: %[[PROPOSING:.*]] = arith.addi %[[PNS]], %[[PTIME]] : i64
// CHECK-NEXT: %[[VTIME:.*]] = arith.subi %[[TOTAL]], %[[PTIME]] : i64
// CHECK-NEXT: %[[VERIFYING:.*]] = arith.addi %[[VNS]], %[[VTIME]] : i64
// CHECK-NEXT: scf.yield %[[NEWSEQ]], %[[V]]#1, %[[NEWT]], %[[NEWGEN]], %[[NEWSTEPS]], %[[NEXT]], %[[PROPOSE]]#0, %[[NEWD]], %[[NEWHIST]], %[[PROPOSING]], %[[VERIFYING]], %[[SAWEOS]]
// CHECK-NEXT: }

// When fewer than gamma + 1 positions are left, the target alone fills the
// context: a second loop of one-token forwards from the first's state (and
// its verifying time and stop flag).
// CHECK-NEXT: %[[TAIL:[^:]*]]:{{[0-9]+}} = scf.while ({{.*}} = %[[LOOP]]#0, {{.*}} = %[[LOOP]]#1, {{.*}} = %[[LOOP]]#2, {{.*}} = %[[LOOP]]#3, {{.*}} = %[[LOOP]]#4, {{.*}} = %[[LOOP]]#5, {{.*}} = %[[LOOP]]#10, {{.*}} = %[[LOOP]]#11)
// CHECK: arith.constant 31 : index
// CHECK: scf.condition
// CHECK: } do {
// CHECK: func.call @target(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x?xi64>, tensor<?x?xi64>, !spec.kv_cache<2x2x64x8xf32>, index)
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: scf.yield
// CHECK: return %[[TAIL]]#0, %{{.*}}, %[[TAIL]]#4, %[[LOOP]]#8, %[[LOOP]]#9, %[[TAIL]]#6

// -----

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

// The Medusa decoder's target-only baseline runs the target the heads were
// fused into (spec.fused_from), so it does not compute the heads.
// CHECK-LABEL: func.func @medusa_target_only(
// CHECK-NOT: @fused
// CHECK: call @target(
// CHECK-NOT: @fused
// CHECK: func.call @target(
// CHECK-NOT: @fused
// CHECK: return

// Medusa: the fused forward verifies the last token and the heads'
// proposals; the next proposals come from the heads at the row of the last
// accepted token. The loop carries the pending proposals and their q.
// CHECK-LABEL: func.func @medusa_generate(
// CHECK-SAME: -> (tensor<64xi64>, index, index, tensor<3xi64>, i64, i64)
// CHECK: %[[P:[^:]*]]:4 = call @fused(
// CHECK: scf.while
// CHECK: arith.constant 63 : index
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[^:]*}}: tensor<64xi64>, %[[CACHE:[^:]*]]: !spec.kv_cache<2x2x64x8xf32>, %[[LEN:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: i64, %[[PROPOSALS:[^:]*]]: tensor<2xi64>, %{{[^:]*}}: tensor<2x16xf32>,
// CHECK: %[[FV:[^:]*]]:4 = spec.verify @fused(%{{.*}}, %{{.*}}, %[[CACHE]], %[[LEN]])
// CHECK-NEXT: %[[FROWS:.*]] = tensor.extract_slice %[[FV]]#0[0, 0, 0] [1, 3, 16] [1, 1, 1]
// CHECK-NEXT: %[[FN:.*]], %[[FNEXT:.*]] = spec.accept %[[PROPOSALS]], %[[FROWS]] rule(#spec.greedy) : tensor<2xi64>, tensor<3x16xf32>
// CHECK: tensor.extract_slice %[[FV]]#1[0, %[[FN]], 0] [1, 1, 16] [1, 1, 1]
// CHECK-NEXT: spec.propose
// CHECK: tensor.extract_slice %[[FV]]#2[0, %[[FN]], 0] [1, 1, 16] [1, 1, 1]
// CHECK-NEXT: spec.propose
// CHECK: scf.yield %{{.*}}, %[[FV]]#3, %{{.*}}, %{{.*}}, %{{.*}}, %[[FNEXT]]

// -----

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

// MTP module: after each verification the module sees the new positions'
// hidden states (rows [0, n + 1) of the target's) and the tokens after them,
// with its own cache.
// CHECK-LABEL: func.func @deepseek_generate(
// CHECK: %[[PRE:[^:]*]]:3 = call @trunk(
// CHECK: %[[MC:.*]] = spec.cache.alloc : !spec.kv_cache<1x2x64x8xf32>
// CHECK: tensor.extract_slice %[[PRE]]#1[0, 0, 0] [1, %{{.*}}, 4] [1, 1, 1]
// CHECK: call @module(%{{.*}}, %{{.*}}, %{{.*}}, %[[MC]], %{{.*}})
// CHECK: scf.while
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[^:]*}}: tensor<64xi64>, %{{[^:]*}}: !spec.kv_cache<2x2x64x8xf32>, %[[LEN:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: i64, %[[MCACHE:[^:]*]]: !spec.kv_cache<1x2x64x8xf32>, %[[PROPOSAL:[^:]*]]: tensor<1xi64>, %{{[^:]*}}: tensor<1x16xf32>,
// CHECK: %[[DV:[^:]*]]:3 = spec.verify @trunk(
// CHECK-NEXT: %[[DROWS:.*]] = tensor.extract_slice %[[DV]]#0[0, 0, 0] [1, 2, 16] [1, 1, 1]
// CHECK-NEXT: %[[DN:.*]], %[[NEXT:.*]] = spec.accept %[[PROPOSAL]], %[[DROWS]] rule(#spec.greedy) : tensor<1xi64>, tensor<2x16xf32>
// CHECK: %[[END:.*]] = arith.addi %{{.*}}, %[[DN]] : index
// CHECK-NEXT: tensor.insert %[[NEXT]] into %{{.*}}[%[[END]]] : tensor<64xi64>
// CHECK-NEXT: %[[MSTART:.*]] = func.call @specrt_clock_ns() : () -> i64
// CHECK: %[[COUNT:.*]] = arith.subi %[[END]], %[[LEN]] : index
// CHECK-NEXT: tensor.extract_slice %[[DV]]#1[0, 0, 0] [1, %[[COUNT]], 4] [1, 1, 1]
// CHECK: func.call @module(%{{.*}}, %{{.*}}, %{{.*}}, %[[MCACHE]], %[[LEN]])
// CHECK: spec.propose
// CHECK: func.call @specrt_clock_ns() : () -> i64
// CHECK: scf.yield

// The module chained to depth 2: depth 2 has its own cache and reads depth
// 1's hidden states from a history by position. At the prompt both depths run
// on every position, depth 2 fed depth 1's proposal after the last token.
spec.decoder @chain target(@trunk) proposer(#spec.mtp<[@module, @module]>) verify(#spec.greedy)

// CHECK-LABEL: func.func @chain_generate(
// CHECK: %[[C1:.*]] = spec.cache.alloc : !spec.kv_cache<1x2x64x8xf32>
// CHECK: %[[HISTORY:.*]] = tensor.empty() : tensor<1x64x4xf32>
// CHECK: %[[C2:.*]] = spec.cache.alloc : !spec.kv_cache<1x2x64x8xf32>
// CHECK: %[[SEQ:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0] [64] [1] : tensor<64xi64> into tensor<66xi64>
// CHECK: %[[D1:.*]]:3 = call @module(%{{.*}}, %{{.*}}, %{{.*}}, %[[C1]], %{{.*}})
// CHECK: %[[H1:.*]] = tensor.insert_slice %{{.*}} into %[[HISTORY]][0, 0, 0] [1, %{{.*}}, 4] [1, 1, 1] : tensor<1x?x4xf32> into tensor<1x64x4xf32>
// CHECK: %[[SEQ1:.*]] = tensor.insert %{{.*}} into %[[SEQ]][%{{.*}}] : tensor<66xi64>
// CHECK: tensor.extract_slice %[[H1]][0, 0, 0] [1, %{{.*}}, 4] [1, 1, 1]
// CHECK: tensor.extract_slice %[[SEQ1]][%c2{{.*}}] [%{{.*}}] [1] : tensor<66xi64> to tensor<?xi64>
// CHECK: call @module(%{{.*}}, %{{.*}}, %{{.*}}, %[[C2]], %{{.*}})
// CHECK: scf.while
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[^:]*}}: tensor<64xi64>, %{{[^:]*}}: !spec.kv_cache<2x2x64x8xf32>, %[[LEN:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: i64, %[[MC1:[^:]*]]: !spec.kv_cache<1x2x64x8xf32>, %[[MC2:[^:]*]]: !spec.kv_cache<1x2x64x8xf32>, %[[HIST:[^:]*]]: tensor<1x64x4xf32>, %[[PROPOSALS:[^:]*]]: tensor<2xi64>, %{{[^:]*}}: tensor<2x16xf32>,
// CHECK: %[[DV:[^:]*]]:3 = spec.verify @trunk(
// CHECK: %[[DN:.*]], %{{.*}} = spec.accept %[[PROPOSALS]], %{{.*}} rule(#spec.greedy) : tensor<2xi64>, tensor<3x16xf32>
// CHECK: %[[END:.*]] = arith.addi %{{.*}}, %[[DN]] : index
// Depth 2 runs again from the first position fed a rejected proposal.
// CHECK: %[[BACK:.*]] = arith.subi %[[END]], %c2{{.*}} : index
// CHECK-NEXT: %[[NONNEG:.*]] = arith.maxsi %[[BACK]], %c0{{.*}} : index
// CHECK-NEXT: %[[START2:.*]] = arith.minsi %[[NONNEG]], %[[LEN]] : index
// CHECK: %[[COUNT1:.*]] = arith.subi %[[END]], %[[LEN]] : index
// CHECK: func.call @module(%{{.*}}, %{{.*}}, %{{.*}}, %[[MC1]], %[[LEN]])
// CHECK: %[[NEWHIST:.*]] = tensor.insert_slice %{{.*}} into %[[HIST]][0, %[[LEN]], 0] [1, %[[COUNT1]], 4] [1, 1, 1]
// CHECK: %[[COUNT2:.*]] = arith.subi %[[END]], %[[START2]] : index
// CHECK-NEXT: tensor.extract_slice %[[NEWHIST]][0, %[[START2]], 0] [1, %[[COUNT2]], 4] [1, 1, 1]
// CHECK: func.call @module(%{{.*}}, %{{.*}}, %{{.*}}, %[[MC2]], %[[START2]])
// CHECK: spec.propose
// CHECK: scf.yield

// -----

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

spec.decoder @other target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)
spec.decoder @sampled target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.rejection<temperature = 0.8>)

// CHECK-LABEL: func.func @other_generate(
// CHECK: spec.verify @target(

// Rejection sampling: proposals carry q and keys; accept uses them, with the
// round's last key.
// CHECK-LABEL: func.func @sampled_generate(
// CHECK: spec.propose %{{.*}} key(%{{.*}}) rule(#spec.rejection<temperature = 0.8>)
// CHECK: spec.verify @target(
// CHECK: %[[LASTKEY:.*]] = arith.addi %{{.*}}, %c1048575_i64 : i64
// CHECK-NEXT: spec.accept %{{.*}}, %{{.*}} probs(%{{.*}} : tensor<2x16xf32>) key(%[[LASTKEY]]) rule(#spec.rejection<temperature = 0.8>)

// `decoder` lowers one decoder of several.
// ONE-NOT: func.func @{{.*}}_generate
// ONE: func.func @sampled_generate
// ONE-NOT: func.func @{{.*}}_generate

// -----

// Medusa heads verifying a tree ([[0], [1], [0, 0]]) with a target that takes
// the tree mask (spec-tree-attention).
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @fused(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>},
                         tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 2>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.fused_from = @target}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
spec.decoder @tree target(@fused) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// The prefill runs as a chain: its tree mask is the causal one. The first
// candidates are head 1's best two tokens (the argmax, then the argmax with
// it masked out) and head 2's best. The loop counts rounds by the tree row
// they end at (4 rows), not by accepted length.
// CHECK-LABEL: func.func @tree_generate(
// CHECK-SAME: -> (tensor<64xi64>, index, index, tensor<4xi64>, i64, i64)
// CHECK: %[[CAUSAL:.*]] = tensor.generate %[[N:.*]], %[[N]] {
// CHECK-NEXT: ^bb0(%[[I:[^:]*]]: index, %[[J:[^:]*]]: index):
// CHECK-NEXT: %[[SEES:.*]] = arith.cmpi ule, %[[J]], %[[I]] : index
// CHECK-NEXT: tensor.yield %[[SEES]] : i1
// CHECK: %[[PRE:.*]]:4 = call @fused(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CAUSAL]])
// CHECK: %[[H1:.*]] = tensor.extract_slice %[[PRE]]#1
// CHECK-NEXT: %[[BEST:.*]], %{{.*}} = spec.propose %[[H1]] rule(#spec.greedy) : tensor<1x16xf32> -> tensor<1xi64>, tensor<1x16xf32>
// CHECK: %[[MASKED:.*]] = tensor.insert %{{.*}} into %[[H1]][%{{.*}}, %{{.*}}] : tensor<1x16xf32>
// CHECK-NEXT: spec.propose %[[MASKED]] rule(#spec.greedy)
// CHECK: tensor.extract_slice %[[PRE]]#2
// CHECK-NEXT: spec.propose
// CHECK: tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xi64>
// CHECK: scf.while
// A round: one forward over [last, candidates] at positions length + depth,
// with the tree's mask; the target's picks walk down the tree.
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[^:]*}}: tensor<64xi64>, %[[CACHE:[^:]*]]: !spec.kv_cache<2x2x64x8xf32>, %[[LEN:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: i64, %[[CANDIDATES:[^:]*]]: tensor<3xi64>, %[[ROUNDS:[^:]*]]: tensor<4xi64>,
// CHECK: arith.constant dense<[0, 1, 1, 2]> : tensor<4xi64>
// CHECK: %[[TREE:.*]] = arith.constant dense<{{\[}}[true, false, false, false], [true, true, false, false], [true, false, true, false], [true, true, false, true]]> : tensor<4x4xi1>
// CHECK: %[[TREEARG:.*]] = tensor.cast %[[TREE]] : tensor<4x4xi1> to tensor<?x?xi1>
// CHECK: %[[V:.*]]:4 = spec.verify @fused(%{{.*}}, %{{.*}}, %[[CACHE]], %[[LEN]], %[[TREEARG]])
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[V]]#0[0, 0, 0] [1, 4, 16] [1, 1, 1]
// CHECK-NEXT: %[[PICKS:.*]], %{{.*}} = spec.propose %[[ROWS]] rule(#spec.greedy) : tensor<4x16xf32> -> tensor<4xi64>, tensor<4x16xf32>
// CHECK: %[[ROOTPICK:.*]] = tensor.extract %[[PICKS]][%c0{{.*}}] : tensor<4xi64>
// CHECK: %[[C1:.*]] = tensor.extract %[[CANDIDATES]][%c0{{.*}}] : tensor<3xi64>
// CHECK-NEXT: arith.cmpi eq, %[[C1]], %[[ROOTPICK]] : i64
// CHECK: %[[C2:.*]] = tensor.extract %[[CANDIDATES]][%c1{{.*}}] : tensor<3xi64>
// CHECK-NEXT: arith.cmpi eq, %[[C2]], %[[ROOTPICK]] : i64
// CHECK: %[[DEPTH1:.*]] = arith.select %{{.*}}, %c2{{.*}}, %{{.*}} : index
// CHECK: %[[PICK1:.*]] = tensor.extract %[[PICKS]][%[[DEPTH1]]] : tensor<4xi64>
// CHECK: arith.cmpi eq, %[[DEPTH1]], %c1{{.*}} : index
// CHECK: %[[C3:.*]] = tensor.extract %[[CANDIDATES]][%c2{{.*}}] : tensor<3xi64>
// CHECK-NEXT: arith.cmpi eq, %[[C3]], %[[PICK1]] : i64
// CHECK: %[[FINAL:.*]] = arith.select %{{.*}}, %c3{{.*}}, %[[DEPTH1]] : index
// The accepted path's rows move next to the prefix.
// CHECK: %[[MOVED:.*]] = spec.cache.move %[[V]]#3 from %{{.*}} to %{{.*}} : !spec.kv_cache<2x2x64x8xf32>, tensor<?xindex>
// CHECK: %[[COUNTED:.*]] = tensor.insert %{{.*}} into %[[ROUNDS]][%[[FINAL]]] : tensor<4xi64>
// CHECK: scf.yield %{{.*}}, %[[MOVED]], {{.*}}, %[[COUNTED]],

// -----

// The same tree, sampling: the target's pick at every row is drawn (each
// row with its own counter of the round's key); the candidates stay the
// heads' most likely tokens.
func.func private @fused(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>},
                         tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 2>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
spec.decoder @tree_sampled target(@fused) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.rejection<temperature = 0.5>) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// CHECK-LABEL: func.func @tree_sampled_generate(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi64> {spec.name = "prompt"}, %{{[^:]*}}: index, %[[KEY:[^:]*]]: i64,
// CHECK: spec.propose %{{.*}} key(%[[KEY]]) rule(#spec.rejection<temperature = 0.5>) : tensor<1x16xf32>
// CHECK: spec.propose %{{.*}} rule(#spec.greedy) : tensor<1x16xf32>
// CHECK: scf.while
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[^:]*}}: tensor<64xi64>, %{{[^:]*}}: !spec.kv_cache<2x2x64x8xf32>, %{{[^:]*}}: index, %{{[^:]*}}: index, %[[STEPS:[^:]*]]: index,
// CHECK: %[[V:.*]]:4 = spec.verify @fused(
// CHECK: %[[STEPS64:.*]] = arith.index_cast %[[STEPS]] : index to i64
// CHECK: %[[SCALED:.*]] = arith.muli %[[STEPS64]], %c1048576{{.*}} : i64
// CHECK-NEXT: %[[ROUNDKEY:.*]] = arith.addi %[[KEY]], %[[SCALED]] : i64
// CHECK-NEXT: %[[PICKS:.*]], %{{.*}} = spec.propose %{{.*}} key(%[[ROUNDKEY]]) rule(#spec.rejection<temperature = 0.5>) : tensor<4x16xf32> -> tensor<4xi64>, tensor<4x16xf32>
// CHECK: tensor.extract %[[PICKS]]
// CHECK: spec.cache.move %[[V]]#3
// The next round's candidates: the heads' best tokens, greedy.
// CHECK: spec.propose %{{.*}} rule(#spec.greedy) : tensor<1x16xf32>

// -----

// A draft proposing the tree [[0], [1], [0, 0], [1, 0], [0, 0, 0]] (gamma
// = its depth), target and draft taking tree masks (spec-tree-attention).
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
                         index {spec.io = #spec.io<past_length>},
                         tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<draft>}
spec.decoder @draft_tree target(@target) proposer(#spec.draft<@draft, gamma = 3>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1, 2, 3], ranks = [0, 1, 0, 0, 0]>)

// A round, one draft forward per depth. The first feeds what the draft has
// not cached (a chain: the causal tree) and its last row gives the root's
// children, its best two tokens. The second feeds both (they have
// children) after the root, at positions length + 1, each seeing only
// itself among the tree's rows; each row gives its child. The third feeds
// the one candidate of depth 2 with a child after those two (past: the
// root + 2), seeing its ancestor among them. The target verifies the whole
// tree; the draft keeps the accepted candidates it was fed (a prefix of
// the path: nodes 1, 2 and 3 sit at slots 0, 1 and 2 after the root),
// moved next to the root.
// CHECK-LABEL: func.func @draft_tree_generate(
// CHECK-SAME: -> (tensor<64xi64>, index, index, tensor<6xi64>, i64, i64)
// CHECK: scf.while
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[^:]*}}: tensor<64xi64>, %{{[^:]*}}: !spec.kv_cache<2x2x64x8xf32>, %[[LEN:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: i64, %[[DCACHE:[^:]*]]: !spec.kv_cache<1x2x64x8xf32>, %[[CACHED:[^:]*]]: index,
// CHECK: %[[AFTER:.*]] = arith.addi %[[LEN]], %c1{{.*}} : index
// CHECK: %[[CAUSAL:.*]] = tensor.generate %{{.*}}, %{{.*}} {
// CHECK: arith.cmpi ule
// CHECK: %[[D1:.*]]:2 = func.call @draft(%{{.*}}, %{{.*}}, %[[DCACHE]], %[[CACHED]], %[[CAUSAL]])
// CHECK: %[[LASTROW:.*]] = tensor.extract_slice %[[D1]]#0[0, %{{.*}}, 0] [1, 1, 16]
// CHECK-NEXT: %[[BEST:.*]], %{{.*}} = spec.propose %[[LASTROW]] rule(#spec.greedy)
// CHECK: %[[N1:.*]] = tensor.extract %[[BEST]]
// CHECK: tensor.insert %{{.*}} into %[[LASTROW]]
// CHECK-NEXT: %[[NEXTBEST:.*]], %{{.*}} = spec.propose
// CHECK: %[[N2:.*]] = tensor.extract %[[NEXTBEST]]
// CHECK: tensor.from_elements %[[N1]], %[[N2]] : tensor<2xi64>
// CHECK: arith.constant dense<1> : tensor<2xi64>
// CHECK: %[[MASK2:.*]] = arith.constant dense<{{\[}}[true, false], [false, true]]> : tensor<2x2xi1>
// CHECK: %[[PAST2:.*]] = arith.addi %[[AFTER]], %c0{{.*}} : index
// CHECK: %[[MASK2ARG:.*]] = tensor.cast %[[MASK2]] : tensor<2x2xi1> to tensor<?x?xi1>
// CHECK: %[[D2:.*]]:2 = func.call @draft(%{{.*}}, %{{.*}}, %[[D1]]#1, %[[PAST2]], %[[MASK2ARG]])
// CHECK: tensor.extract_slice %[[D2]]#0[0, %c0{{.*}}, 0] [1, 1, 16]
// CHECK-NEXT: %[[P3:.*]], %{{.*}} = spec.propose
// CHECK: %[[N3:.*]] = tensor.extract %[[P3]]
// CHECK: tensor.extract_slice %[[D2]]#0[0, %c1{{.*}}, 0] [1, 1, 16]
// CHECK-NEXT: %[[P4:.*]], %{{.*}} = spec.propose
// CHECK: %[[N4:.*]] = tensor.extract %[[P4]]
// CHECK: tensor.from_elements %[[N3]] : tensor<1xi64>
// CHECK: arith.constant dense<2> : tensor<1xi64>
// CHECK: %[[MASK3:.*]] = arith.constant dense<{{\[}}[true, false, true]]> : tensor<1x3xi1>
// CHECK: %[[PAST3:.*]] = arith.addi %[[AFTER]], %c2{{.*}} : index
// CHECK: %[[MASK3ARG:.*]] = tensor.cast %[[MASK3]] : tensor<1x3xi1> to tensor<?x?xi1>
// CHECK: %[[D3:.*]]:2 = func.call @draft(%{{.*}}, %{{.*}}, %[[D2]]#1, %[[PAST3]], %[[MASK3ARG]])
// CHECK: %[[P5:.*]], %{{.*}} = spec.propose
// CHECK: %[[N5:.*]] = tensor.extract %[[P5]]
// CHECK: tensor.from_elements %[[N1]], %[[N2]], %[[N3]], %[[N4]], %[[N5]] : tensor<5xi64>
// CHECK: %[[V:.*]]:2 = spec.verify @target(
// CHECK: spec.cache.move %[[V]]#1
// CHECK: %[[SLOTS:.*]] = arith.constant dense<[0, 0, 1, 2, 0, 0]> : tensor<6xindex>
// CHECK: %[[FED:.*]] = arith.constant dense<[0, 1, 1, 1, 0, 0]> : tensor<6xindex>
// CHECK: %[[DMOVED:.*]] = spec.cache.move %[[D3]]#1 from %{{.*}} to %[[AFTER]] : !spec.kv_cache<1x2x64x8xf32>, tensor<?xindex>
// CHECK: %[[DCACHED:.*]] = arith.addi %[[AFTER]], %{{.*}} : index
// CHECK: scf.yield %{{.*}}, %[[DMOVED]], %[[DCACHED]],
