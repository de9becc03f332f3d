// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-parallelize-columns{min-work=32768}))' -split-input-file | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-parallelize-columns))' -split-input-file | FileCheck %s --check-prefix=MINWORK
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-parallelize-columns{min-work=65536}))' -split-input-file | FileCheck %s --check-prefix=ROWTILES

// The column tiles of a blocked contraction after bufferization, as
// spec-block-contractions marks them: 8 tiles of 32 columns, each a loop of
// 16 depth steps of 8: 256 x 128 multiply-adds per row.
// CHECK-LABEL: func.func @columns(
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT: memref.subview %{{.*}}[0, %[[J]]] [1, 32] [1, 1]
// CHECK: scf.for
// CHECK: vector.contract
// CHECK-NOT: spec.column_tiles
// A contraction of less work than min-work (by default 131072) stays on one
// thread.
// MINWORK-LABEL: func.func @columns(
// MINWORK-NOT: scf.parallel
// MINWORK: scf.for %{{.*}} = %{{.*}} to %c256 step %c32 {
// MINWORK-NOT: spec.column_tiles
func.func @columns(%a: memref<1x128xf32>, %w: memref<128x256xf32>, %out: memref<1x256xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c256 step %c32 {
    %o = memref.subview %out[0, %j] [1, 32] [1, 1] : memref<1x256xf32> to memref<1x32xf32, strided<[256, 1], offset: ?>>
    %acc0 = vector.transfer_read %o[%c0, %c0], %f0 : memref<1x32xf32, strided<[256, 1], offset: ?>>, vector<32xf32>
    %acc = scf.for %k = %c0 to %c128 step %c8 iter_args(%acc1 = %acc0) -> (vector<32xf32>) {
      %x = vector.transfer_read %a[%c0, %k], %f0 : memref<1x128xf32>, vector<8xf32>
      %y = vector.transfer_read %w[%k, %j], %f0 : memref<128x256xf32>, vector<8x32xf32>
      %r = vector.contract {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>} %x, %y, %acc1 : vector<8xf32>, vector<8x32xf32> into vector<32xf32>
      scf.yield %r : vector<32xf32>
    }
    vector.transfer_write %acc, %o[%c0, %c0] : vector<32xf32>, memref<1x32xf32, strided<[256, 1], offset: ?>>
  } {spec.column_tiles}
  return
}

// -----

// A reduction over a length known only at run time (attention over the
// cached positions): the work cannot be told, the loop stays.
// CHECK-LABEL: func.func @dynamic_depth(
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256 step %c32 {
// CHECK-NOT: spec.column_tiles
func.func @dynamic_depth(%a: memref<1x?xf32>, %w: memref<?x256xf32>, %out: memref<1x256xf32>, %depth: index) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c256 step %c32 {
    %o = memref.subview %out[0, %j] [1, 32] [1, 1] : memref<1x256xf32> to memref<1x32xf32, strided<[256, 1], offset: ?>>
    %acc0 = vector.transfer_read %o[%c0, %c0], %f0 : memref<1x32xf32, strided<[256, 1], offset: ?>>, vector<32xf32>
    %acc = scf.for %k = %c0 to %depth step %c8 iter_args(%acc1 = %acc0) -> (vector<32xf32>) {
      %x = vector.transfer_read %a[%c0, %k], %f0 : memref<1x?xf32>, vector<8xf32>
      %y = vector.transfer_read %w[%k, %j], %f0 : memref<?x256xf32>, vector<8x32xf32>
      %r = vector.contract {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>} %x, %y, %acc1 : vector<8xf32>, vector<8x32xf32> into vector<32xf32>
      scf.yield %r : vector<32xf32>
    }
    vector.transfer_write %acc, %o[%c0, %c0] : vector<32xf32>, memref<1x32xf32, strided<[256, 1], offset: ?>>
  } {spec.column_tiles}
  return
}

// -----

// A body that allocates stays on the calling thread (the runtime's
// allocator is not shared among threads).
// CHECK-LABEL: func.func @allocates(
// CHECK-NOT: scf.parallel
// CHECK: memref.alloc
func.func @allocates(%a: memref<1x64xf32>, %w: memref<64x256xf32>, %out: memref<1x256xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c256 step %c32 {
    %scratch = memref.alloc() : memref<32xf32>
    %acc0 = vector.transfer_read %scratch[%c0], %f0 : memref<32xf32>, vector<32xf32>
    %acc = scf.for %k = %c0 to %c64 step %c8 iter_args(%acc1 = %acc0) -> (vector<32xf32>) {
      %x = vector.transfer_read %a[%c0, %k], %f0 : memref<1x64xf32>, vector<8xf32>
      %y = vector.transfer_read %w[%k, %j], %f0 : memref<64x256xf32>, vector<8x32xf32>
      %r = vector.contract {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>} %x, %y, %acc1 : vector<8xf32>, vector<8x32xf32> into vector<32xf32>
      scf.yield %r : vector<32xf32>
    }
    %o = memref.subview %out[0, %j] [1, 32] [1, 1] : memref<1x256xf32> to memref<1x32xf32, strided<[256, 1], offset: ?>>
    vector.transfer_write %acc, %o[%c0, %c0] : vector<32xf32>, memref<1x32xf32, strided<[256, 1], offset: ?>>
    memref.dealloc %scratch : memref<32xf32>
  } {spec.column_tiles}
  return
}

// -----

// Unmarked loops are not touched.
// CHECK-LABEL: func.func @unmarked(
// CHECK-NOT: scf.parallel
func.func @unmarked(%out: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c256 step %c1 {
    memref.store %f0, %out[%j] : memref<256xf32>
  }
  return
}

// -----

// A forward's rows take one of the row tiles (here 8 rows, then the rest
// one by one), each with its own contraction: a row does the work of one,
// 128 x 256 multiply-adds, not of both. With min-work 32768 the columns go
// to threads; with 65536 (the sum over both row tiles) they stay.
// CHECK-LABEL: func.func @row_tiles(
// CHECK: scf.parallel
// ROWTILES-LABEL: func.func @row_tiles(
// ROWTILES-NOT: scf.parallel
// ROWTILES: scf.for %{{.*}} = %{{.*}} to %c256 step %c32 {
func.func @row_tiles(%a: memref<?x128xf32>, %w: memref<128x256xf32>, %out: memref<?x256xf32>, %rows: index, %full: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c256 step %c32 {
    scf.for %i = %c0 to %full step %c8 {
      %o = memref.subview %out[%i, %j] [8, 32] [1, 1] : memref<?x256xf32> to memref<8x32xf32, strided<[256, 1], offset: ?>>
      %acc0 = vector.transfer_read %o[%c0, %c0], %f0 : memref<8x32xf32, strided<[256, 1], offset: ?>>, vector<8x32xf32>
      %acc = scf.for %k = %c0 to %c128 step %c8 iter_args(%acc1 = %acc0) -> (vector<8x32xf32>) {
        %x = vector.transfer_read %a[%i, %k], %f0 : memref<?x128xf32>, vector<8x8xf32>
        %y = vector.transfer_read %w[%k, %j], %f0 : memref<128x256xf32>, vector<8x32xf32>
        %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %x, %y, %acc1 : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
        scf.yield %r : vector<8x32xf32>
      }
      vector.transfer_write %acc, %o[%c0, %c0] : vector<8x32xf32>, memref<8x32xf32, strided<[256, 1], offset: ?>>
    } {spec.row_tiles}
    scf.for %i = %full to %rows step %c1 {
      %o = memref.subview %out[%i, %j] [1, 32] [1, 1] : memref<?x256xf32> to memref<1x32xf32, strided<[256, 1], offset: ?>>
      %acc0 = vector.transfer_read %o[%c0, %c0], %f0 : memref<1x32xf32, strided<[256, 1], offset: ?>>, vector<32xf32>
      %acc = scf.for %k = %c0 to %c128 step %c8 iter_args(%acc1 = %acc0) -> (vector<32xf32>) {
        %x = vector.transfer_read %a[%i, %k], %f0 : memref<?x128xf32>, vector<8xf32>
        %y = vector.transfer_read %w[%k, %j], %f0 : memref<128x256xf32>, vector<8x32xf32>
        %r = vector.contract {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>} %x, %y, %acc1 : vector<8xf32>, vector<8x32xf32> into vector<32xf32>
        scf.yield %r : vector<32xf32>
      }
      vector.transfer_write %acc, %o[%c0, %c0] : vector<32xf32>, memref<1x32xf32, strided<[256, 1], offset: ?>>
    } {spec.row_tiles}
  } {spec.column_tiles}
  return
}
