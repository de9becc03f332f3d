// RUN: spec-opt %s --spec-fuse-elementwise -split-input-file -verify-diagnostics | FileCheck %s

// An elementwise chain on the same iteration space is one op.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
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
