// RUN: spec-opt %s --spec-quantize-weights='precision=bf16 min-elements=1' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-quantize-weights='precision=int3' -split-input-file 2>&1 | FileCheck %s --check-prefix=PRECISION

// RUN: not spec-opt %s --spec-quantize-weights='precision=bf16 roles=draft,drafter' -split-input-file 2>&1 | FileCheck %s --check-prefix=ROLE

// PRECISION: error: spec-quantize-weights: unknown precision 'int3' (expected f16, bf16 or int8)
// ROLE: error: spec-quantize-weights: unknown role 'drafter' (expected target, draft, medusa_head or mtp_module)

// A resource whose data was elided (printed with --elide-resource-strings)
// cannot be converted.

#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>
func.func @layer(%x: tensor<?x4xf32>, %init: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @below {{the data of resource '__elided__' is missing (elided?); cannot convert the weight}}
  %w = arith.constant dense_resource<__elided__> : tensor<4x4xf32>
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%init : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
