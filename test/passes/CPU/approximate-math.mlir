// RUN: spec-opt %s --spec-approximate-math=ops=exp | FileCheck %s
// RUN: spec-opt %s --spec-approximate-math='ops=exp,tanh' | FileCheck %s --check-prefix=BOTH
// RUN: spec-opt %s --spec-approximate-math | FileCheck %s --check-prefix=NONE
// RUN: spec-opt %s --spec-graph-to-llvm | FileCheck %s --check-prefix=PIPELINE
// RUN: spec-opt %s --spec-graph-to-llvm=approximate-exp=false | FileCheck %s --check-prefix=LIBM

// exp becomes a polynomial in fma (range reduction by ln 2, then 2^n built in
// the exponent bits); tanh stays unless named.
// CHECK-LABEL: func.func @softmax_terms
// CHECK-NOT: math.exp
// CHECK: arith.constant -8.780000e+01 : f32
// CHECK: math.floor
// CHECK: math.fma
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: math.tanh
// BOTH-LABEL: func.func @softmax_terms
// BOTH-NOT: math.exp
// BOTH-NOT: math.tanh
// NONE: math.exp
// NONE: math.tanh

// In spec-graph-to-llvm the approximation runs by default and its fma and
// floor become LLVM intrinsics, not libm calls; without it exp is an
// intrinsic that LLVM turns into a call of expf.
// PIPELINE-NOT: llvm.intr.exp
// PIPELINE: llvm.intr.floor
// PIPELINE: llvm.intr.fma
// PIPELINE-NOT: llvm.call @fmaf
// LIBM: llvm.intr.exp(

func.func @softmax_terms(%x: f32) -> (f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.tanh %x : f32
  return %0, %1 : f32, f32
}
