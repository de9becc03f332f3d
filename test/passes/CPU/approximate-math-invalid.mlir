// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-approximate-math{ops=exp,frobnicate}))' 2>&1 | FileCheck %s

// An op without a polynomial approximation is refused, with the list of
// those that have one.
// CHECK: error: spec-approximate-math: no polynomial approximation of 'frobnicate'; approximable: acos, asin, atan, atan2, cbrt, cos, erf, erfc, exp, expm1, log, log1p, log2, rsqrt, sin, tanh
func.func @f(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}
