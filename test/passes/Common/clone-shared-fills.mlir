// RUN: spec-opt %s --spec-clone-shared-fills --split-input-file | FileCheck %s
// RUN: spec-opt %s --spec-clone-shared-fills --one-shot-bufferize --split-input-file | FileCheck %s --check-prefix=BUFFERS
// RUN: spec-opt %s --one-shot-bufferize --split-input-file | FileCheck %s --check-prefix=SHARED

// The pass has no options and refuses nothing: a fill shared by ops that
// are not destinations, or used once, is left as it is (no -invalid test).

// Two contractions of one shape accumulate into the zeros CSE made one fill:
// each gets a fill of its own, right before it, and the shared one is gone.
// Bufferized, each accumulates in place into its own buffer; without the
// pass, the second one gets a copy of the first's zeros.
// CHECK-LABEL: func.func @two_accumulators
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>, %[[C:.*]]: tensor<8x16xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT: %[[FILL1:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<4x16xf32>)
// CHECK-NEXT: %[[P1:.*]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[FILL1]] : tensor<4x16xf32>)
// CHECK-NEXT: %[[FILL2:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<4x16xf32>)
// CHECK-NEXT: %[[P2:.*]] = linalg.matmul ins(%[[A]], %[[C]] : {{.*}}) outs(%[[FILL2]] : tensor<4x16xf32>)
// CHECK-NEXT: return %[[P1]], %[[P2]]
// BUFFERS-LABEL: func.func @two_accumulators
// BUFFERS-NOT: memref.copy
// BUFFERS: return
// SHARED-LABEL: func.func @two_accumulators
// SHARED: memref.copy
func.func @two_accumulators(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x16xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p1 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%fill : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p2 = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x16xf32>) outs(%fill : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %p1, %p2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A fill that is also read (an input, returned) keeps the original for the
// reads; the destination gets a clone.
// CHECK-LABEL: func.func @read_and_accumulated
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK-NEXT: %[[CLONE:.*]] = linalg.fill
// CHECK-NEXT: %[[SUM:.*]] = linalg.add ins(%{{.*}}, %[[FILL]] : {{.*}}) outs(%[[CLONE]] : tensor<16xf32>)
// CHECK-NEXT: return %[[SUM]], %[[FILL]]
func.func @read_and_accumulated(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<16xf32>
  %fill = linalg.fill ins(%one : f32) outs(%empty : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.add ins(%x, %fill : tensor<16xf32>, tensor<16xf32>) outs(%fill : tensor<16xf32>) -> tensor<16xf32>
  return %sum, %fill : tensor<16xf32>, tensor<16xf32>
}

// -----

// Left alone: a fill used once, a fill only read, a fill on buffers.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: linalg.fill
// CHECK-NOT: linalg.fill
func.func @left_alone(%x: tensor<16xf32>, %buffer: memref<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<16xf32>
  %once = linalg.fill ins(%one : f32) outs(%empty : tensor<16xf32>) -> tensor<16xf32>
  %read = linalg.fill ins(%one : f32) outs(%x : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.add ins(%read, %read : tensor<16xf32>, tensor<16xf32>) outs(%once : tensor<16xf32>) -> tensor<16xf32>
  linalg.fill ins(%one : f32) outs(%buffer : memref<16xf32>)
  return %sum, %read : tensor<16xf32>, tensor<16xf32>
}
