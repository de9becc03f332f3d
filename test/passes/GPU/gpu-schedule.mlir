// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule))' -split-input-file | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule{threads=64}))' -split-input-file | FileCheck %s --check-prefix=T64

// A contraction: one thread per output, the reduction a sequential loop in
// the thread; the innermost output dimension tiled by the block's threads.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %[[C128:.*]]) {
// CHECK-NEXT: scf.parallel (%[[TI:.*]], %[[TJ:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %[[C128]])
// CHECK: scf.if
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = sequential, map = (d0) -> (d0), bound = (d0) -> (d0)>, #gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = block_y, map = (d0) -> (d0), bound = (d0) -> (d0)>, #gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// T64-LABEL: func.func @matmul
// T64: arith.constant 64 : index
func.func @matmul(%a: memref<?x128xf32>, %b: memref<128x256xf32>, %c: memref<?x256xf32>) {
  linalg.matmul ins(%a, %b : memref<?x128xf32>, memref<128x256xf32>) outs(%c : memref<?x256xf32>)
  return
}

// -----

// Copies run as kernels too; a narrow static innermost dimension gets one
// warp, not a whole block.
// CHECK-LABEL: func.func @copy
// CHECK-NOT: memref.copy
// CHECK: scf.parallel
// CHECK-SAME: step (%{{.*}}, %[[C32:.*]])
// CHECK: memref.load
// CHECK: memref.store
// CHECK: processor = thread_x
func.func @copy(%a: memref<4x20xf32>, %b: memref<4x20xf32, strided<[40, 1]>>) {
  memref.copy %a, %b : memref<4x20xf32> to memref<4x20xf32, strided<[40, 1]>>
  return
}

// -----

// A reduction to a scalar has no parallel dimension: it runs as one thread.
// CHECK-LABEL: func.func @sum
// CHECK: scf.parallel (%{{.*}}) = (%[[Z:.*]]) to (%[[O:.*]]) step
// CHECK: scf.for
// CHECK: processor = thread_x
// CHECK: processor = block_x
func.func @sum(%a: memref<64xf32>, %s: memref<f32>) {
  linalg.reduce ins(%a : memref<64xf32>) outs(%s : memref<f32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %r = arith.addf %x, %acc : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// Dimensions beyond the innermost three run as loops in each thread.
// CHECK-LABEL: func.func @rank4
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}processor = block_z{{.*}}processor = block_y{{.*}}processor = block_x
func.func @rank4(%a: memref<2x3x4x5xf32>, %b: memref<2x3x4x5xf32>) {
  linalg.copy ins(%a : memref<2x3x4x5xf32>) outs(%b : memref<2x3x4x5xf32>)
  return
}
