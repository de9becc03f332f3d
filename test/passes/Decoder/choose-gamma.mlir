// RUN: spec-opt %s --spec-choose-gamma -split-input-file -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-choose-gamma='acceptance-rate=0.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=ALPHA
// RUN: spec-opt %s --spec-choose-gamma='cost-ratio=0.01 max-gamma=3' -split-input-file 2>&1 | FileCheck %s --check-prefix=BOUNDED
// RUN: spec-opt %s --spec-choose-gamma='verify-cost=0.3' -split-input-file 2>&1 | FileCheck %s --check-prefix=VERIFY

// The target reads 256 KiB of weights per step (the constant here and the
// one in the layer it calls); the draft 25.6 KiB: a cost ratio of 0.1.
func.func private @layer(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = arith.constant dense<1.0> : tensor<512x64xf32>
  return %x : tensor<?x64xf32>
}
func.func @target(%ids: tensor<?xi64>) -> tensor<?x256xf32>
    attributes {spec.role = #spec.role<target>} {
  %w = arith.constant dense<1.0> : tensor<512x64xf32>
  %h = tensor.empty() : tensor<1x64xf32>
  %d = tensor.cast %h : tensor<1x64xf32> to tensor<?x64xf32>
  %y = func.call @layer(%d) : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %out = tensor.empty() : tensor<1x256xf32>
  %logits = tensor.cast %out : tensor<1x256xf32> to tensor<?x256xf32>
  return %logits : tensor<?x256xf32>
}
func.func @draft(%ids: tensor<?xi64>) -> tensor<?x256xf32>
    attributes {spec.role = #spec.role<draft>} {
  %w = arith.constant dense<1.0> : tensor<100x64xf32>
  %w2 = arith.constant dense<1.0> : tensor<2x64xf32>
  %out = tensor.empty() : tensor<1x256xf32>
  %logits = tensor.cast %out : tensor<1x256xf32> to tensor<?x256xf32>
  return %logits : tensor<?x256xf32>
}

// alpha = 0.8, c = 0.1: gamma = 6 maximizes (1 - 0.8^7) / 0.2 / 1.6.
// expected-remark @below {{gamma = 6: 3.95 expected tokens per target step, predicted speedup 2.47x (acceptance rate 0.80, draft/target cost 0.100 (25.5 KiB / 256.0 KiB of weights, if weight reads bound both))}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 1>)
    verify(#spec.greedy) {acceptance_rate = 0.8}

// CHECK: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 6>)
// The option overrides the attribute: alpha = 0.5 pays for 2 tokens only.
// ALPHA: remark: gamma = 2: 1.75 expected tokens per target step, predicted speedup 1.46x (acceptance rate 0.50, draft/target cost 0.100 (25.5 KiB / 256.0 KiB of weights, if weight reads bound both))
// ALPHA: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>)
// When each verified position costs 0.3 target steps, long proposals stop
// paying: (1 + 0.8 + 0.64) / (1 + 2 * (0.1 + 0.3)).
// VERIFY: remark: gamma = 2: 2.44 expected tokens per target step, predicted speedup 1.36x (acceptance rate 0.80, draft/target cost 0.100 (25.5 KiB / 256.0 KiB of weights, if weight reads bound both), verify cost 0.300 per extra position)
// A nearly free draft is bounded by max-gamma.
// BOUNDED: remark: gamma = 3: 2.95 expected tokens per target step, predicted speedup 2.87x (acceptance rate 0.80, draft/target cost 0.010 (given), verify cost 0.000 per extra position)
// BOUNDED: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 3>)

// -----

// Medusa heads are left alone: gamma is the number of heads.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// CHECK: spec.decoder @mtp target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
// ALPHA: spec.decoder @mtp target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
// BOUNDED: spec.decoder @mtp target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
spec.decoder @mtp target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)

// -----

// One DeepSeek-style MTP module gets the depth of its chain chosen like a
// draft's gamma: 2 KiB of module weights against 8 KiB of target weights
// (c = 0.25); alpha = 0.8 pays best at depth 3: (1 - 0.8^4) / 0.2 / 1.75.
func.func @target(%ids: tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>} {
  %w = arith.constant dense<1.0> : tensor<32x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
func.func @module(%h: tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 1>} {
  %w = arith.constant dense<1.0> : tensor<8x64xf32>
  %out = tensor.empty() : tensor<1x8xf32>
  %logits = tensor.cast %out : tensor<1x8xf32> to tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
// expected-remark @below {{depth = 3: 2.95 expected tokens per target step, predicted speedup 1.69x (acceptance rate 0.80, module/target cost 0.250 (2.0 KiB / 8.0 KiB of weights, if weight reads bound both))}}
spec.decoder @chain target(@target) proposer(#spec.mtp<[@module]>)
    verify(#spec.greedy) {acceptance_rate = 0.8}
// CHECK: spec.decoder @chain target(@target) proposer(#spec.mtp<[@module, @module, @module]>)
// BOUNDED: spec.decoder @chain target(@target) proposer(#spec.mtp<[@module, @module, @module]>)
// When verified positions cost 0.3 steps each, depth 2 is the best.
// VERIFY: remark: depth = 2: 2.44 expected tokens per target step, predicted speedup 1.16x (acceptance rate 0.80, module/target cost 0.250 (2.0 KiB / 8.0 KiB of weights, if weight reads bound both), verify cost 0.300 per extra position)
// VERIFY: spec.decoder @chain target(@target) proposer(#spec.mtp<[@module, @module]>)

// Distinct modules per depth are left alone: their count is fixed by
// training.
func.func private @m2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 2>}
// CHECK: spec.decoder @distinct target(@target) proposer(#spec.mtp<[@module, @m2]>)
spec.decoder @distinct target(@target) proposer(#spec.mtp<[@module, @m2]>)
    verify(#spec.greedy) {acceptance_rate = 0.8}
