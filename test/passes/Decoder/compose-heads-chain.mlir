// RUN: spec-opt %s --spec-compose-heads | FileCheck %s
// RUN: spec-opt %s --spec-compose-heads='depth=3' | FileCheck %s --check-prefix=CHAIN

// One DeepSeek-style MTP module runs once per round, or again on its own
// output up to the depth asked.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @module1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>}

// CHECK: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module1]>) verify(#spec.greedy)
// CHAIN: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@module1, @module1, @module1]>) verify(#spec.greedy)
