// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-async-launches))' -split-input-file -verify-diagnostics

// The pass owns the tokens: a launch that is asynchronous already is
// refused.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel { gpu.return }
  }
  func.func @async() {
    %c1 = arith.constant 1 : index
    %t = gpu.wait async
    // expected-error @below {{is asynchronous already; spec-gpu-async-launches chains synchronous launches}}
    %u = gpu.launch_func async [%t] @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.wait [%u]
    return
  }
}
