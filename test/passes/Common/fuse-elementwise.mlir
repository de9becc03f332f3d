// RUN: spec-opt %s --spec-fuse-elementwise -split-input-file -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-fuse-elementwise=max-concat-inputs=1 -split-input-file | FileCheck %s --check-prefix=NOCONCAT
// RUN: not spec-opt %s --spec-fuse-elementwise=max-concat-inputs=-1 -split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// The pass refuses only a negative max-concat-inputs (NEGATIVE above);
// anything it cannot fuse is left as it is (no -invalid test).

// NEGATIVE: spec-fuse-elementwise: max-concat-inputs must be 0 (none) or positive, got -1

// An elementwise chain on the same iteration space is one op: the exp and
// the product in one body, no generic between them or after.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.exp
// CHECK-NOT: linalg.generic
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @chain(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%0, %y : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// Refused: the rotary embedding of the queries (q * cos) feeding the product
// with the keys, whose loop over key positions j does not index q. Fused,
// q * cos would be recomputed for every j; it stays its own op.
// CHECK-LABEL: func.func @producer_of_a_contraction
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
func.func @producer_of_a_contraction(%q: tensor<4x32xf32>, %cos: tensor<4x32xf32>,
                                     %kt: tensor<32x16xf32>, %init: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x32xf32>
  %rq = linalg.generic {indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i, d)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%q, %cos : tensor<4x32xf32>, tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<4x32xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (d, j)>, affine_map<(i, j, d) -> (i, j)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%rq, %kt : tensor<4x32xf32>, tensor<32x16xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// Refused: a broadcast. exp(x[i]) is computed once per i, not once per (i, j).
// CHECK-LABEL: func.func @producer_of_a_broadcast
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK: arith.addf
func.func @producer_of_a_broadcast(%x: tensor<4xf32>, %y: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<4xf32>, tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// A generic that yields one constant everywhere is that constant, so the
// shape arithmetic the importer computes with it (a rotary embedding's half
// width, 32 / 2) folds, and canonicalization then sizes the slices
// statically.
// CHECK-LABEL: func.func @constant_generic
// CHECK-NOT: linalg.generic
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK-NOT: linalg.generic
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %{{.*}}[0, %[[C16]]] [%{{.*}}, %[[C16]]] [1, 1]
// CHECK: return %[[SLICE]]
func.func @constant_generic(%x: tensor<?x32xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : i64
  %e = tensor.empty() : tensor<i64>
  %half = linalg.generic {indexing_maps = [affine_map<() -> ()>],
                          iterator_types = []}
      outs(%e : tensor<i64>) {
  ^bb0(%o: i64):
    linalg.yield %c16 : i64
  } -> tensor<i64>
  %h = tensor.extract %half[] : tensor<i64>
  %offset = arith.index_cast %h : i64 to index
  %rows = tensor.dim %x, %c0 : tensor<?x32xf32>
  %slice = tensor.extract_slice %x[0, %offset] [%rows, %offset] [1, 1] : tensor<?x32xf32> to tensor<?x?xf32>
  return %slice : tensor<?x?xf32>
}

// A generic whose elements differ is not folded.
// CHECK-LABEL: func.func @index_generic
// CHECK: linalg.generic
func.func @index_generic() -> tensor<4xi64> {
  %e = tensor.empty() : tensor<4xi64>
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      outs(%e : tensor<4xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A concatenation read by an elementwise op is computed piecewise: the
// rotary embedding x * cos + concat(-x_hi, x_lo) * sin becomes one op per
// half, each on slices of x, cos and sin and writing its slice of the
// output; the negation fuses into the first piece. Nothing is concatenated.
// CHECK-LABEL: func.func @rotary_pieces(
// CHECK-SAME: %[[X:[^:]*]]: tensor<3x2x8xf32>, %[[COS:[^:]*]]: tensor<3x1x8xf32>, %[[SIN:[^:]*]]: tensor<3x1x8xf32>
// CHECK-NOT: tensor.concat
// CHECK: %[[XHI:.*]] = tensor.extract_slice %[[X]][0, 0, 4] [3, 2, 4] [1, 1, 1]
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<3x2x8xf32>
// CHECK: %[[XLO:.*]] = tensor.extract_slice %[[X]][0, 0, 0] [3, 2, 4] [1, 1, 1]
// CHECK: %[[COSLO:.*]] = tensor.extract_slice %[[COS]][0, 0, 0] [3, 1, 4] [1, 1, 1]
// CHECK: %[[SINLO:.*]] = tensor.extract_slice %[[SIN]][0, 0, 0] [3, 1, 4] [1, 1, 1]
// CHECK: %[[LO:.*]] = linalg.generic {{.*}} ins(%[[XLO]], %[[COSLO]], %[[XHI]], %[[SINLO]] : tensor<3x2x4xf32>, tensor<3x1x4xf32>, tensor<3x2x4xf32>, tensor<3x1x4xf32>)
// CHECK: arith.negf
// CHECK: %[[OUT:.*]] = tensor.insert_slice %[[LO]] into %[[INIT]][0, 0, 0] [3, 2, 4] [1, 1, 1]
// CHECK: %[[XHI2:.*]] = tensor.extract_slice %[[X]][0, 0, 4] [3, 2, 4] [1, 1, 1]
// CHECK: %[[COSHI:.*]] = tensor.extract_slice %[[COS]][0, 0, 4] [3, 1, 4] [1, 1, 1]
// CHECK: %[[SINHI:.*]] = tensor.extract_slice %[[SIN]][0, 0, 4] [3, 1, 4] [1, 1, 1]
// CHECK: %[[HI:.*]] = linalg.generic {{.*}} ins(%[[XHI2]], %[[COSHI]], %{{.*}}, %[[SINHI]] : tensor<3x2x4xf32>, tensor<3x1x4xf32>, tensor<3x2x4xf32>, tensor<3x1x4xf32>)
// CHECK-NOT: arith.negf
// CHECK: linalg.yield
// CHECK: %[[OUT2:.*]] = tensor.insert_slice %[[HI]] into %[[OUT]][0, 0, 4] [3, 2, 4] [1, 1, 1]
// CHECK: return %[[OUT2]]
// NOCONCAT-LABEL: func.func @rotary_pieces(
// NOCONCAT: tensor.concat dim(2)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
func.func @rotary_pieces(%x: tensor<3x2x8xf32>, %cos: tensor<3x1x8xf32>, %sin: tensor<3x1x8xf32>) -> tensor<3x2x8xf32> {
  %hi = tensor.extract_slice %x[0, 0, 4] [3, 2, 4] [1, 1, 1] : tensor<3x2x8xf32> to tensor<3x2x4xf32>
  %lo = tensor.extract_slice %x[0, 0, 0] [3, 2, 4] [1, 1, 1] : tensor<3x2x8xf32> to tensor<3x2x4xf32>
  %e = tensor.empty() : tensor<3x2x4xf32>
  %neg = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%hi : tensor<3x2x4xf32>) outs(%e : tensor<3x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<3x2x4xf32>
  %rot = tensor.concat dim(2) %neg, %lo : (tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x8xf32>
  %oe = tensor.empty() : tensor<3x2x8xf32>
  %out = linalg.generic {indexing_maps = [#id3, #bc3, #id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %cos, %rot, %sin : tensor<3x2x8xf32>, tensor<3x1x8xf32>, tensor<3x2x8xf32>, tensor<3x1x8xf32>) outs(%oe : tensor<3x2x8xf32>) {
  ^bb0(%a: f32, %c: f32, %r: f32, %s: f32, %o: f32):
    %m1 = arith.mulf %r, %s : f32
    %m2 = arith.mulf %a, %c : f32
    %sum = arith.addf %m2, %m1 : f32
    linalg.yield %sum : f32
  } -> tensor<3x2x8xf32>
  return %out : tensor<3x2x8xf32>
}

// -----

// A result inserted into a larger tensor (a KV cache, here rank-reducing):
// the pieces are inserted into it directly, dynamic sizes included (their
// outs become empty tensors, which empty-tensor elimination turns into the
// cache's slices), not into a full-size result that would be copied.
// CHECK-LABEL: func.func @pieces_into_a_cache(
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<2x2x16x4xf32>, %[[AT:[^:]*]]: index
// CHECK-NOT: tensor.concat
// CHECK: %[[P0:.*]] = linalg.generic
// CHECK: } -> tensor<2x?x2xf32>
// CHECK: %[[C0:.*]] = tensor.insert_slice %[[P0]] into %[[CACHE]][1, 0, %[[AT]], 0] [1, 2, %{{.*}}, 2] [1, 1, 1, 1]
// CHECK: %[[P1:.*]] = linalg.generic
// CHECK: } -> tensor<2x?x2xf32>
// CHECK: %[[C1:.*]] = tensor.insert_slice %[[P1]] into %[[C0]][1, 0, %[[AT]], 2] [1, 2, %{{.*}}, 2] [1, 1, 1, 1]
// CHECK: return %[[C1]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @pieces_into_a_cache(%cache: tensor<2x2x16x4xf32>, %at: index, %a: tensor<2x?x2xf32>, %b: tensor<2x?x2xf32>, %x: tensor<2x?x4xf32>) -> tensor<2x2x16x4xf32> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<2x?x4xf32>
  %cat = tensor.concat dim(2) %a, %b : (tensor<2x?x2xf32>, tensor<2x?x2xf32>) -> tensor<2x?x4xf32>
  %e = tensor.empty(%n) : tensor<2x?x4xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %cat : tensor<2x?x4xf32>, tensor<2x?x4xf32>) outs(%e : tensor<2x?x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x?x4xf32>
  %written = tensor.insert_slice %sum into %cache[1, 0, %at, 0] [1, 2, %n, 4] [1, 1, 1, 1] : tensor<2x?x4xf32> into tensor<2x2x16x4xf32>
  return %written : tensor<2x2x16x4xf32>
}

// -----

// Refused: a concatenation with another use (it would still be built), and
// one read along a reduction (the pieces' results would have to be summed).
// CHECK-LABEL: func.func @concat_used_twice
// CHECK: tensor.concat
// CHECK-LABEL: func.func @concat_along_a_reduction
// CHECK: tensor.concat
func.func @concat_used_twice(%a: tensor<4x2xf32>, %b: tensor<4x2xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %cat = tensor.concat dim(1) %a, %b : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %exp = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%cat : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %exp, %cat : tensor<4x4xf32>, tensor<4x4xf32>
}
func.func @concat_along_a_reduction(%a: tensor<4x2xf32>, %b: tensor<4x2xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%cat : tensor<4x4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %sum : tensor<4xf32>
}

// -----

// Refused: a body that reads the index of the split loop (a piece's
// indices would start at 0).
// CHECK-LABEL: func.func @concat_with_its_index_read
// CHECK: tensor.concat
func.func @concat_with_its_index_read(%a: tensor<4x2xf32>, %b: tensor<4x2xf32>) -> tensor<4x4xf32> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%cat : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %s = arith.addf %v, %jf : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// A body that reads its output (here, accumulating into the init) inserted
// into a larger tensor: the pieces start from slices of the init, not of
// the larger tensor.
// CHECK-LABEL: func.func @accumulating_pieces(
// CHECK-SAME: %[[BIG:[^:]*]]: tensor<8x4xf32>, %{{[^:]*}}: tensor<4x2xf32>, %{{[^:]*}}: tensor<4x2xf32>, %[[INIT:[^:]*]]: tensor<4x4xf32>
// CHECK-NOT: tensor.concat
// CHECK: %[[I0:.*]] = tensor.extract_slice %[[INIT]][0, 0] [4, 2] [1, 1]
// CHECK: linalg.generic {{.*}} outs(%[[I0]] : tensor<4x2xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 2] [4, 2] [1, 1]
// CHECK: %[[R:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 2] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x4xf32>
// CHECK: tensor.insert_slice %[[R]] into %[[BIG]][4, 0] [4, 4] [1, 1]
func.func @accumulating_pieces(%big: tensor<8x4xf32>, %a: tensor<4x2xf32>, %b: tensor<4x2xf32>, %init: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%cat : tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %w = tensor.insert_slice %r into %big[4, 0] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<8x4xf32>
  return %w : tensor<8x4xf32>
}
