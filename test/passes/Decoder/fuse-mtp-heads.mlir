// RUN: spec-opt %s --spec-fuse-mtp-heads -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-fuse-mtp-heads='num-heads=1 last-position-only=false' 2>&1 | FileCheck %s --check-prefix=OPTIONS

// A target with a trunk and an output projection, and two Medusa heads that
// share the target's output projection (the same weights, copied into each
// head's graph, as exported).

func.func @target(%ids: tensor<?x?xi64>) -> (tensor<?x?x8xf32> {spec.io = #spec.io<logits>}, tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>})
    attributes {spec.role = #spec.role<target>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %ids, %c0 : tensor<?x?xi64>
  %s = tensor.dim %ids, %c1 : tensor<?x?xi64>
  %hidden = tensor.empty(%b, %s) : tensor<?x?x4xf32>
  %unembed = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]]> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(b, s, v, d) -> (b, s, d)>, affine_map<(b, s, v, d) -> (d, v)>, affine_map<(b, s, v, d) -> (b, s, v)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%hidden, %unembed : tensor<?x?x4xf32>, tensor<4x8xf32>) outs(%acc : tensor<?x?x8xf32>) {
  ^bb0(%h: f32, %w: f32, %o: f32):
    %p = arith.mulf %h, %w : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  } -> tensor<?x?x8xf32>
  return %logits, %hidden : tensor<?x?x8xf32>, tensor<?x?x4xf32>
}

func.func @head1(%h: tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>} {
  %unembed = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]]> : tensor<4x8xf32>
  %own = arith.constant dense<0.5> : tensor<4x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %h, %c0 : tensor<?x?x4xf32>
  %s = tensor.dim %h, %c1 : tensor<?x?x4xf32>
  %logits = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  return %logits : tensor<?x?x8xf32>
}

func.func @head2(%h: tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>} {
  %unembed = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]]> : tensor<4x8xf32>
  %own = arith.constant dense<0.25> : tensor<4x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %h, %c0 : tensor<?x?x4xf32>
  %s = tensor.dim %h, %c1 : tensor<?x?x4xf32>
  %logits = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  return %logits : tensor<?x?x8xf32>
}

// expected-remark @below {{fused 2 Medusa heads into @target_fused; 0 weight tensors shared with the target or another head are stored once (0.0 KiB saved)}}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy)

// The original target stays for target-only decoding.
// CHECK-LABEL: func.func @target(
// CHECK-LABEL: func.func @target_fused(
// CHECK-SAME: -> (tensor<?x?x8xf32> {spec.io = #spec.io<logits>}, tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>}, tensor<?x?x8xf32> {spec.io = #spec.io<head_logits, index = 1>}, tensor<?x?x8xf32> {spec.io = #spec.io<head_logits, index = 2>})
// CHECK-SAME: spec.fused_from = @target
// CHECK-SAME: spec.role = #spec.role<target>
// The shared output projection is one constant, used by the target and both
// heads; each head keeps its own weights.
// CHECK: %[[HIDDEN:.*]] = tensor.empty
// CHECK: %[[UNEMBED:.*]] = arith.constant dense<{{.*}}9.000000e+00]]> : tensor<4x8xf32>
// CHECK-NOT: arith.constant dense<{{.*}}9.000000e+00]]> : tensor<4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[HIDDEN]], %[[UNEMBED]] :
// The heads read the last position: hidden[:, S - 1 : S, :].
// CHECK: %[[LAST:.*]] = arith.subi
// CHECK: %[[H:.*]] = tensor.extract_slice %[[HIDDEN]][0, %[[LAST]], 0] [%{{.*}}, 1, 4] [1, 1, 1] : tensor<?x?x4xf32> to tensor<?x1x4xf32>
// CHECK: tensor.cast %[[H]] : tensor<?x1x4xf32> to tensor<?x?x4xf32>
// CHECK: arith.constant dense<5.000000e-01> : tensor<4x4xf32>
// CHECK: arith.constant dense<2.500000e-01> : tensor<4x4xf32>
// CHECK-NOT: arith.constant dense<{{.*}}9.000000e+00]]> : tensor<4x8xf32>
// CHECK: return
// CHECK: spec.decoder @decoder target(@target_fused) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy)

// OPTIONS: remark: fused 1 Medusa heads into @target_fused
// OPTIONS: func.func @target_fused({{.*}} -> (tensor<?x?x8xf32> {spec.io = #spec.io<logits>}, tensor<?x?x4xf32> {spec.io = #spec.io<hidden_states>}, tensor<?x?x8xf32> {spec.io = #spec.io<head_logits, index = 1>})
// OPTIONS-NOT: tensor.extract_slice
// OPTIONS: spec.decoder @decoder target(@target_fused)
