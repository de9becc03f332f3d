// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule))' -split-input-file | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-schedule{merge=false}))' -split-input-file | FileCheck %s --check-prefix=APART

// A layer's projections read the same rows and write fresh buffers: one
// kernel over both products' outputs, [rows x 128] then [rows x 64], each
// iteration delinearized (row-major) into its product's row and column.
// Without merging: two kernels.
// CHECK-LABEL: func.func @projections
// CHECK: %[[Q:.*]] = arith.muli %{{.*}}, %c128 : index
// CHECK: %[[K:.*]] = arith.muli %{{.*}}, %c64 : index
// CHECK: %[[ALL:.*]] = arith.addi %[[Q]], %[[K]] : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[ALL]])
// CHECK: scf.parallel
// CHECK: %[[I:.*]] = arith.addi
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[I]], %[[Q]] : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: %[[QCOL:.*]] = arith.remui %[[I]], %c128 : index
// CHECK: %[[QROW:.*]] = arith.divui %[[I]], %c128 : index
// CHECK: memref.load %arg1
// CHECK: } else {
// CHECK: %[[J:.*]] = arith.subi %[[I]], %[[Q]] : index
// CHECK: arith.remui %[[J]], %c64 : index
// CHECK: arith.divui %[[J]], %c64 : index
// CHECK: memref.load %arg2
// CHECK: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
// APART-LABEL: func.func @projections
// APART-COUNT-2: processor = block_x
func.func @projections(%x: memref<?x128xf32>, %wq: memref<128x128xf32>, %wk: memref<128x64xf32>) -> (memref<?x128xf32>, memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x128xf32>
  %q = memref.alloc(%rows) : memref<?x128xf32>
  linalg.matmul ins(%x, %wq : memref<?x128xf32>, memref<128x128xf32>) outs(%q : memref<?x128xf32>)
  %k = memref.alloc(%rows) : memref<?x64xf32>
  linalg.matmul ins(%x, %wk : memref<?x128xf32>, memref<128x64xf32>) outs(%k : memref<?x64xf32>)
  return %q, %k : memref<?x128xf32>, memref<?x64xf32>
}

// -----

// Bounds other than 0 and steps other than 1: the first nest's iterations
// are ceil((n - 2) / 3) (none below 0), its variable 2 + 3 * index.
// CHECK-LABEL: func.func @strided
// CHECK: %[[SPAN:.*]] = arith.subi %arg1, %c2 : index
// CHECK: %[[DIV:.*]] = arith.ceildivsi %[[SPAN]], %c3 : index
// CHECK: %[[COUNT:.*]] = arith.maxsi %[[DIV]], %{{.*}} : index
// CHECK: scf.if
// CHECK: %[[SCALED:.*]] = arith.muli %{{.*}}, %c3 : index
// CHECK: %[[IV:.*]] = arith.addi %[[SCALED]], %c2 : index
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[IV]]]
// CHECK: } else {
// CHECK: arith.subi %{{.*}}, %[[COUNT]] : index
// CHECK-COUNT-1: processor = block_x
// CHECK-NOT: processor = block_x
func.func @strided(%a: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<64xf32>
  %u = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c2) to (%n) step (%c3) {
    memref.store %one, %t[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %n) step (%c1, %c1) {
    memref.store %one, %u[%j] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %t : memref<64xf32>
  memref.dealloc %u : memref<64xf32>
  return
}

// -----

// A layer's key and value cache writes: subviews of one cache whose
// static ranges in the first dimension, [0, 1) and [1, 2), do not overlap
// (the keys and values computed in fresh buffers, which the cache cannot
// be). One kernel; writes that may overlap stay two.
// CHECK-LABEL: func.func @disjoint_caches
// CHECK-COUNT-1: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
// CHECK-LABEL: func.func @overlapping_caches
// CHECK-COUNT-2: processor = block_x
func.func @disjoint_caches(%cache: memref<2x8x32xf32>, %row: index) {
  %k = memref.alloc() : memref<4x32xf32>
  %v = memref.alloc() : memref<2x32xf32>
  %keys = memref.subview %cache[0, %row, 0] [1, 4, 32] [1, 1, 1] : memref<2x8x32xf32> to memref<4x32xf32, strided<[32, 1], offset: ?>>
  %values = memref.subview %cache[1, %row, 0] [1, 2, 32] [1, 1, 1] : memref<2x8x32xf32> to memref<2x32xf32, strided<[32, 1], offset: ?>>
  linalg.copy ins(%k : memref<4x32xf32>) outs(%keys : memref<4x32xf32, strided<[32, 1], offset: ?>>)
  linalg.copy ins(%v : memref<2x32xf32>) outs(%values : memref<2x32xf32, strided<[32, 1], offset: ?>>)
  return
}
func.func @overlapping_caches(%cache: memref<2x8x32xf32>, %row: index) {
  %k = memref.alloc() : memref<4x32xf32>
  %v = memref.alloc() : memref<2x32xf32>
  %keys = memref.subview %cache[0, %row, 0] [1, 4, 32] [1, 1, 1] : memref<2x8x32xf32> to memref<4x32xf32, strided<[32, 1], offset: ?>>
  %values = memref.subview %cache[0, 1, 0] [1, 2, 32] [1, 1, 1] : memref<2x8x32xf32> to memref<2x32xf32, strided<[32, 1], offset: 32>>
  linalg.copy ins(%k : memref<4x32xf32>) outs(%keys : memref<4x32xf32, strided<[32, 1], offset: ?>>)
  linalg.copy ins(%v : memref<2x32xf32>) outs(%values : memref<2x32xf32, strided<[32, 1], offset: 32>>)
  return
}

// -----

// A chain ends at a nest that reads what one of it wrote: the first two
// copies are one kernel, the scaling of the first copy's output a second.
// CHECK-LABEL: func.func @chain_ends_at_reader
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[T:alloc]][
// CHECK: } else {
// CHECK: memref.store %{{.*}}, %alloc_{{.*}}[
// CHECK: processor = block_x
// CHECK: memref.load %[[T]]
// CHECK: arith.mulf
// CHECK: processor = block_x
// CHECK-NOT: processor = block_x
// CHECK: return
func.func @chain_ends_at_reader(%x: memref<64xf32>, %y: memref<32xf32>) -> memref<16xf32> {
  %half = arith.constant 0.5 : f32
  %t = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%t : memref<64xf32>)
  %u = memref.alloc() : memref<32xf32>
  linalg.copy ins(%y : memref<32xf32>) outs(%u : memref<32xf32>)
  %s = memref.subview %t[0] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1]>>
  %out = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : memref<16xf32, strided<[1]>>) outs(%out : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %half : f32
    linalg.yield %m : f32
  }
  memref.dealloc %t : memref<64xf32>
  memref.dealloc %u : memref<32xf32>
  return %out : memref<16xf32>
}

// -----

// Function arguments may be the same buffer; host code between two nests
// that reads what the first wrote must run between them.
// CHECK-LABEL: func.func @arguments_may_alias
// CHECK-COUNT-2: processor = block_x
// CHECK-LABEL: func.func @host_between
// CHECK-COUNT-2: processor = block_x
func.func @arguments_may_alias(%a: memref<64xf32>, %b: memref<32xf32>, %c: memref<32xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<64xf32>)
  linalg.copy ins(%b : memref<32xf32>) outs(%c : memref<32xf32>)
  return
}
func.func @host_between(%x: memref<64xf32>, %y: memref<32xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%t : memref<64xf32>)
  %first = memref.load %t[%c0] : memref<64xf32>
  %u = memref.alloc() : memref<32xf32>
  linalg.copy ins(%y : memref<32xf32>) outs(%u : memref<32xf32>)
  memref.dealloc %t : memref<64xf32>
  memref.dealloc %u : memref<32xf32>
  return %first : f32
}
