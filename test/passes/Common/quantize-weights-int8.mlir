// RUN: spec-opt %s --spec-quantize-weights='precision=int8 min-elements=8' -split-input-file | FileCheck %s
// RUN: spec-opt %s --spec-quantize-weights='precision=int8 min-elements=8' -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// int8: each output column n gets a scale, its largest magnitude / 127;
// the weights become round(w / scale), widened with sitofp in the body,
// and the column's scale multiplies the sum after the reduction, in place.
// Column 0 holds 1 and -2: scale 2/127, -2 -> -127, 1 -> 63.5 -> 64
// (nearest, ties to even); column 1 holds 2 and 1: 127 and 64. Column 3 is
// all zeros: scale 0, weights 0.

#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#wt = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @layer
// CHECK-DAG: %[[Q:.*]] = arith.constant dense<{{\[\[}}64, 127, 127, 0], [-127, 64, -64, 0]]> : tensor<2x4xi8>
// CHECK-DAG: %[[S:.*]] = arith.constant dense<[0.0157480314, 0.0157480314, 0.0236220472, 0.000000e+00]> : tensor<4xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[Q]] : tensor<?x2xf32>, tensor<2x4xi8>) outs(%[[FILL:.*]] : tensor<?x4xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: i8, %[[C:.*]]: f32):
// CHECK-NEXT: %[[WIDE:.*]] = arith.sitofp %[[B]] : i8 to f32
// CHECK-NEXT: arith.mulf %[[A]], %[[WIDE]] : f32
// CHECK: %[[SCALED:.*]] = linalg.generic {indexing_maps = [#[[COLUMN:.*]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[S]] : tensor<4xf32>) outs(%[[SUM]] : tensor<?x4xf32>)
// CHECK-NEXT: ^bb0(%[[SCALE:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[PRODUCT:.*]] = arith.mulf %[[OUT]], %[[SCALE]] : f32
// CHECK-NEXT: linalg.yield %[[PRODUCT]]
// CHECK: return %[[SCALED]]
func.func @layer(%x: tensor<?x2xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x2xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%rows) : tensor<?x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x4xf32>) -> tensor<?x4xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 0.0], [-2.0, 1.0, -1.5, 0.0]]> : tensor<2x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x2xf32>, tensor<2x4xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// A transposed weight (Gemm's transB: w[n, k]) is scaled along its first
// dimension. A contraction that accumulates into something other than
// zeros (its init an argument) keeps its weight: scaling after the sum
// would scale the init too.

#a = affine_map<(m, n, k) -> (m, k)>
#wt = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @transposed
// CHECK-DAG: arith.constant dense<{{\[\[}}127, -127], [127, 32], [0, 127], [0, 0]]> : tensor<4x2xi8>
// CHECK-DAG: arith.constant dense<[0.00787401571, 0.0314960629, 0.0236220472, 0.000000e+00]> : tensor<4xf32>
// CHECK-LABEL: func.func @accumulating
// CHECK: arith.constant dense<{{.*}}> : tensor<4x2xf32>
// CHECK-NOT: i8
// CHECK: return
// REMARK: remark: spec-quantize-weights: 1 weight matrices to int8 (0.00 MiB -> 0.00 MiB); kept f32: 0 output head, 0 below 8 elements, 0 not a 2-D matrix summed into zeros
// REMARK: remark: spec-quantize-weights: 1 weight matrices to int8 (0.00 MiB -> 0.00 MiB); kept f32: 0 output head, 0 below 8 elements, 1 not a 2-D matrix summed into zeros
func.func @transposed(%x: tensor<?x2xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x2xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%rows) : tensor<?x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x4xf32>) -> tensor<?x4xf32>
  %w = arith.constant dense<[[1.0, -1.0], [4.0, 1.0], [0.0, 3.0], [0.0, 0.0]]> : tensor<4x2xf32>
  %0 = linalg.generic {indexing_maps = [#a, #wt, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x2xf32>, tensor<4x2xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @accumulating(%x: tensor<?x2xf32>, %bias: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = arith.constant dense<[[1.0, -1.0], [4.0, 1.0], [0.0, 3.0], [0.5, 0.5]]> : tensor<4x2xf32>
  %0 = linalg.generic {indexing_maps = [#a, #wt, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x2xf32>, tensor<4x2xf32>) outs(%bias : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
