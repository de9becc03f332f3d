// RUN: spec-opt %s --spec-lower-rounds -split-input-file | FileCheck %s

// Medusa heads fused into the target (greedy, a chain): every forward's
// heads give each sequence its next proposals. The prefill returns them
// after the prompt and the plain round after each sequence's token; the
// speculative round verifies each sequence's proposals after its last
// token (heads + 1 rows), commits the leading agreements and one more, and
// takes the heads at the last committed row.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x4xf32>) -> tensor<?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 2>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) {spec.slot_target = @target_slots}

// CHECK-LABEL: func.func private @decoder_prefill_step(
// CHECK-SAME: -> (i64, tensor<2xi64>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:4 = spec.verify @target_slots(
// CHECK: %[[LAST:.*]] = arith.subi
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: scf.for
// CHECK: %[[H1:.*]] = tensor.extract_slice %[[FWD]]#1[%{{.*}}, %[[LAST]], 0]
// CHECK: %[[P1:.*]], %{{.*}} = spec.propose %[[H1]] rule(#spec.greedy)
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%{{.*}}, %c0{{.*}}] : tensor<?x2xi64>
// CHECK: %[[H2:.*]] = tensor.extract_slice %[[FWD]]#2[%{{.*}}, %[[LAST]], 0]
// CHECK: %[[P2:.*]], %{{.*}} = spec.propose %[[H2]] rule(#spec.greedy)
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%{{.*}}, %c1{{.*}}] : tensor<?x2xi64>
// CHECK: %[[ONE:.*]] = tensor.cast %{{.*}} : tensor<?x2xi64> to tensor<1x2xi64>
// CHECK: %[[PROPOSALS:.*]] = tensor.collapse_shape %[[ONE]] {{\[\[}}0, 1]] : tensor<1x2xi64> into tensor<2xi64>
// CHECK: return %{{.*}}, %[[PROPOSALS]], %[[FWD]]#3

// CHECK-LABEL: func.func private @decoder_round_step(
// CHECK-SAME: -> (tensor<?xi64>, tensor<?x2xi64>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:4 = spec.verify @target_slots(
// CHECK: %[[NEXT:.*]], %{{.*}} = spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: scf.for
// CHECK: tensor.extract_slice %[[FWD]]#1[%{{.*}}, %c0{{.*}}, 0]
// CHECK: tensor.extract_slice %[[FWD]]#2[%{{.*}}, %c0{{.*}}, 0]
// CHECK: return %[[NEXT]], %{{.*}}, %[[FWD]]#3

// CHECK-LABEL: func.func private @decoder_spec_round_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[FIRST:[^:]*]]: index, %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %[[PROPOSED:[^:]*]]: tensor<?x2xi64>, %{{[^:]*}}: tensor<?xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, tensor<?x2xi64>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[TOKENS]]
// CHECK: %[[C0:.*]] = tensor.extract_slice %[[PROPOSED]][0, 0] [%[[B]], 1] [1, 1] : tensor<?x2xi64> to tensor<?xi64>
// CHECK: %[[C1:.*]] = tensor.extract_slice %[[PROPOSED]][0, 1] [%[[B]], 1] [1, 1] : tensor<?x2xi64> to tensor<?xi64>
// CHECK: linalg.generic {{.*}} ins(%[[LENGTHS]] : tensor<?xi64>) outs(%{{.*}} : tensor<?x3xi64>)
// CHECK: tensor.insert_slice %[[TOKENS]] into %{{.*}}[0, 0]
// CHECK: tensor.insert_slice %[[C0]] into %{{.*}}[0, 1]
// CHECK: tensor.insert_slice %[[C1]] into %{{.*}}[0, 2]
// CHECK: %[[FWD:.*]]:4 = spec.verify @target_slots(%{{.*}}, %{{.*}}, %[[CACHE]], %[[FIRST]], %[[LENGTHS]])
// CHECK: %[[PICKS:.*]] = tensor.cast %{{.*}} : tensor<?x?xi64> to tensor<?x3xi64>
// CHECK: %[[COUNTS:.*]] = scf.for
// CHECK: tensor.extract %[[C0]]
// CHECK: tensor.extract %[[C1]]
// CHECK: scf.yield
// The heads at row counts[b] - 1 of each sequence.
// CHECK: %[[NEXT:.*]] = scf.for %[[R:.*]] = %{{.*}} to %[[B]] {{.*}} iter_args(%[[TABLE:.*]] =
// CHECK: %[[COUNT:.*]] = tensor.extract %[[COUNTS]][%[[R]]]
// CHECK: %[[AT:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK: %[[ROW:.*]] = arith.subi %[[AT]], %{{.*}} : index
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[FWD]]#1[%[[R]], %[[ROW]], 0] [1, 1, 16]
// CHECK: spec.propose %[[S1]] rule(#spec.greedy)
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[FWD]]#2[%[[R]], %[[ROW]], 0] [1, 1, 16]
// CHECK: spec.propose %[[S2]] rule(#spec.greedy)
// CHECK: scf.yield
// CHECK: %[[PROPOSALS:.*]] = tensor.cast %[[NEXT]]
// CHECK: return %[[PICKS]], %[[COUNTS]], %[[PROPOSALS]], %[[FWD]]#3

// CHECK-LABEL: func.func @decoder_spec_round(
// CHECK-SAME: -> (tensor<?x3xi64>, tensor<?xi64>, tensor<?x2xi64>) attributes {llvm.emit_c_interface

// -----

// Sampled heads propose in rounds too: each head's proposal comes with the
// distribution it was drawn from. The prefill draws with its key (the
// seed) + k + 1, the plain round with the seed + 2^19 + the position + k +
// 1 (apart from the decode loops' keys), and the speculative round accepts
// by rejection sampling with the round's last key and draws the next with
// its round key + k + 1, as the decode loop does.
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
        tensor<?x?x16xf32> {spec.io = #spec.io<head_logits, index = 1>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.rejection<temperature = 0.7>) {spec.slot_target = @target_slots}

// CHECK-LABEL: func.func private @decoder_prefill_step(
// CHECK-SAME: %[[KEY:[^:]*]]: i64) -> (i64, tensor<1xi64>, tensor<1x16xf32>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[HEADKEY:.*]] = arith.addi %[[KEY]], %c1_i64
// CHECK: spec.propose %{{.*}} key(%[[HEADKEY]]) rule(#spec.rejection<temperature = 0.7>)
// CHECK: %[[Q:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<1x1x16xf32> into tensor<1x16xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[Q]], %{{.*}}

// CHECK-LABEL: func.func private @decoder_round_step(
// CHECK-SAME: -> (tensor<?xi64>, tensor<?x1xi64>, tensor<?x1x16xf32>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[AT:.*]] = arith.addi %{{.*}}, %c524288_i64
// CHECK: %[[HEADKEY:.*]] = arith.addi %[[AT]], %c1_i64
// CHECK: spec.propose %{{.*}} key(%[[HEADKEY]]) rule(#spec.rejection<temperature = 0.7>)

// CHECK-LABEL: func.func private @decoder_spec_round_step(
// CHECK-SAME: %{{[^:]*}}: tensor<?x1xi64>, %[[QIN:[^:]*]]: tensor<?x1x16xf32>, %[[KEYS:[^:]*]]: tensor<?xi64>) -> (tensor<?x2xi64>, tensor<?xi64>, tensor<?x1xi64>, tensor<?x1x16xf32>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: spec.verify @target_slots(
// CHECK: tensor.extract_slice %[[QIN]]
// CHECK: %[[RK:.*]] = tensor.extract %[[KEYS]]
// CHECK: %[[LAST:.*]] = arith.addi %[[RK]], %c1048575_i64
// CHECK: spec.accept {{.*}} key(%[[LAST]]) rule(#spec.rejection<temperature = 0.7>)
// CHECK: %[[K:.*]] = tensor.extract %[[KEYS]]
// CHECK: %[[HEADKEY:.*]] = arith.addi %[[K]], %c1_i64
// CHECK: spec.propose %{{.*}} key(%[[HEADKEY]]) rule(#spec.rejection<temperature = 0.7>)
// CHECK: return
