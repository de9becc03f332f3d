// RUN: spec-opt %s --spec-lower-rounds | FileCheck %s

// A decoder that samples: every draw is one per sequence, keyed by that
// sequence's key, and each sequence's proposals pass its own spec.accept.
// The prefill draws with the seed it is given; a plain round with
// keys[b] + lengths[b] (the seed plus the position, as the decode loops'
// target-only steps); a speculative round's draft step k with
// keys[b] + lengths[b] + k (keys[b] is the round key) and its acceptance
// with the round's last key, keys[b] + 2^20 - 1.

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
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
func.func private @draft_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<1x4x1x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x4x1x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<draft>, spec.slots = 4 : i64}

spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.rejection<temperature = 0.7>) {spec.slot_target = @target_slots, spec.slot_draft = @draft_slots}


// The prefill: the target's draw from the prompt's last row, with the key.
// CHECK-LABEL: func.func private @decoder_prefill_step(
// CHECK-SAME: %[[TOKENS:[^:]*]]: tensor<?xi64>, %[[KEY:[^:]*]]: i64) -> (i64, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[FWD]]#0[%{{.*}}, %{{.*}}, 0] [1, 1, 16] [1, 1, 1] : tensor<?x?x16xf32> to tensor<1x16xf32>
// CHECK: spec.propose %[[ROW]] key(%[[KEY]]) rule(#spec.rejection<temperature = 0.7>)

// A plain round: sequence r draws at keys[r] + lengths[r].
// CHECK-LABEL: func.func private @decoder_round_step(
// CHECK-SAME: %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %[[KEYS:[^:]*]]: tensor<?xi64>)
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[FWD]]#0[%[[R]], 0, 0] [1, 1, 16]
// CHECK: %[[LENGTH:.*]] = tensor.extract %[[LENGTHS]][%[[R]]]
// CHECK: %[[SEED:.*]] = tensor.extract %[[KEYS]][%[[R]]]
// CHECK: %[[AT:.*]] = arith.addi %[[SEED]], %[[LENGTH]]
// CHECK: %[[TOKEN:.*]], %[[Q:.*]] = spec.propose %[[ROW]] key(%[[AT]]) rule(#spec.rejection
// CHECK: tensor.insert_slice %[[Q]] into
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[R]]]

// The draft prefill only fills the draft's cache: its pick is not used.
// CHECK-LABEL: func.func private @decoder_draft_prefill_step(
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)

// A speculative round: draft step k draws at keys[r] + lengths[r] + k,
// keeping each draw's distribution; each sequence's proposals and rows go
// to its own spec.accept with the round's last key; it commits the
// accepted proposals and the token after them.
// CHECK-LABEL: func.func private @decoder_spec_round_step(
// CHECK-SAME: %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[PREVIOUS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %[[KEYS:[^:]*]]: tensor<?xi64>)
// CHECK: %[[D0:.*]]:2 = call @draft_slots(
// CHECK: %[[P0:.*]]:2 = scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK: tensor.extract_slice %[[D0]]#0[%[[R]], 1, 0] [1, 1, 16]
// CHECK: %[[LENGTH:.*]] = tensor.extract %[[LENGTHS]][%[[R]]]
// CHECK: %[[ROUND:.*]] = tensor.extract %[[KEYS]][%[[R]]]
// CHECK: %[[AT0:.*]] = arith.addi %[[ROUND]], %[[LENGTH]]
// CHECK: spec.propose %{{.*}} key(%[[AT0]]) rule(#spec.rejection
// CHECK: %[[D1:.*]]:2 = call @draft_slots(
// CHECK: %[[P1:.*]]:2 = scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK: tensor.extract_slice %[[D1]]#0[%[[R]], 0, 0] [1, 1, 16]
// CHECK: %[[LENGTH:.*]] = tensor.extract %[[LENGTHS]][%[[R]]]
// CHECK: %[[ROUND:.*]] = tensor.extract %[[KEYS]][%[[R]]]
// CHECK: %[[AT:.*]] = arith.addi %[[ROUND]], %[[LENGTH]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[AT1:.*]] = arith.addi %[[AT]], %[[ONE]]
// CHECK: spec.propose %{{.*}} key(%[[AT1]]) rule(#spec.rejection
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[A0:.*]] = tensor.extract %[[P0]]#0[%[[R]]]
// CHECK: %[[Q0:.*]] = tensor.extract_slice %[[P0]]#1[%[[R]], 0] [1, 16]
// CHECK: %[[QS0:.*]] = tensor.insert_slice %[[Q0]] into %{{.*}}[0, 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<2x16xf32>
// CHECK: %[[A1:.*]] = tensor.extract %[[P1]]#0[%[[R]]]
// CHECK: %[[Q1:.*]] = tensor.extract_slice %[[P1]]#1[%[[R]], 0] [1, 16]
// CHECK: %[[QS:.*]] = tensor.insert_slice %[[Q1]] into %[[QS0]][1, 0] [1, 16]
// CHECK: %[[PROPOSED:.*]] = tensor.from_elements %[[A0]], %[[A1]] : tensor<2xi64>
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[FWD]]#0[%[[R]], 0, 0] [1, 3, 16] [1, 1, 1] : tensor<?x?x16xf32> to tensor<3x16xf32>
// CHECK: %[[LAST:.*]] = arith.constant 1048575 : i64
// CHECK: %[[ROUND:.*]] = tensor.extract %[[KEYS]][%[[R]]]
// CHECK: %[[AKEY:.*]] = arith.addi %[[ROUND]], %[[LAST]]
// CHECK: %[[COUNT:.*]], %[[NEXT:.*]] = spec.accept %[[PROPOSED]], %[[ROWS]] probs(%[[QS]] : tensor<2x16xf32>) key(%[[AKEY]]) rule(#spec.rejection
// CHECK: %[[ALL:.*]] = tensor.from_elements %[[A0]], %[[A1]], %[[NEXT]] : tensor<3xi64>
// CHECK: %[[COMMITTED:.*]] = tensor.insert %[[NEXT]] into %[[ALL]][%[[COUNT]]]
// CHECK: tensor.insert_slice %[[COMMITTED]] into %{{.*}}[%[[R]], 0] [1, 3]
// CHECK: arith.addi %[[COUNT]], %{{.*}} : index
// CHECK: scf.yield

// The entries pass the keys through.
// CHECK-LABEL: func.func @decoder_prefill(
// CHECK-SAME: %[[KEY:[^:]*]]: i64) -> i64
// CHECK-NEXT: call @decoder_prefill_step(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[KEY]])
// CHECK-LABEL: func.func @decoder_spec_round(
// CHECK-SAME: %[[KEYS:[^:]*]]: tensor<?xi64>) -> (tensor<?x3xi64>, tensor<?xi64>)
// CHECK-NEXT: call @decoder_spec_round_step(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[KEYS]])
