// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-interchange-contractions))' | FileCheck %s
// RUN: spec-opt %s --spec-graph-to-llvm="interchange-contractions=false block-contractions=false" -mlir-disable-threading -mlir-print-ir-before=convert-linalg-to-loops 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF
// RUN: spec-opt %s --spec-graph-to-llvm=block-contractions=false -mlir-disable-threading -mlir-print-ir-before=convert-linalg-to-loops 2>&1 >/dev/null | FileCheck %s --check-prefix=ON

// The pass has no options and refuses nothing: a contraction it cannot
// interchange is left as it is (no -invalid test).

// A batched MatMul as the importer writes it, (b, m, n, k): the reduction k
// moves before n, the output's innermost dimension. The body is unchanged;
// the maps follow the new loop order.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[W:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
func.func @matmul(%x: tensor<1x?x128xf32>, %w: tensor<128x64xf32>, %init: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (k, n)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x?x128xf32>, tensor<128x64xf32>) outs(%init : tensor<1x?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x?x64xf32>
  return %0 : tensor<1x?x64xf32>
}

// A row reduction (the output's innermost dimension is not a loop) and an
// op with two reductions stay as they are.
// CHECK-LABEL: func.func @row_sum
// CHECK: iterator_types = ["parallel", "reduction"]
func.func @row_sum(%x: tensor<4x8xf32>, %init: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m, 0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// CHECK-LABEL: func.func @two_reductions
// CHECK: iterator_types = ["parallel", "reduction", "reduction"]
func.func @two_reductions(%x: tensor<4x8x2xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(m, k, l) -> (m, k, l)>, affine_map<(m, k, l) -> (m)>],
      iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<4x8x2xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// The spec-graph-to-llvm option turns the pass off.
// OFF-LABEL: func.func @matmul
// OFF: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// ON-LABEL: func.func @matmul
// ON: iterator_types = ["parallel", "parallel", "reduction", "parallel"]
