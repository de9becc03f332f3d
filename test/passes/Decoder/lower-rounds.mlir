// RUN: spec-opt %s --spec-lower-rounds | FileCheck %s

// A decoder's batched target in the in-place form (spec-slot-target, then
// spec-kv-cache-inplace): its rounds run it over a batch of slots and pick
// each sequence's next token with the loops' greedy rule.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}

spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @target_slots}

// The prefill: the tokens as one row at positions %start.., into slot
// %slot at past length %start; the greedy pick at its last row.
// CHECK-LABEL: func.func private @decoder_prefill_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[SLOT:[^:]*]]: index, %[[START:[^:]*]]: index, %[[TOKENS:[^:]*]]: tensor<?xi64>, %{{[^:]*}}: i64) -> (i64, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[TOKENS]]
// CHECK: %[[PAST:.*]] = arith.index_cast %[[START]] : index to i64
// CHECK: %[[ONE:.*]] = tensor.from_elements %[[PAST]] : tensor<1xi64>
// CHECK: %[[LENGTHS:.*]] = tensor.cast %[[ONE]] : tensor<1xi64> to tensor<?xi64>
// CHECK: linalg.generic
// CHECK: %[[COLUMN:.*]] = linalg.index 1
// CHECK: arith.addi %[[START]], %[[COLUMN]]
// CHECK: %[[POSITIONS:.*]] = tensor.cast %{{.*}} : tensor<1x?xi64> to tensor<?x?xi64>
// CHECK: %[[IDS:.*]] = tensor.reshape %[[TOKENS]]
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(%[[IDS]], %[[POSITIONS]], %[[CACHE]], %[[SLOT]], %[[LENGTHS]])
// CHECK: %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[FWD]]#0[0, %[[LAST]], 0] [%{{.*}}, 1, 16] [1, 1, 1] : tensor<?x?x16xf32> to tensor<?x16xf32>
// CHECK: %[[PICK:.*]], %{{.*}} = spec.propose %[[ROW]] rule(#spec.greedy) : tensor<?x16xf32> -> tensor<?xi64>, tensor<?x16xf32>
// CHECK: %[[FIRST:.*]] = tensor.extract %[[PICK]]
// CHECK: return %[[FIRST]], %[[FWD]]#1

// The round: sequence b of slot %first + b, its last token at its length.
// CHECK-LABEL: func.func private @decoder_round_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[FIRST:[^:]*]]: index, %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %{{[^:]*}}: tensor<?xi64>) -> (tensor<?xi64>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[TOKENS]]
// CHECK: linalg.generic {{.*}} ins(%[[LENGTHS]] : tensor<?xi64>) outs(%{{.*}} : tensor<?x1xi64>)
// CHECK: %[[POSITIONS:.*]] = tensor.cast %{{.*}} : tensor<?x1xi64> to tensor<?x?xi64>
// CHECK: %[[COLUMN:.*]] = tensor.insert_slice %[[TOKENS]] into %{{.*}}[0, 0] [%{{.*}}, 1] [1, 1] : tensor<?xi64> into tensor<?x1xi64>
// CHECK: %[[IDS:.*]] = tensor.cast %[[COLUMN]]
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(%[[IDS]], %[[POSITIONS]], %[[CACHE]], %[[FIRST]], %[[LENGTHS]])
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[FWD]]#0[0, 0, 0] [%[[B]], 1, 16]
// CHECK: %[[NEXT:.*]], %{{.*}} = spec.propose %[[ROWS]] rule(#spec.greedy)
// CHECK: return %[[NEXT]], %[[FWD]]#1

// The entries the runtime calls (C interface): the steps without the cache
// among their results; bufferized, the steps write the caller's cache in
// place.
// CHECK-LABEL: func.func @decoder_prefill(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[SLOT:[^:]*]]: index, %[[START:[^:]*]]: index, %[[TOKENS:[^:]*]]: tensor<?xi64>, %[[KEY:[^:]*]]: i64) -> i64 attributes {llvm.emit_c_interface, spec.slot_cache_shape = array<i64: 2, 2, 4, 2, 64, 8>}
// CHECK-NEXT: %[[STEP:.*]]:2 = call @decoder_prefill_step(%[[CACHE]], %[[SLOT]], %[[START]], %[[TOKENS]], %[[KEY]])
// CHECK-NEXT: return %[[STEP]]#0 : i64
// CHECK-LABEL: func.func @decoder_round(
// CHECK-SAME: -> tensor<?xi64> attributes {llvm.emit_c_interface, spec.slot_cache_shape = array<i64: 2, 2, 4, 2, 64, 8>}
// CHECK-NEXT: %[[STEP:.*]]:2 = call @decoder_round_step(
// CHECK-NEXT: return %[[STEP]]#0 : tensor<?xi64>
