// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions))' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{rows=3}))' 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{rows=32}))' 2>&1 | FileCheck %s --check-prefix=ROWS32
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{vector-width=8}))' 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{slice-depth=0}))' 2>&1 | FileCheck %s --check-prefix=DEPTH
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{split-min-bytes=-1}))' 2>&1 | FileCheck %s --check-prefix=BYTES

// ROWS: spec-gpu-contractions: rows must be a power of two in [1, 16], got 3
// ROWS32: spec-gpu-contractions: rows must be a power of two in [1, 16], got 32
// WIDTH: spec-gpu-contractions: vector-width must be 1, 2 or 4, got 8
// DEPTH: spec-gpu-contractions: slice-depth must be at least 1, got 0
// BYTES: spec-gpu-contractions: split-min-bytes must not be negative, got -1

// The pass refuses nothing in the IR: what it cannot schedule (here a
// contraction of f16 on tensors) it leaves to spec-gpu-schedule, without a
// diagnostic.
func.func @nothing_refused(%a: tensor<?x64xf16>, %w: tensor<64x128xf16>, %out: tensor<?x128xf16>) -> tensor<?x128xf16> {
  %r = linalg.matmul ins(%a, %w : tensor<?x64xf16>, tensor<64x128xf16>) outs(%out : tensor<?x128xf16>) -> tensor<?x128xf16>
  return %r : tensor<?x128xf16>
}
