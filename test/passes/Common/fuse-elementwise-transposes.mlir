// RUN: spec-opt %s --spec-fuse-elementwise=fold-transposes=true -split-input-file | FileCheck %s
// RUN: spec-opt %s --spec-fuse-elementwise -split-input-file | FileCheck %s --check-prefix=KEPT

// The rotary embedding's halves of the transposed queries: each slice of
// the transpose becomes a transpose of the slice of the projection, and the
// elementwise op reads that slice through the permuted map. Nothing is
// transposed; by default the transpose stays.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-DAG: #[[SWAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-LABEL: func.func @halves(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<1x?x4x32xf32>
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[HIGH:.+]] = tensor.extract_slice %[[Q]][0, 0, 0, 16] [1, %{{.+}}, 4, 16] [1, 1, 1, 1]
// CHECK-DAG: %[[LOW:.+]] = tensor.extract_slice %[[Q]][0, 0, 0, 0] [1, %{{.+}}, 4, 16] [1, 1, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[SWAP]], #[[SWAP]], #{{.+}}], {{.+}} ins(%[[HIGH]], %[[LOW]] : tensor<1x?x4x16xf32>, tensor<1x?x4x16xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
// KEPT-LABEL: func.func @halves(
// KEPT: linalg.transpose
func.func @halves(%q: tensor<1x?x4x32xf32>) -> tensor<1x4x?x16xf32> {
  %c1 = arith.constant 1 : index
  %s = tensor.dim %q, %c1 : tensor<1x?x4x32xf32>
  %e = tensor.empty(%s) : tensor<1x4x?x32xf32>
  %t = linalg.transpose ins(%q : tensor<1x?x4x32xf32>) outs(%e : tensor<1x4x?x32xf32>) permutation = [0, 2, 1, 3]
  %high = tensor.extract_slice %t[0, 0, 0, 16] [1, 4, %s, 16] [1, 1, 1, 1] : tensor<1x4x?x32xf32> to tensor<1x4x?x16xf32>
  %low = tensor.extract_slice %t[0, 0, 0, 0] [1, 4, %s, 16] [1, 1, 1, 1] : tensor<1x4x?x32xf32> to tensor<1x4x?x16xf32>
  %o = tensor.empty(%s) : tensor<1x4x?x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%high, %low : tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) outs(%o : tensor<1x4x?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %n = arith.negf %a : f32
    %m = arith.mulf %n, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x4x?x16xf32>
  return %r : tensor<1x4x?x16xf32>
}

// -----

// A contraction reading a transpose keeps it (the attention passes match
// the transposes their contractions read), and so does a rank-reducing
// slice of one.
// CHECK-LABEL: func.func @contraction(
// CHECK: linalg.transpose
// CHECK: linalg.generic
// CHECK-LABEL: func.func @rank_reducing(
// CHECK: linalg.transpose
// CHECK: tensor.extract_slice
func.func @contraction(%k: tensor<8x16xf32>, %q: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %kt : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
func.func @rank_reducing(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %row = tensor.extract_slice %t[3, 0] [1, 8] [1, 1] : tensor<16x8xf32> to tensor<8xf32>
  return %row : tensor<8xf32>
}
