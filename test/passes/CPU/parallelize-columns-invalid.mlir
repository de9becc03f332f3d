// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-parallelize-columns))' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-parallelize-columns{min-work=-1}))' 2>&1 | FileCheck %s --check-prefix=MINWORK
// MINWORK: spec-parallelize-columns: min-work must not be negative, got -1

// Column tiles that still carry a tensor: the pass runs after bufferization.
func.func @tensors(%t: tensor<256xf32>) -> tensor<256xf32> {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  // expected-error @below {{carries values across column tiles; run spec-parallelize-columns after bufferization}}
  %r = scf.for %j = %c0 to %c256 step %c32 iter_args(%a = %t) -> (tensor<256xf32>) {
    scf.yield %a : tensor<256xf32>
  } {spec.column_tiles}
  return %r : tensor<256xf32>
}
