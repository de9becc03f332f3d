// RUN: spec-opt %s --spec-lower-rounds | FileCheck %s

// A decoder with a draft, both with batched twins in the in-place form:
// besides the target's prefill and round, a prefill of the draft's cache
// and a speculative round. The draft's first forward feeds each sequence's
// tokens at lengths - 1 and lengths (catching up a draft one position
// behind), the next ones its previous proposal; the target verifies
// gamma + 1 rows per sequence; each commits its leading agreements and
// one more.

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

spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) {spec.slot_target = @target_slots, spec.slot_draft = @draft_slots}

// CHECK-LABEL: func.func private @decoder_draft_prefill_step(
// CHECK-SAME: %[[DCACHE:[^:]*]]: !spec.kv_cache<1x4x1x64x8xf32>, %[[SLOT:[^:]*]]: index, %[[START:[^:]*]]: index, %[[TOKENS:[^:]*]]: tensor<?xi64>, %{{[^:]*}}: i64) -> (i64, !spec.kv_cache<1x4x1x64x8xf32>)
// CHECK: %[[FWD:.*]]:2 = call @draft_slots(%{{.*}}, %{{.*}}, %[[DCACHE]], %[[SLOT]], %{{.*}})
// CHECK: return %{{.*}}, %[[FWD]]#1

// CHECK-LABEL: func.func private @decoder_spec_round_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[DCACHE:[^:]*]]: !spec.kv_cache<1x4x1x64x8xf32>, %[[FIRST:[^:]*]]: index, %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[PREVIOUS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %{{[^:]*}}: tensor<?xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, !spec.kv_cache<2x4x2x64x8xf32>, !spec.kv_cache<1x4x1x64x8xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[TOKENS]]
// Draft step 0: [previous, last] at lengths - 1 and lengths, past lengths - 1.
// CHECK: linalg.generic {{.*}} ins(%[[LENGTHS]] : tensor<?xi64>) outs(%{{.*}} : tensor<?x2xi64>)
// CHECK: arith.constant -1 : i64
// CHECK: %[[POS0:.*]] = tensor.cast %{{.*}} : tensor<?x2xi64> to tensor<?x?xi64>
// CHECK: %[[PAST0:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<?x1xi64> into tensor<?xi64>
// CHECK: tensor.insert_slice %[[PREVIOUS]] into %{{.*}}[0, 0] [%{{.*}}, 1] [1, 1] : tensor<?xi64> into tensor<?x2xi64>
// CHECK: %[[FED0:.*]] = tensor.insert_slice %[[TOKENS]] into %{{.*}}[0, 1] [%{{.*}}, 1] [1, 1] : tensor<?xi64> into tensor<?x2xi64>
// CHECK: %[[IDS0:.*]] = tensor.cast %[[FED0]]
// CHECK: %[[D0:.*]]:2 = call @draft_slots(%[[IDS0]], %[[POS0]], %[[DCACHE]], %[[FIRST]], %[[PAST0]])
// CHECK: %[[ROW0:.*]] = tensor.extract_slice %[[D0]]#0[0, 1, 0] [%[[B]], 1, 16]
// CHECK: %[[P0:.*]], %{{.*}} = spec.propose %[[ROW0]] rule(#spec.greedy)
// Draft step 1: the proposal at lengths + 1.
// CHECK: %[[PAST1:.*]] = tensor.collapse_shape
// CHECK: %[[FED1:.*]] = tensor.insert_slice %[[P0]] into %{{.*}}[0, 0] [%{{.*}}, 1] [1, 1] : tensor<?xi64> into tensor<?x1xi64>
// CHECK: %[[IDS1:.*]] = tensor.cast %[[FED1]]
// CHECK: %[[D1:.*]]:2 = call @draft_slots(%[[IDS1]], %{{.*}}, %[[D0]]#1, %[[FIRST]], %[[PAST1]])
// CHECK: %[[ROW1:.*]] = tensor.extract_slice %[[D1]]#0[0, 0, 0] [%[[B]], 1, 16]
// CHECK: %[[P1:.*]], %{{.*}} = spec.propose %[[ROW1]] rule(#spec.greedy)
// The target: [last, p0, p1] at lengths.., one forward.
// CHECK: linalg.generic {{.*}} ins(%[[LENGTHS]] : tensor<?xi64>) outs(%{{.*}} : tensor<?x3xi64>)
// CHECK: %[[POS:.*]] = tensor.cast %{{.*}} : tensor<?x3xi64> to tensor<?x?xi64>
// CHECK: tensor.insert_slice %[[TOKENS]] into %{{.*}}[0, 0]
// CHECK: tensor.insert_slice %[[P0]] into %{{.*}}[0, 1]
// CHECK: %[[FED:.*]] = tensor.insert_slice %[[P1]] into %{{.*}}[0, 2]
// CHECK: %[[IDS:.*]] = tensor.cast %[[FED]]
// CHECK: %[[FWD:.*]]:2 = spec.verify @target_slots(%[[IDS]], %[[POS]], %[[CACHE]], %[[FIRST]], %[[LENGTHS]])
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[FWD]]#0 {{\[\[}}0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
// CHECK: %[[ALL:.*]], %{{.*}} = spec.propose %[[FLAT]] rule(#spec.greedy)
// CHECK: %[[RESHAPED:.*]] = tensor.reshape %[[ALL]]
// CHECK: %[[PICKS:.*]] = tensor.cast %[[RESHAPED]] : tensor<?x?xi64> to tensor<?x3xi64>
// Per sequence: 1 + the leading proposals equal to the target's picks.
// CHECK: %[[COUNTS:.*]] = scf.for %[[ROW:.*]] = %{{.*}} to %[[B]]
// CHECK: %[[A0:.*]] = tensor.extract %[[P0]][%[[ROW]]]
// CHECK: %[[T0:.*]] = tensor.extract %[[PICKS]][%[[ROW]], %{{.*}}]
// CHECK: %[[EQ0:.*]] = arith.cmpi eq, %[[A0]], %[[T0]]
// CHECK: %[[ALIVE0:.*]] = arith.andi %{{.*}}, %[[EQ0]]
// CHECK: %[[A1:.*]] = tensor.extract %[[P1]][%[[ROW]]]
// CHECK: %[[T1:.*]] = tensor.extract %[[PICKS]][%[[ROW]], %{{.*}}]
// CHECK: %[[EQ1:.*]] = arith.cmpi eq, %[[A1]], %[[T1]]
// CHECK: arith.andi %[[ALIVE0]], %[[EQ1]]
// CHECK: scf.yield
// CHECK: return %[[PICKS]], %[[COUNTS]], %[[FWD]]#1, %[[D1]]#1

// The entries: each cache's shape from its first cache.
// CHECK-LABEL: func.func @decoder_draft_prefill(
// CHECK-SAME: -> i64 attributes {llvm.emit_c_interface, spec.slot_cache_shape = array<i64: 2, 1, 4, 1, 64, 8>}
// CHECK-LABEL: func.func @decoder_spec_round(
// CHECK-SAME: -> (tensor<?x3xi64>, tensor<?xi64>) attributes {llvm.emit_c_interface, spec.slot_cache_shape = array<i64: 2, 2, 4, 2, 64, 8>}
// CHECK-NEXT: %[[STEP:.*]]:4 = call @decoder_spec_round_step(
// CHECK-NEXT: return %[[STEP]]#0, %[[STEP]]#1 : tensor<?x3xi64>, tensor<?xi64>
