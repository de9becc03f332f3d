// RUN: spec-opt %s --spec-fuse-mtp-heads -verify-diagnostics | FileCheck %s

// A decoder over a DeepSeek-style MTP module is left as it is: its decode
// loop runs the module after the target's forward (fusing modules is not
// supported yet).
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @module1(tensor<?x?x4xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module1]>) verify(#spec.greedy)

// CHECK-NOT: @target_fused
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module1]>) verify(#spec.greedy)
