// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions))' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{rows=6}))' 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{columns=0}))' 2>&1 | FileCheck %s --check-prefix=COLUMNS
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{depth=128}))' 2>&1 | FileCheck %s --check-prefix=DEPTH
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{max-tile-elements=-1}))' 2>&1 | FileCheck %s --check-prefix=MAXTILE

// ROWS: spec-block-contractions: rows must be a power of two in [1, 16], got 6
// COLUMNS: spec-block-contractions: columns must be a power of two in [1, 128], got 0
// DEPTH: spec-block-contractions: depth must be a power of two in [1, 64], got 128
// MAXTILE: spec-block-contractions: max-tile-elements must be 0 (no limit) or positive, got -1

// The schedule tiles tensors: a bufferized weight contraction is refused.
func.func @bufferized(%x: memref<?x16xf32>, %w: memref<16x32xf32>, %out: memref<?x32xf32>) {
  // expected-error @below {{is bufferized; spec-block-contractions schedules ops on tensors: run it before bufferization}}
  linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x16xf32>, memref<16x32xf32>) outs(%out : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
