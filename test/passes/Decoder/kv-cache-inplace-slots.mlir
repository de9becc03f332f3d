// RUN: spec-opt %s --spec-kv-cache-inplace="slots=4" | FileCheck %s
// RUN: spec-opt %s --spec-kv-cache-inplace="slots=8 capacity=32" | FileCheck %s --check-prefix=SIZES

// A one-layer decoder with a cache of slots: each row of the batch is a
// sequence in its own slot at its own past length. The causal mask the
// model computes for one sequence (`Where(key_pos > query_pos, -inf,
// scores)`, broadcast over the batch) becomes one per row, from the row's
// past length.
#query = affine_map<(d0, d1) -> (d0, 0)>
#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#scalar = affine_map<(d0, d1, d2, d3) -> ()>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK: #[[PERROW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @target(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
// CHECK-SAME: %[[NEWK:[^:]*]]: tensor<?x2x?x8xf32>, %[[NEWV:[^:]*]]: tensor<?x2x?x8xf32>,
// CHECK-SAME: %[[QPOS:[^:]*]]: tensor<?x1xi64>, %[[KPOS:[^:]*]]: tensor<1x?xi64>,
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<1x4x2x128x8xf32> {spec.io = #spec.io<kv_cache>},
// CHECK-SAME: %[[FIRST:[^:]*]]: index {spec.io = #spec.io<first_slot>},
// CHECK-SAME: %[[LENGTHS:[^:]*]]: tensor<?xi64> {spec.io = #spec.io<past_lengths>})
// The batch is the number of past lengths, the past the longest of them.
// CHECK: %[[BATCH:.*]] = tensor.dim %[[LENGTHS]], %c0
// CHECK: %[[PAST:.*]] = scf.for %[[I:.*]] = %c0 to %[[BATCH]] step %c1 iter_args(%[[LONGEST:.*]] = %c0)
// CHECK: %[[L:.*]] = tensor.extract %[[LENGTHS]][%[[I]]]
// CHECK: %[[LI:.*]] = arith.index_cast %[[L]] : i64 to index
// CHECK: %[[MAX:.*]] = arith.maxsi %[[LONGEST]], %[[LI]]
// CHECK: scf.yield %[[MAX]]
// Row b writes slot first + b at its length; the reads span the longest.
// CHECK: %[[WK:.*]] = spec.cache.write_slots %[[CACHE]] keys layer 0 slots %[[FIRST]] lengths %[[LENGTHS]], %[[NEWK]] : !spec.kv_cache<1x4x2x128x8xf32>, tensor<?xi64>, tensor<?x2x?x8xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[NEWK]], %c2
// CHECK: %[[TOTAL:.*]] = arith.addi %[[PAST]], %[[N]] : index
// CHECK: spec.cache.read_slots %[[WK]] keys layer 0 slots %[[FIRST]] count %[[BATCH]] length %[[TOTAL]] : !spec.kv_cache<1x4x2x128x8xf32> -> tensor<?x2x?x8xf32>
// CHECK: %[[WV:.*]] = spec.cache.write_slots %[[WK]] values layer 0 slots %[[FIRST]] lengths %[[LENGTHS]], %[[NEWV]]
// CHECK: spec.cache.read_slots %[[WV]] values layer 0 slots %[[FIRST]] count %[[BATCH]]
// The mask: key > past_lengths[b] + query, batch x queries x keys.
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[BATCH]], %{{.*}}, %{{.*}}) : tensor<?x?x?xi1>
// CHECK: %[[FUTURE:.*]] = linalg.generic {indexing_maps = [#[[ROW]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[LENGTHS]] : tensor<?xi64>) outs(%[[EMPTY]] : tensor<?x?x?xi1>)
// CHECK-NEXT: ^bb0(%[[LEN:[^:]*]]: i64, %{{.*}}: i1):
// CHECK-NEXT: %[[LENI:.*]] = arith.index_cast %[[LEN]] : i64 to index
// CHECK-NEXT: %[[Q:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[K:.*]] = linalg.index 2 : index
// CHECK-NEXT: %[[POS:.*]] = arith.addi %[[LENI]], %[[Q]] : index
// CHECK-NEXT: %[[LATER:.*]] = arith.cmpi sgt, %[[K]], %[[POS]] : index
// CHECK-NEXT: linalg.yield %[[LATER]] : i1
// The scores read row b's mask.
// CHECK: linalg.generic {indexing_maps = [#[[PERROW]], #{{.*}}, #{{.*}}, #{{.*}}]
// CHECK-SAME: ins(%[[FUTURE]], %{{.*}}, %{{.*}} : tensor<?x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>)
// CHECK-NOT: tensor.concat
// The batch read off the past's shape is the batch of past lengths.
// CHECK: return %{{.*}}, %[[BATCH]], %[[WV]]

// SIZES: !spec.kv_cache<1x8x2x32x8xf32>
func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                  %past_k: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new_k: tensor<?x2x?x8xf32>, %new_v: tensor<?x2x?x8xf32>,
                  %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>)
    -> (tensor<?x2x?x?xf32> {spec.io = #spec.io<logits>},
        tensor<?x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>},
        tensor<?x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>},
        index)
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 16, max_context = 128>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = tensor.dim %past_k, %c0 : tensor<?x2x?x8xf32>
  %keys = tensor.concat dim(2) %past_k, %new_k
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new_v
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %total = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %total) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #query, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %neg = arith.constant dense<0xFF800000> : tensor<f32>
  %scores = tensor.empty(%batch, %queries, %total) : tensor<?x2x?x?xf32>
  %empty = tensor.empty(%batch, %queries, %total) : tensor<?x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scalar, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %neg, %scores : tensor<?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>)
      outs(%empty : tensor<?x2x?x?xf32>) {
  ^bb0(%m: i1, %n: f32, %s: f32, %out: f32):
    %r = arith.select %m, %n, %s : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  return %masked, %keys, %values, %batch : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, index
}
