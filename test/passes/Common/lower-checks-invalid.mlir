// RUN: spec-opt %s --spec-lower-checks -split-input-file -verify-diagnostics

// A kernel cannot call the host's runtime: its checks are refused.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%ok: i1) kernel {
      // expected-error @below {{is a run-time check inside a GPU kernel, which cannot report to the host}}
      cf.assert %ok, "in a kernel"
      gpu.return
    }
  }
}
