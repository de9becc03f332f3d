// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=8' -split-input-file | FileCheck %s
// RUN: spec-opt %s --spec-quantize-weights='precision=f16 min-elements=8' -split-input-file | FileCheck %s --check-prefix=F16
// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=8 output-head=false' -split-input-file | FileCheck %s --check-prefix=HEAD
// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=64' -split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=8 output-head=false' -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=8 roles=draft,mtp_module' -split-input-file 2>/dev/null | FileCheck %s --check-prefix=ROLES
// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=8 roles=draft,mtp_module' -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROLES-REMARK

// A weight matrix becomes a 16-bit constant that the contraction widens in
// its body; the multiply and the accumulation stay f32. Rounding is to
// nearest even: 1 + 2^-8 is halfway between bf16's 1 and 1 + 2^-7 and
// becomes 1; 1 + 3 * 2^-8 becomes 1 + 2^-6. f16 holds both exactly.

#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @layer
// CHECK: %[[W:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 1.015630e+00, -2.000000e+00], {{.*}}]> : tensor<2x4xbf16>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[W]] : tensor<?x2xf32>, tensor<2x4xbf16>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: bf16, %[[C:.*]]: f32):
// CHECK-NEXT: %[[WIDE:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[A]], %[[WIDE]] : f32
// CHECK-NEXT: arith.addf %[[C]], %[[P]] : f32
// F16-LABEL: func.func @layer
// F16: arith.constant dense<{{\[\[}}1.000000e+00, 1.003910e+00, 1.011720e+00, -2.000000e+00], {{.*}}]> : tensor<2x4xf16>
// F16: arith.extf %{{.*}} : f16 to f32
// The contraction whose result the function returns is the output head.
// HEAD-LABEL: func.func @layer
// HEAD: arith.constant {{.*}} : tensor<2x4xf32>
// HEAD-NOT: bf16
// HEAD: return
// Below min-elements, nothing changes.
// SMALL-NOT: bf16
// REMARK: remark: spec-quantize-weights: 0 weight matrices to bf16 (0.00 MiB -> 0.00 MiB); kept f32: 1 output head, 0 below 8 elements
func.func @layer(%x: tensor<?x2xf32>, %init: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = arith.constant dense<[[1.0, 1.00390625, 1.01171875, -2.0], [0.5, 0.25, 3.0, 4.0]]> : tensor<2x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x2xf32>, tensor<2x4xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// The importer's weights are resources: each is converted once, and every
// function that reads it reads the one converted copy. A table that a
// gather also reads (tied embeddings) stays f32 for the gather; an
// elementwise op on a constant is not a contraction.

#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>
#e = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @step
// CHECK-DAG: %[[TABLE:.*]] = arith.constant dense_resource<table> : tensor<4x4xf32>
// CHECK-DAG: %[[NARROW:.*]] = arith.constant dense_resource<table_bf16> : tensor<4x4xbf16>
// CHECK: tensor.extract %[[TABLE]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[NARROW]] : tensor<1x4xf32>, tensor<4x4xbf16>)
// CHECK: arith.extf
// CHECK: return
// CHECK-LABEL: func.func @verify
// CHECK: %[[V:.*]] = arith.constant dense_resource<table_bf16> : tensor<4x4xbf16>
// CHECK: ins(%{{.*}}, %[[V]] : tensor<?x4xf32>, tensor<4x4xbf16>)
// CHECK-LABEL: func.func @scale
// CHECK: arith.constant dense<2.000000e+00> : tensor<4x4xf32>
// CHECK-NOT: bf16
// CHECK: return
// The converted blob: 1.0 (0x3F80), -1.5 (0xBFC0), then zeros.
// CHECK: table_bf16: "0x08000000803FC0BF0000
// HEAD-LABEL: func.func @step
// HEAD: tensor<4x4xbf16>
// REMARK: remark: spec-quantize-weights: 1 weight matrices to bf16 (0.00 MiB -> 0.00 MiB); kept f32: 0 output head, 0 below 8 elements
func.func @step(%token: index, %init: tensor<1x4xf32>) -> (f32, tensor<1x4xf32>) {
  %c0 = arith.constant 0 : index
  %table = arith.constant dense_resource<table> : tensor<4x4xf32>
  %embedded = tensor.extract %table[%token, %c0] : tensor<4x4xf32>
  %row = tensor.extract_slice %table[%token, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%row, %table : tensor<1x4xf32>, tensor<4x4xf32>) outs(%init : tensor<1x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  %1 = tensor.expand_shape %0 [[0], [1, 2]] output_shape [1, 2, 2] : tensor<1x4xf32> into tensor<1x2x2xf32>
  %2 = tensor.collapse_shape %1 [[0], [1, 2]] : tensor<1x2x2xf32> into tensor<1x4xf32>
  %3 = arith.addf %2, %2 : tensor<1x4xf32>
  return %embedded, %3 : f32, tensor<1x4xf32>
}
func.func @verify(%x: tensor<?x4xf32>, %init: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %table = arith.constant dense_resource<table> : tensor<4x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %table : tensor<?x4xf32>, tensor<4x4xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %1 = arith.addf %0, %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
func.func @scale(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %two = arith.constant dense<2.0> : tensor<4x4xf32>
  %0 = linalg.generic {indexing_maps = [#e, #e, #e], iterator_types = ["parallel", "parallel"]} ins(%x, %two : tensor<4x4xf32>, tensor<4x4xf32>) outs(%x : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      table: "0x040000000000803F0000C0BF0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    }
  }
#-}

// -----

// With roles, only the functions of those models' roles are converted:
// `specc --draft-weights` stores the draft in one precision and the target
// in another. Without, every function.

#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @target
// CHECK: tensor<2x4xbf16>
// CHECK-LABEL: func.func @draft
// CHECK: tensor<2x4xbf16>
// ROLES-LABEL: func.func @target
// ROLES-NOT: bf16
// ROLES-LABEL: func.func @draft
// ROLES: arith.constant {{.*}} : tensor<2x4xbf16>
// ROLES: arith.extf
// ROLES-REMARK: remark: spec-quantize-weights: 1 weight matrices to bf16 {{.*}} (functions of role draft, mtp_module)
func.func @target(%x: tensor<?x2xf32>, %init: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {spec.role = #spec.role<target>} {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x2xf32>, tensor<2x4xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @draft(%x: tensor<?x2xf32>, %init: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {spec.role = #spec.role<draft>} {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 9.0]]> : tensor<2x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x2xf32>, tensor<2x4xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
