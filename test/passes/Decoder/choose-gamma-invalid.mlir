// RUN: spec-opt %s --spec-choose-gamma -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-choose-gamma='acceptance-rate=1.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=RATE
// RUN: not spec-opt %s --spec-choose-gamma='cost-ratio=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=COST
// RUN: not spec-opt %s --spec-choose-gamma='max-gamma=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=MAXGAMMA
// RUN: not spec-opt %s --spec-choose-gamma='verify-cost=-1' -split-input-file 2>&1 | FileCheck %s --check-prefix=VERIFY

// RATE: error: spec-choose-gamma: acceptance-rate must lie in [0, 1], got 1.5
// COST: error: spec-choose-gamma: cost-ratio must be positive, got 0
// MAXGAMMA: error: spec-choose-gamma: max-gamma must be at least 1, got 0
// VERIFY: error: spec-choose-gamma: verify-cost must not be negative, got -1

func.func @target(%ids: tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>} {
  %w = arith.constant dense<1.0> : tensor<64x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
func.func @draft(%ids: tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<draft>} {
  %w = arith.constant dense<1.0> : tensor<8x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
// expected-error @below {{no acceptance rate for decoder @decoder; set its acceptance_rate attribute or pass acceptance-rate=<0..1> to spec-choose-gamma}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)

// -----

// A draft without constant weights (weights passed as arguments) cannot be
// costed from the graph.
func.func @target(%ids: tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>} {
  %w = arith.constant dense<1.0> : tensor<64x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<draft>}
// expected-error @below {{cannot estimate the cost of draft @draft: it has no constant weights; pass cost-ratio=<draft step / target step> to spec-choose-gamma}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) {acceptance_rate = 0.7}

// -----

// A draft that costs as much as the target never pays.
func.func @target(%ids: tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>} {
  %w = arith.constant dense<1.0> : tensor<64x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
func.func @draft(%ids: tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<draft>} {
  %w = arith.constant dense<1.0> : tensor<64x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
// expected-warning @below {{draft @draft does not pay: the best gamma (1) predicts a speedup of 0.85x (acceptance rate 0.70, draft/target cost 1.000 (16.0 KiB / 16.0 KiB of weights, if weight reads bound both)); decoder left unchanged}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy) {acceptance_rate = 0.7}
