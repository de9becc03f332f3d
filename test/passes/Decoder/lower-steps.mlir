// RUN: spec-opt %s --spec-lower-steps -split-input-file \
// RUN:   | FileCheck %s --implicit-check-not='= spec.' --implicit-check-not=spec.decoder
// RUN: spec-opt %s --spec-lower-steps=argmax-lanes=16 -split-input-file \
// RUN:   | FileCheck %s --check-prefix=LANES

// Caches become tensors<2 x layers x heads x capacity x dim> everywhere.
// CHECK-LABEL: func.func private @target(
// CHECK-SAME: tensor<?x?xi64>, tensor<2x2x2x16x4xf32>, index) -> (tensor<1x?x8xf32>, tensor<2x2x2x16x4xf32>)
func.func private @target(tensor<?x?xi64>, !spec.kv_cache<2x2x16x4xf32>, index)
    -> (tensor<1x?x8xf32>, !spec.kv_cache<2x2x16x4xf32>)
    attributes {spec.role = #spec.role<target>}

// -----

// Writes are insert_slices of one batch row at the position, in the values
// half (1) and layer 1; reads are extract_slices of the first positions.
// CHECK-LABEL: func.func @cache(
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<2x2x2x16x4xf32>, %[[POS:[^:]*]]: index, %[[NEW:[^:]*]]: tensor<?x2x?x4xf32>, %[[LEN:[^:]*]]: index
func.func @cache(%cache: !spec.kv_cache<2x2x16x4xf32>, %pos: index,
                 %new: tensor<?x2x?x4xf32>, %len: index) -> tensor<1x2x?x4xf32> {
  // CHECK-NEXT: %[[ROW:.*]] = tensor.cast %[[NEW]] : tensor<?x2x?x4xf32> to tensor<1x2x?x4xf32>
  // CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : index
  // CHECK-NEXT: %[[N:.*]] = tensor.dim %[[ROW]], %[[C2]]
  // CHECK-NEXT: %[[W:.*]] = tensor.insert_slice %[[ROW]] into %[[CACHE]][1, 1, 0, %[[POS]], 0] [1, 1, 2, %[[N]], 4] [1, 1, 1, 1, 1] : tensor<1x2x?x4xf32> into tensor<2x2x2x16x4xf32>
  %w = spec.cache.write %cache values layer 1 at %pos, %new
      : !spec.kv_cache<2x2x16x4xf32>, tensor<?x2x?x4xf32>
  // CHECK-NEXT: %[[R:.*]] = tensor.extract_slice %[[W]][1, 1, 0, 0, 0] [1, 1, 2, %[[LEN]], 4] [1, 1, 1, 1, 1] : tensor<2x2x2x16x4xf32> to tensor<1x2x?x4xf32>
  %r = spec.cache.read %w values layer 1 length %len
      : !spec.kv_cache<2x2x16x4xf32> -> tensor<1x2x?x4xf32>
  // CHECK-NEXT: return %[[R]]
  return %r : tensor<1x2x?x4xf32>
}

// -----

// A cache of slots: a write is a loop over the batch, row b into slot
// first + b at its past length; a read is one view of the batch's slots.
// CHECK-LABEL: func.func @slots(
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<2x2x3x2x16x4xf32>, %[[FIRST:[^:]*]]: index, %[[LENGTHS:[^:]*]]: tensor<?xi64>, %[[NEW:[^:]*]]: tensor<?x2x?x4xf32>, %[[COUNT:[^:]*]]: index, %[[LEN:[^:]*]]: index
func.func @slots(%cache: !spec.kv_cache<2x3x2x16x4xf32>, %first: index,
                 %lengths: tensor<?xi64>, %new: tensor<?x2x?x4xf32>,
                 %count: index, %len: index) -> tensor<?x2x?x4xf32> {
  // CHECK: %[[ROWS:.*]] = tensor.dim %[[NEW]], %{{.*}} : tensor<?x2x?x4xf32>
  // CHECK: %[[N:.*]] = tensor.dim %[[NEW]], %{{.*}} : tensor<?x2x?x4xf32>
  // CHECK: %[[W:.*]] = scf.for %[[B:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%[[C:.*]] = %[[CACHE]]) -> (tensor<2x2x3x2x16x4xf32>) {
  // CHECK-NEXT: %[[L:.*]] = tensor.extract %[[LENGTHS]][%[[B]]] : tensor<?xi64>
  // CHECK-NEXT: %[[AT:.*]] = arith.index_cast %[[L]] : i64 to index
  // CHECK-NEXT: %[[SLOT:.*]] = arith.addi %[[FIRST]], %[[B]] : index
  // CHECK-NEXT: %[[ROW:.*]] = tensor.extract_slice %[[NEW]][%[[B]], 0, 0, 0] [1, 2, %[[N]], 4] [1, 1, 1, 1] : tensor<?x2x?x4xf32> to tensor<1x2x?x4xf32>
  // CHECK-NEXT: %[[NEXT:.*]] = tensor.insert_slice %[[ROW]] into %[[C]][0, 1, %[[SLOT]], 0, %[[AT]], 0] [1, 1, 1, 2, %[[N]], 4] [1, 1, 1, 1, 1, 1] : tensor<1x2x?x4xf32> into tensor<2x2x3x2x16x4xf32>
  // CHECK-NEXT: scf.yield %[[NEXT]]
  %w = spec.cache.write_slots %cache keys layer 1 slots %first lengths %lengths, %new
      : !spec.kv_cache<2x3x2x16x4xf32>, tensor<?xi64>, tensor<?x2x?x4xf32>
  // CHECK: %[[R:.*]] = tensor.extract_slice %[[W]][0, 1, %[[FIRST]], 0, 0, 0] [1, 1, %[[COUNT]], 2, %[[LEN]], 4] [1, 1, 1, 1, 1, 1] : tensor<2x2x3x2x16x4xf32> to tensor<?x2x?x4xf32>
  %r = spec.cache.read_slots %w keys layer 1 slots %first count %count length %len
      : !spec.kv_cache<2x3x2x16x4xf32> -> tensor<?x2x?x4xf32>
  // CHECK-NEXT: return %[[R]]
  return %r : tensor<?x2x?x4xf32>
}

// -----

// A move is a loop over the rows to move: every layer's keys and values at
// position from[i] are copied to position to + i.
// CHECK-LABEL: func.func @move(
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<2x2x2x16x4xf32>, %[[FROM:[^:]*]]: tensor<?xindex>, %[[TO:[^:]*]]: index
func.func @move(%cache: !spec.kv_cache<2x2x16x4xf32>, %from: tensor<?xindex>,
                %to: index) -> !spec.kv_cache<2x2x16x4xf32> {
  // CHECK: %[[COUNT:.*]] = tensor.dim %[[FROM]], %{{.*}} : tensor<?xindex>
  // CHECK: %[[MOVED:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%[[C:.*]] = %[[CACHE]]) -> (tensor<2x2x2x16x4xf32>) {
  // CHECK-NEXT: %[[SRC:.*]] = tensor.extract %[[FROM]][%[[I]]] : tensor<?xindex>
  // CHECK-NEXT: %[[DST:.*]] = arith.addi %[[TO]], %[[I]] : index
  // CHECK-NEXT: %[[ROW:.*]] = tensor.extract_slice %[[C]][0, 0, 0, %[[SRC]], 0] [2, 2, 2, 1, 4] [1, 1, 1, 1, 1] : tensor<2x2x2x16x4xf32> to tensor<2x2x2x1x4xf32>
  // CHECK-NEXT: %[[NEXT:.*]] = tensor.insert_slice %[[ROW]] into %[[C]][0, 0, 0, %[[DST]], 0] [2, 2, 2, 1, 4] [1, 1, 1, 1, 1] : tensor<2x2x2x1x4xf32> into tensor<2x2x2x16x4xf32>
  // CHECK-NEXT: scf.yield %[[NEXT]]
  %moved = spec.cache.move %cache from %from to %to
      : !spec.kv_cache<2x2x16x4xf32>, tensor<?xindex>
  // CHECK: return %[[MOVED]]
  return %moved : !spec.kv_cache<2x2x16x4xf32>
}

// -----

// spec.verify is the call it names, with caches as tensors.
func.func private @target(tensor<?x?xi64>, !spec.kv_cache<2x2x16x4xf32>, index)
    -> (tensor<1x?x8xf32>, !spec.kv_cache<2x2x16x4xf32>)
    attributes {spec.role = #spec.role<target>}
// CHECK-LABEL: func.func @verify(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<?x?xi64>, %[[CACHE:[^:]*]]: tensor<2x2x2x16x4xf32>, %[[LEN:[^:]*]]: index
func.func @verify(%ids: tensor<?x?xi64>, %cache: !spec.kv_cache<2x2x16x4xf32>,
                  %len: index) -> tensor<1x?x8xf32> {
  // CHECK-NEXT: %[[V:.*]]:2 = call @target(%[[IDS]], %[[CACHE]], %[[LEN]]) : (tensor<?x?xi64>, tensor<2x2x2x16x4xf32>, index) -> (tensor<1x?x8xf32>, tensor<2x2x2x16x4xf32>)
  %v:2 = spec.verify @target(%ids, %cache, %len)
      : (tensor<?x?xi64>, !spec.kv_cache<2x2x16x4xf32>, index)
      -> (tensor<1x?x8xf32>, !spec.kv_cache<2x2x16x4xf32>)
  // CHECK-NEXT: return %[[V]]#0
  return %v#0 : tensor<1x?x8xf32>
}

// -----

// Greedy accept: the target's first argmax per row, the longest prefix of
// equal proposals, then the target's token after it.
// CHECK-LABEL: func.func @greedy_accept(
func.func @greedy_accept(%proposals: tensor<2xi64>, %rows: tensor<3x8xf32>)
    -> (index, i64) {
  // CHECK: %[[ARG:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<3x8xf32>)
  // CHECK: arith.cmpf ogt
  // CHECK: %[[PREFIX:.*]]:2 = scf.for
  // CHECK: arith.cmpi eq
  // CHECK: %[[NEXT:.*]] = tensor.extract %[[ARG]]#1[%[[PREFIX]]#0] : tensor<3xi64>
  %n, %next = spec.accept %proposals, %rows rule(#spec.greedy)
      : tensor<2xi64>, tensor<3x8xf32>
  // CHECK-NEXT: return %[[PREFIX]]#0, %[[NEXT]] : index, i64
  return %n, %next : index, i64
}

// -----

// Greedy propose: the argmax, and a one-hot q. With argmax-lanes, each row
// in vectors: lane maxima and first columns over the whole chunks, the
// partial chunk read with -inf padding, then the smallest column holding the
// row's maximum (column 0 when every value is -inf or NaN, or it is NaN).
// CHECK-LABEL: func.func @greedy_propose(
// LANES-LABEL: func.func @greedy_propose(
// LANES-NOT: linalg.generic
// LANES: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// LANES: %[[TOKENS:.*]] = scf.for %[[ROW:.*]] = {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<2xi64>)
// LANES: %[[FULL:.*]]:2 = scf.for %[[COL:.*]] = %{{.*}} to %{{.*}} step %c16 iter_args({{.*}}) -> (vector<16xf32>, vector<16xi64>)
// LANES: vector.transfer_read %{{.*}}[%[[ROW]], %[[COL]]], %[[NEGINF]] {in_bounds = [true]} : tensor<2x8xf32>, vector<16xf32>
// LANES: %[[TAKE:.*]] = arith.cmpf ogt
// LANES: arith.select %[[TAKE]]
// LANES: arith.select %[[TAKE]]
// LANES: %[[LAST:.*]]:2 = scf.if
// LANES: vector.transfer_read %{{.*}}, %[[NEGINF]] : tensor<2x8xf32>, vector<16xf32>
// LANES: %[[MAX:.*]] = vector.reduction <maxnumf>, %[[LAST]]#0
// LANES: vector.reduction <minsi>
// LANES: arith.cmpf uno
// LANES: arith.cmpf oeq, %[[MAX]], %[[NEGINF]]
// LANES: tensor.insert
// LANES: tensor.generate
// LANES: return %[[TOKENS]], %{{.*}} : tensor<2xi64>, tensor<2x8xf32>
func.func @greedy_propose(%logits: tensor<2x8xf32>)
    -> (tensor<2xi64>, tensor<2x8xf32>) {
  // CHECK: %[[ARG:.*]]:2 = linalg.generic
  // CHECK: %[[Q:.*]] = tensor.generate
  // CHECK: return %[[ARG]]#1, %[[Q]]
  %t, %q = spec.propose %logits rule(#spec.greedy)
      : tensor<2x8xf32> -> tensor<2xi64>, tensor<2x8xf32>
  return %t, %q : tensor<2xi64>, tensor<2x8xf32>
}

// -----

// Greedy picks of a batch: any number of rows (the sizes read off the
// logits).
// CHECK-LABEL: func.func @greedy_batch(
// CHECK-SAME: %[[LOGITS:[^:]*]]: tensor<?x8xf32>
// CHECK: %[[ROWS:.*]] = tensor.dim %[[LOGITS]], %{{.*}} : tensor<?x8xf32>
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK: %[[ARG:.*]]:2 = linalg.generic {{.*}} ins(%[[LOGITS]] : tensor<?x8xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[LOGITS]], %{{.*}} : tensor<?x8xf32>
// CHECK: tensor.generate %[[N]]
// CHECK: return %[[ARG]]#1
// LANES-LABEL: func.func @greedy_batch(
// LANES: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<?xi64>)
func.func @greedy_batch(%logits: tensor<?x8xf32>) -> tensor<?xi64> {
  %t, %q = spec.propose %logits rule(#spec.greedy)
      : tensor<?x8xf32> -> tensor<?xi64>, tensor<?x8xf32>
  return %t : tensor<?xi64>
}

// -----

// An allocated cache starts as zeros; the decoder description is dropped.
func.func private @target(tensor<?x?xi64>, !spec.kv_cache<2x2x16x4xf32>, index)
    -> (tensor<1x?x8xf32>, !spec.kv_cache<2x2x16x4xf32>)
    attributes {spec.role = #spec.role<target>}
// CHECK-LABEL: func.func @fresh
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x2x2x16x4xf32>)
func.func @fresh() -> !spec.kv_cache<2x2x16x4xf32> {
  %c = spec.cache.alloc : !spec.kv_cache<2x2x16x4xf32>
  return %c : !spec.kv_cache<2x2x16x4xf32>
}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<draft>}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

// Rejection sampling: q = softmax(logits / T) sampled by inverse CDF with
// splitmix64 uniforms; accept with min(1, p(x) / q(x)), resample from
// max(0, p - q), or draw the bonus token from the last row.
// CHECK-LABEL: func.func @sampling(
func.func @sampling(%logits: tensor<2x8xf32>, %rows: tensor<3x8xf32>,
                    %key: i64) -> (index, i64) {
  // CHECK: math.exp
  // CHECK: arith.constant -7046029254386353131 : i64
  // CHECK: scf.for
  // CHECK: arith.cmpf olt
  %t, %q = spec.propose %logits key(%key) rule(#spec.rejection<temperature = 0.5>)
      : tensor<2x8xf32> -> tensor<2xi64>, tensor<2x8xf32>
  // CHECK: %[[ACCEPT:.*]]:3 = scf.for {{.*}} -> (index, i1, i64)
  // CHECK: arith.mulf
  // CHECK: arith.cmpf olt
  // CHECK: arith.maximumf
  // CHECK: arith.select %[[ACCEPT]]#1, %[[ACCEPT]]#2, %{{.*}} : i64
  %n, %next = spec.accept %t, %rows probs(%q : tensor<2x8xf32>) key(%key)
      rule(#spec.rejection<temperature = 0.5>) : tensor<2xi64>, tensor<3x8xf32>
  return %n, %next : index, i64
}

// -----

// Top-k, then top-p: per row, 32 bisection steps over the probabilities'
// bit patterns (counting entries, then summing their mass, at or above the
// candidate threshold); entries below the threshold become 0 and the rest
// is renormalized before sampling.
// CHECK-LABEL: func.func @filtered(
func.func @filtered(%logits: tensor<1x8xf32>, %key: i64) -> tensor<1xi64> {
  // CHECK: math.exp
  // CHECK: %[[HI:.*]] = arith.constant 1065353217 : i32
  // CHECK: scf.for %{{.*}} = %{{.*}} to %c32 step %{{.*}} iter_args(%{{.*}} = %c0_i32, %{{.*}} = %[[HI]]) -> (i32, i32)
  // CHECK: arith.bitcast %{{.*}} : i32 to f32
  // CHECK: scf.for {{.*}} -> (i64)
  // CHECK: arith.cmpf oge
  // CHECK: arith.cmpi sge, %{{.*}}, %c3_i64 : i64
  // CHECK: arith.bitcast %{{.*}}#0 : i32 to f32
  // CHECK: arith.divf
  // CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (i32, i32)
  // CHECK: scf.for {{.*}} -> (f64)
  // CHECK: arith.cmpf oge, %{{.*}}, %{{.*}} : f64
  // CHECK: arith.divf
  %t, %q = spec.propose %logits key(%key) rule(#spec.rejection<temperature = 1.0, top_k = 3, top_p = 0.9>)
      : tensor<1x8xf32> -> tensor<1xi64>, tensor<1x8xf32>
  return %t : tensor<1xi64>
}
