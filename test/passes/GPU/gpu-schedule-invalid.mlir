// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule))' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule{threads=48}))' 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule{threads=2048}))' 2>&1 | FileCheck %s --check-prefix=THREADS2048

// THREADS: threads must be a multiple of 32 in [32, 1024], got 48
// THREADS2048: threads must be a multiple of 32 in [32, 1024], got 2048

// The schedule maps buffers: linalg ops on tensors are refused.
func.func @tensors(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{is not bufferized; run the GPU schedule after bufferization}}
  %c = linalg.copy ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}
