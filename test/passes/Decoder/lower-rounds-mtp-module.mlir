// RUN: spec-opt %s --spec-lower-rounds -split-input-file | FileCheck %s

// An MTP module (a chain of one) proposes in the rounds from the target's
// hidden states, with a cache of slots of its own. The target's prefill and
// plain round also return their rows' hidden states, which the runtime
// keeps until the module's prefill reads them (each row with the token
// after it) and proposes after the last; the speculative round verifies
// each sequence's proposal (2 rows), runs the module on those rows and the
// tokens committed after them, and proposes at each sequence's last
// committed row.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @module(tensor<?x?x4xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
func.func private @module_slots(
    tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>},
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>, spec.slots = 4 : i64}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.greedy) {spec.slot_target = @target_slots, spec.slot_draft = @module_slots}

// CHECK-LABEL: func.func private @decoder_prefill_step(
// CHECK-SAME: -> (i64, tensor<?x4xf32>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:3 = spec.verify @target_slots(
// CHECK: %[[HIDDEN:.*]] = tensor.collapse_shape %[[FWD]]#1 {{\[\[}}0, 1], [2]] : tensor<?x?x4xf32> into tensor<?x4xf32>
// CHECK: return %{{.*}}, %[[HIDDEN]], %[[FWD]]#2

// CHECK-LABEL: func.func private @decoder_round_step(
// CHECK-SAME: -> (tensor<?xi64>, tensor<?x4xf32>, !spec.kv_cache<2x4x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:3 = spec.verify @target_slots(
// CHECK: %[[NEXT:.*]], %{{.*}} = spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: %[[HIDDEN:.*]] = tensor.collapse_shape %[[FWD]]#1
// CHECK: return %[[NEXT]], %[[HIDDEN]], %[[FWD]]#2

// CHECK-LABEL: func.func private @decoder_module_prefill_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x1x2x64x8xf32>, %[[SLOT:[^:]*]]: index, %{{[^:]*}}: index, %[[ROWS:[^:]*]]: tensor<?x4xf32>, %{{[^:]*}}: tensor<?xi64>, %{{[^:]*}}: i64) -> (i64, !spec.kv_cache<2x1x2x64x8xf32>)
// CHECK: %[[EXPANDED:.*]] = tensor.expand_shape %[[ROWS]] {{\[\[}}0, 1], [2]] {{.*}} into tensor<1x?x4xf32>
// CHECK: %[[STATES:.*]] = tensor.cast %[[EXPANDED]] : tensor<1x?x4xf32> to tensor<?x?x4xf32>
// CHECK: %[[MODULE:.*]]:2 = call @module_slots(%[[STATES]], %{{.*}}, %{{.*}}, %[[CACHE]], %[[SLOT]], %{{.*}})
// CHECK: scf.for
// CHECK: tensor.extract_slice %[[MODULE]]#0
// CHECK: spec.propose %{{.*}} rule(#spec.greedy)
// CHECK: return %{{.*}}, %[[MODULE]]#1

// CHECK-LABEL: func.func private @decoder_spec_round_step(
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<2x4x2x64x8xf32>, %[[MCACHE:[^:]*]]: !spec.kv_cache<2x1x2x64x8xf32>, %[[FIRST:[^:]*]]: index, %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[TOKENS:[^:]*]]: tensor<?xi64>, %{{[^:]*}}: tensor<?x1xi64>, %{{[^:]*}}: tensor<?xi64>) -> (tensor<?x2xi64>, tensor<?xi64>, tensor<?x1xi64>, !spec.kv_cache<2x4x2x64x8xf32>, !spec.kv_cache<2x1x2x64x8xf32>)
// CHECK: %[[FWD:.*]]:3 = spec.verify @target_slots(%{{.*}}, %{{.*}}, %[[CACHE]], %[[FIRST]], %[[LENGTHS]])
// CHECK: %[[PICKS:.*]] = tensor.cast %{{.*}} : tensor<?x?xi64> to tensor<?x2xi64>
// CHECK: %[[COUNTS:.*]] = scf.for
// The module reads the verified rows' hidden states and the picks after
// them, at the sequences' positions in its own cache.
// CHECK: %[[IDS:.*]] = tensor.cast %[[PICKS]] : tensor<?x2xi64> to tensor<?x?xi64>
// CHECK: linalg.generic {{.*}} ins(%[[LENGTHS]] : tensor<?xi64>)
// CHECK: %[[MODULE:.*]]:2 = call @module_slots(%[[FWD]]#1, %[[IDS]], %{{.*}}, %[[MCACHE]], %[[FIRST]], %[[LENGTHS]])
// Its proposal at row counts[b] - 1 of each sequence.
// CHECK: %[[NEXT:.*]] = scf.for %[[R:.*]] = {{.*}} iter_args(
// CHECK: %[[COUNT:.*]] = tensor.extract %[[COUNTS]][%[[R]]]
// CHECK: %[[AT:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK: %[[ROW:.*]] = arith.subi %[[AT]], %{{.*}} : index
// CHECK: %[[S:.*]] = tensor.extract_slice %[[MODULE]]#0[%[[R]], %[[ROW]], 0] [1, 1, 16]
// CHECK: spec.propose %[[S]] rule(#spec.greedy)
// CHECK: %[[PROPOSALS:.*]] = tensor.cast %[[NEXT]] : tensor<?x1xi64> to tensor<?x1xi64>
// CHECK: return %[[PICKS]], %[[COUNTS]], %[[PROPOSALS]], %[[FWD]]#2, %[[MODULE]]#1

// CHECK-LABEL: func.func @decoder_module_prefill(
// CHECK-SAME: -> i64 attributes {llvm.emit_c_interface, spec.slot_cache_shape = array<i64: 2, 2, 1, 2, 64, 8>}
// CHECK-LABEL: func.func @decoder_spec_round(
// CHECK-SAME: -> (tensor<?x2xi64>, tensor<?xi64>, tensor<?x1xi64>) attributes {llvm.emit_c_interface

// -----

// Sampled: the module's prefill draws with its key and returns the
// distribution; the speculative round takes each proposal's distribution,
// accepts by rejection sampling with the round's last key and draws the
// next proposal with the round key + 1.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @module(tensor<?x?x4xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
func.func private @target_slots(
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>},
        !spec.kv_cache<2x4x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>, spec.slots = 4 : i64}
func.func private @module_slots(
    tensor<?x?x4xf32> {spec.io = #spec.io<previous_hidden_states>},
    tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
    index {spec.io = #spec.io<first_slot>},
    tensor<?xi64> {spec.io = #spec.io<past_lengths>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x1x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<mtp_module, depth = 1>, spec.slots = 4 : i64}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module]>) verify(#spec.rejection<temperature = 0.7>) {spec.slot_target = @target_slots, spec.slot_draft = @module_slots}

// CHECK-LABEL: func.func private @decoder_module_prefill_step(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi64>, %[[KEY:[^:]*]]: i64) -> (i64, tensor<16xf32>, !spec.kv_cache<2x1x2x64x8xf32>)
// CHECK: %[[T:.*]], %[[P:.*]] = spec.propose %{{.*}} key(%[[KEY]]) rule(#spec.rejection<temperature = 0.7>)
// CHECK: %[[Q:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2]] : tensor<1x1x16xf32> into tensor<16xf32>
// CHECK: return %{{.*}}, %[[Q]], %{{.*}}

// CHECK-LABEL: func.func private @decoder_spec_round_step(
// CHECK-SAME: %{{[^:]*}}: tensor<?x1xi64>, %[[QIN:[^:]*]]: tensor<?x1x16xf32>, %[[KEYS:[^:]*]]: tensor<?xi64>) -> (tensor<?x2xi64>, tensor<?xi64>, tensor<?x1xi64>, tensor<?x1x16xf32>, !spec.kv_cache<2x4x2x64x8xf32>, !spec.kv_cache<2x1x2x64x8xf32>)
// CHECK: spec.verify @target_slots(
// CHECK: tensor.extract_slice %[[QIN]]
// CHECK: %[[RK:.*]] = tensor.extract %[[KEYS]]
// CHECK: %[[LAST:.*]] = arith.addi %[[RK]], %c1048575_i64
// CHECK: spec.accept {{.*}} key(%[[LAST]]) rule(#spec.rejection<temperature = 0.7>)
// CHECK: call @module_slots(
// CHECK: %[[K:.*]] = tensor.extract %[[KEYS]]
// CHECK: %[[NEXTKEY:.*]] = arith.addi %[[K]], %c1_i64
// CHECK: spec.propose %{{.*}} key(%[[NEXTKEY]]) rule(#spec.rejection<temperature = 0.7>)
// CHECK: %[[QOUT:.*]] = tensor.cast %{{.*}} : tensor<?x1x16xf32> to tensor<?x1x16xf32>
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[QOUT]], %{{.*}}, %{{.*}}
