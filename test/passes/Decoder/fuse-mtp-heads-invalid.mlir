// RUN: spec-opt %s --spec-fuse-mtp-heads -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-fuse-mtp-heads=num-heads=3 -split-input-file 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: spec-fuse-mtp-heads: num-heads is 3 but the decoder has 1 heads

// expected-error @below {{target @target returns no hidden state (#spec.io<hidden_states>: the output hidden_states, per the model contract) for its heads to read}}
func.func @target(%ids: tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>} {
  %logits = tensor.empty() : tensor<1x1x8xf32>
  %cast = tensor.cast %logits : tensor<1x1x8xf32> to tensor<?x?x8xf32>
  return %cast : tensor<?x?x8xf32>
}
func.func @head1(%h: tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>} {
  %logits = tensor.empty() : tensor<1x1x8xf32>
  %cast = tensor.cast %logits : tensor<1x1x8xf32> to tensor<?x?x8xf32>
  return %cast : tensor<?x?x8xf32>
}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)

// -----

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{Medusa head @head1 must have a body and take exactly one argument, the hidden state}}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
