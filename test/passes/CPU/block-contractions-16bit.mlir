// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{rows=4 columns=16 depth=8}))' | FileCheck %s

// A weight stored in 16 bits (spec-quantize-weights) is widened in the
// contraction's body. Each tile reads a depth x columns vector of it,
// widens it once and multiplies every row of the tile by it: the widening
// is not repeated per row (a broadcast of the 16-bit vector to the rows,
// widened after, would convert rows x depth x columns elements).

#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @bf16_weights
// CHECK: scf.for
// CHECK: %[[READ:.*]] = vector.transfer_read %{{.*}} : tensor<8x16xbf16>, vector<8x16xbf16>
// CHECK-NEXT: %[[WIDE:.*]] = arith.extf %[[READ]] : vector<8x16xbf16> to vector<8x16xf32>
// CHECK: vector.contract {{.*}} %{{.*}}, %[[WIDE]], %{{.*}} : vector<4x8xf32>, vector<8x16xf32> into vector<4x16xf32>
// CHECK-NOT: vector<4x16x8xbf16>
// CHECK-NOT: vector<4x8x16xbf16>
func.func @bf16_weights(%x: tensor<8x32xf32>, %w: tensor<32x16xbf16>, %init: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<8x32xf32>, tensor<32x16xbf16>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %wide = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %wide : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
