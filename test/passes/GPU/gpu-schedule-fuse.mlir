// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule{merge=false}))' -split-input-file | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule{fuse=false merge=false}))' -split-input-file | FileCheck %s --check-prefix=APART

// A reduction's initializing fill, the reduction and an elementwise op on
// its result, over the same rows (the allocation's size is the rows'
// dimension): one kernel, in which each thread fills its output, reduces
// into it and reads it back. Without fusion: three kernels.
// CHECK-LABEL: func.func @fill_reduce_scale
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[SUM:.*]][%[[ROW:.*]]] : memref<?xf32>
// CHECK: scf.for
// CHECK: memref.load %[[SUM]]
// CHECK: memref.store %{{.*}}, %[[SUM]]
// CHECK: }
// CHECK: memref.load %[[SUM]]
// CHECK: arith.mulf
// CHECK: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
// APART-LABEL: func.func @fill_reduce_scale
// APART-COUNT-3: processor = block_x
// APART-NOT: processor = block_x
// APART: return
func.func @fill_reduce_scale(%x: memref<?x64xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %rows = memref.dim %x, %c0 : memref<?x64xf32>
  %sum = memref.alloc(%rows) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<?xf32>)
  linalg.reduce ins(%x : memref<?x64xf32>) outs(%sum : memref<?xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %out = memref.alloc(%rows) : memref<?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum : memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%s: f32, %o: f32):
    %m = arith.mulf %s, %half : f32
    linalg.yield %m : f32
  }
  memref.dealloc %sum : memref<?xf32>
  return %out : memref<?xf32>
}

// -----

// Writes of two fresh buffers (a layer's key and value cache rows) from
// reads of others: nothing is shared, one kernel.
// CHECK-LABEL: func.func @two_copies
// CHECK-COUNT-1: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
// APART-LABEL: func.func @two_copies
// APART-COUNT-2: processor = block_x
func.func @two_copies(%k: memref<4x32xf32>, %v: memref<4x32xf32>) -> (memref<4x32xf32>, memref<4x32xf32>) {
  %a = memref.alloc() : memref<4x32xf32>
  memref.copy %k, %a : memref<4x32xf32> to memref<4x32xf32>
  %b = memref.alloc() : memref<4x32xf32>
  memref.copy %v, %b : memref<4x32xf32> to memref<4x32xf32>
  return %a, %b : memref<4x32xf32>, memref<4x32xf32>
}

// -----

// The second nest reads other elements than the same iteration wrote (a
// transpose): two kernels.
// CHECK-LABEL: func.func @transpose_after_write
// CHECK-COUNT-2: processor = block_x
func.func @transpose_after_write(%x: memref<32x32xf32>, %out: memref<32x32xf32>) {
  %t = memref.alloc() : memref<32x32xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<32x32xf32>) outs(%t : memref<32x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.transpose ins(%t : memref<32x32xf32>) outs(%out : memref<32x32xf32>) permutation = [1, 0]
  memref.dealloc %t : memref<32x32xf32>
  return
}

// -----

// Function arguments may be the same buffer: a write of one and a read of
// the other stay two kernels.
// CHECK-LABEL: func.func @arguments_may_alias
// CHECK-COUNT-2: processor = block_x
func.func @arguments_may_alias(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<64xf32>)
  linalg.copy ins(%b : memref<64xf32>) outs(%c : memref<64xf32>)
  return
}

// -----

// Host code between the nests (a load of what the first wrote) keeps them
// apart, as do different iteration spaces.
// CHECK-LABEL: func.func @host_between
// CHECK-COUNT-2: processor = block_x
// CHECK-LABEL: func.func @other_space
// CHECK-COUNT-2: processor = block_x
func.func @host_between(%x: memref<64xf32>, %y: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%t : memref<64xf32>)
  %first = memref.load %t[%c0] : memref<64xf32>
  %u = memref.alloc() : memref<64xf32>
  linalg.copy ins(%y : memref<64xf32>) outs(%u : memref<64xf32>)
  memref.dealloc %t : memref<64xf32>
  memref.dealloc %u : memref<64xf32>
  return %first : f32
}
func.func @other_space(%x: memref<64xf32>, %y: memref<32xf32>) {
  %t = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%t : memref<64xf32>)
  %u = memref.alloc() : memref<32xf32>
  linalg.copy ins(%y : memref<32xf32>) outs(%u : memref<32xf32>)
  memref.dealloc %t : memref<64xf32>
  memref.dealloc %u : memref<32xf32>
  return
}

// -----

// RMSNorm's statistics over [rows, cols, 1]: the fill and the root are
// nests over three dimensions, the last of one iteration, the reduction's
// over two (its output indexed [i, j, 0]). Without the dimension of one
// iteration they are one iteration space: one kernel over [rows, cols].
// CHECK-LABEL: func.func @unit_dims
// CHECK: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// CHECK: memref.store %cst, %[[ACC:.*]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x1xf32>
// CHECK: scf.for
// CHECK: math.powf
// CHECK: math.sqrt
// CHECK-COUNT-1: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
// APART-LABEL: func.func @unit_dims
// APART-COUNT-3: processor = block_x
func.func @unit_dims(%n: index, %m: index) -> memref<?x?x1xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %x = memref.alloc(%n, %m) : memref<?x?x128xf32>
  %acc = memref.alloc(%n, %m) : memref<?x?x1xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<?x?x1xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<?x?x128xf32>) outs(%acc : memref<?x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.powf %in, %two : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%acc : memref<?x?x1xf32>) outs(%acc : memref<?x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.sqrt %in : f32
    linalg.yield %r : f32
  }
  memref.dealloc %x : memref<?x?x128xf32>
  return %acc : memref<?x?x1xf32>
}

// -----

// The two halves of a rotary embedding written into a cache row: subviews
// of one buffer whose last dimensions, [0, 16) and [16, 32), do not
// overlap (the halves computed in fresh buffers, which the cache cannot
// be): one kernel. Halves that overlap ([0, 16) and [8, 24)) stay two.
// CHECK-LABEL: func.func @disjoint_halves
// CHECK-COUNT-1: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
// CHECK-LABEL: func.func @overlapping_halves
// CHECK-COUNT-2: processor = block_x
// APART-LABEL: func.func @disjoint_halves
// APART-COUNT-2: processor = block_x
func.func @disjoint_halves(%cache: memref<8x32xf32>, %row: index) {
  %x = memref.alloc() : memref<4x16xf32>
  %y = memref.alloc() : memref<4x16xf32>
  %low = memref.subview %cache[%row, 0] [4, 16] [1, 1] : memref<8x32xf32> to memref<4x16xf32, strided<[32, 1], offset: ?>>
  %high = memref.subview %cache[%row, 16] [4, 16] [1, 1] : memref<8x32xf32> to memref<4x16xf32, strided<[32, 1], offset: ?>>
  linalg.copy ins(%x : memref<4x16xf32>) outs(%low : memref<4x16xf32, strided<[32, 1], offset: ?>>)
  linalg.copy ins(%y : memref<4x16xf32>) outs(%high : memref<4x16xf32, strided<[32, 1], offset: ?>>)
  return
}
func.func @overlapping_halves(%cache: memref<8x32xf32>, %row: index) {
  %x = memref.alloc() : memref<4x16xf32>
  %y = memref.alloc() : memref<4x16xf32>
  %low = memref.subview %cache[%row, 0] [4, 16] [1, 1] : memref<8x32xf32> to memref<4x16xf32, strided<[32, 1], offset: ?>>
  %high = memref.subview %cache[%row, 8] [4, 16] [1, 1] : memref<8x32xf32> to memref<4x16xf32, strided<[32, 1], offset: ?>>
  linalg.copy ins(%x : memref<4x16xf32>) outs(%low : memref<4x16xf32, strided<[32, 1], offset: ?>>)
  linalg.copy ins(%y : memref<4x16xf32>) outs(%high : memref<4x16xf32, strided<[32, 1], offset: ?>>)
  return
}
