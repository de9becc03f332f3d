// RUN: spec-opt %s --spec-lower-rounds | FileCheck %s

// A decoder whose draft has another tokenizer (spec.cross_tokenizer; 24
// tokens against the target's 16): the runtime translates between their
// rounds, so instead of a fused speculative round there are the draft's own
// round, which returns its logits plus a bias row per sequence (token
// healing) for the runtime to choose from, and the target's verification of
// given proposals, gamma + 1 rows per sequence.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x24xf32>
    attributes {spec.role = #spec.role<draft>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
func.func private @draft_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<1x4x1x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x24xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x4x1x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<draft>, spec.slots = 4 : i64}

spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) {spec.cross_tokenizer, spec.slot_target = @target_slots, spec.slot_draft = @draft_slots}

// CHECK-NOT: @decoder_spec_round

// CHECK-LABEL: func.func private @decoder_verify_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[FIRST:[^:]*]]: index, %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %[[PROPOSED:[^:]*]]: tensor<?x2xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[TOKENS]]
// CHECK: %[[C0:.*]] = tensor.extract_slice %[[PROPOSED]][0, 0] [%[[B]], 1] [1, 1]
// CHECK: %[[C1:.*]] = tensor.extract_slice %[[PROPOSED]][0, 1] [%[[B]], 1] [1, 1]
// CHECK: tensor.insert_slice %[[TOKENS]] into %{{.*}}[0, 0]
// CHECK: tensor.insert_slice %[[C0]] into %{{.*}}[0, 1]
// CHECK: tensor.insert_slice %[[C1]] into %{{.*}}[0, 2]
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(%{{.*}}, %{{.*}}, %[[CACHE]], %[[FIRST]], %[[LENGTHS]])
// CHECK: spec.propose %{{.*}} rule(#spec.greedy) : tensor<?x16xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[FWD]]#1 : tensor<?x3xi64>, tensor<?xi64>, !spec.kv_cache<2x4x2x64x8xf32>

// CHECK-LABEL: func.func private @decoder_draft_prefill_step(
// CHECK: call @draft_slots

// CHECK-LABEL: func.func private @decoder_draft_round_step(
// CHECK-SAME: %[[DCACHE:[^:]*]]: !spec.kv_cache<1x4x1x64x8xf32>, %[[DFIRST:[^:]*]]: index, %[[DLENGTHS:[^:]*]]: tensor<?xi64>, %[[DTOKENS:[^:]*]]: tensor<?xi64>, %[[BIAS:[^:]*]]: tensor<?x24xf32>) -> (tensor<?x24xf32>, !spec.kv_cache<1x4x1x64x8xf32>)
// CHECK: %[[D:.*]]:2 = call @draft_slots(%{{.*}}, %{{.*}}, %[[DCACHE]], %[[DFIRST]], %[[DLENGTHS]])
// CHECK: %[[LAST:.*]] = tensor.extract_slice %[[D]]#0[0, 0, 0] [%{{.*}}, 1, 24] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x24xf32>
// CHECK: %[[BIASED:.*]] = linalg.generic {{.*}} ins(%[[LAST]], %{{.*}} : tensor<?x24xf32>, tensor<?x24xf32>) outs(%[[LAST]] : tensor<?x24xf32>)
// CHECK: arith.addf
// CHECK-NOT: spec.propose
// CHECK: return %[[BIASED]], %[[D]]#1

// The entries the runtime calls.
// CHECK-LABEL: func.func @decoder_verify(
// CHECK-LABEL: func.func @decoder_draft_prefill(
// CHECK-LABEL: func.func @decoder_draft_round(

// Sampled (token-level intersection): the runtime draws each proposal from
// the draft's distribution over the tokens both vocabularies share and maps
// it into the target's vocabulary; verify takes those distributions and
// each sequence's round key, and accepts by rejection sampling.
spec.decoder @sampled target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.rejection<temperature = 1.0>) {spec.cross_tokenizer, spec.slot_target = @target_slots, spec.slot_draft = @draft_slots}

// CHECK-LABEL: func.func private @sampled_verify_step(
// CHECK-SAME: %[[PROPOSED:[^:]*]]: tensor<?x2xi64>, %[[Q:[^:]*]]: tensor<?x2x16xf32>, %[[KEYS:[^:]*]]: tensor<?xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[P0:.*]] = tensor.extract %[[PROPOSED]][%[[R]], %{{.*}}]
// CHECK: %[[P1:.*]] = tensor.extract %[[PROPOSED]][%[[R]], %{{.*}}]
// CHECK: %[[QROWS:.*]] = tensor.extract_slice %[[Q]][%[[R]], 0, 0] [1, 2, 16] [1, 1, 1] : tensor<?x2x16xf32> to tensor<2x16xf32>
// CHECK: %[[ROW:.*]] = tensor.from_elements %[[P0]], %[[P1]] : tensor<2xi64>
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[FWD]]#0[%[[R]], 0, 0] [1, 3, 16]
// CHECK: %[[LAST:.*]] = arith.constant 1048575 : i64
// CHECK: %[[ROUND:.*]] = tensor.extract %[[KEYS]][%[[R]]]
// CHECK: %[[KEY:.*]] = arith.addi %[[ROUND]], %[[LAST]]
// CHECK: spec.accept %[[ROW]], %[[ROWS]] probs(%[[QROWS]] : tensor<2x16xf32>) key(%[[KEY]]) rule(#spec.rejection<>)
// CHECK-LABEL: func.func @sampled_verify(
// CHECK-SAME: tensor<?x2x16xf32>, %{{.*}}: tensor<?xi64>) -> (tensor<?x3xi64>, tensor<?xi64>)
// CHECK-LABEL: func.func @sampled_draft_round(
// CHECK-SAME: tensor<?x24xf32>) -> tensor<?x24xf32>
