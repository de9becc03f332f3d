// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{columns=32 depth=8 max-tile-elements=0}))' | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions))' | FileCheck %s --check-prefix=NARROW
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-block-contractions{rows=2 columns=16 depth=4}))' | FileCheck %s --check-prefix=SMALL
// RUN: spec-opt %s --spec-graph-to-llvm=block-contractions=false -mlir-disable-threading -mlir-print-ir-before=one-shot-bufferize 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF

// A projection of a dynamic number of rows by a 40x48 weight. 48 columns
// are a 32-column tile and a 16-column remainder; within each, full tiles
// of 8 rows, then the partial last tile as at most one tile of 6 rows (a
// verify of gamma = 5 proposals, in one pass) and halves (4, 2, 1 rows),
// each with a static row count (the row tiles of a column tile read the same weights
// one after the other); the reduction steps by 8. Each tile's accumulators are read
// before the reduction loop, carried through it as vectors, and written
// after it.
// CHECK-LABEL: func.func @project
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.*}} step %c8 iter_args(%{{.*}}) -> (tensor<?x32xf32>)
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %c0 to %c40 step %c8 iter_args(%[[A:.*]] = %[[ACC]]) -> (vector<8x32xf32>)
// CHECK: %[[X:.*]] = vector.transfer_read {{.*}} : tensor<8x8xf32>, vector<8x8xf32>
// CHECK: %[[W:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: vector.contract {{.*}} %[[X]], %[[W]], %[[A]] : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
// CHECK: vector.transfer_write %[[SUM]], {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
// The row tiles are marked: spec-parallelize-columns counts work per row.
// CHECK: } {spec.row_tiles}
// CHECK: vector.contract {{.*}} : vector<6x8xf32>, vector<8x32xf32> into vector<6x32xf32>
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x32xf32> into vector<4x32xf32>
// CHECK: vector.contract {{.*}} : vector<2x8xf32>, vector<8x32xf32> into vector<2x32xf32>
// CHECK: vector.contract {{.*}} : vector<8xf32>, vector<8x32xf32> into vector<32xf32>
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x16xf32> into vector<8x16xf32>
// CHECK: vector.contract {{.*}} : vector<6x8xf32>, vector<8x16xf32> into vector<6x16xf32>
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x16xf32> into vector<4x16xf32>
// CHECK: vector.contract {{.*}} : vector<2x8xf32>, vector<8x16xf32> into vector<2x16xf32>
// CHECK: vector.contract {{.*}} : vector<8xf32>, vector<8x16xf32> into vector<16xf32>
// CHECK-NOT: vector.contract
// CHECK: return

// SMALL-LABEL: func.func @project
// SMALL-NOT: linalg.generic
// SMALL: scf.for %{{.*}} step %c2 iter_args
// SMALL: vector.contract {{.*}} : vector<2x4xf32>, vector<4x16xf32> into vector<2x16xf32>
// SMALL: vector.contract {{.*}} : vector<4xf32>, vector<4x16xf32> into vector<16xf32>
// SMALL-NOT: vector.contract
// SMALL: return

// OFF-LABEL: func.func @project
// OFF: linalg.generic
// OFF-NOT: vector.contract
func.func @project(%x: tensor<?x40xf32>, %w: tensor<40x48xf32>) -> tensor<?x48xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = tensor.dim %x, %c0 : tensor<?x40xf32>
  %empty = tensor.empty(%rows) : tensor<?x48xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x48xf32>) -> tensor<?x48xf32>
  %0 = linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x40xf32>, tensor<40x48xf32>) outs(%init : tensor<?x48xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x48xf32>
  return %0 : tensor<?x48xf32>
}

// The importer's MatMul of activations (batch, sequence, k) by a weight: the
// batch loop steps by one, the sequence is the row loop.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: scf.for %{{.*}} step %c8
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
func.func @batched(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %init: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (k, n)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x16xf32>, tensor<16x32xf32>) outs(%init : tensor<?x?x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// A row count known at compile time needs no halving: 12 rows are one tile
// of 8 and one of 4.
// CHECK-LABEL: func.func @static_rows
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x32xf32> into vector<4x32xf32>
// CHECK-NOT: vector.contract
// CHECK: return
func.func @static_rows(%x: tensor<12x16xf32>, %w: tensor<16x32xf32>, %init: tensor<12x32xf32>) -> tensor<12x32xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<12x16xf32>, tensor<16x32xf32>) outs(%init : tensor<12x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<12x32xf32>
  return %0 : tensor<12x32xf32>
}

// The attention's product with the keys: the keys of one head are shared by
// every query row (the head is an outer loop, tiled by one). The cached
// positions n are dynamic: tiles of 32, the remainder in tiles of 8, then 1.
// CHECK-LABEL: func.func @attention_keys
// CHECK-NOT: linalg.generic
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x32xf32> into vector<4x32xf32>
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x8xf32> into vector<8x8xf32>
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x1xf32> into vector<8x1xf32>
// CHECK: return
func.func @attention_keys(%q: tensor<4x?x32xf32>, %kt: tensor<4x32x?xf32>, %init: tensor<4x?x?xf32>) -> tensor<4x?x?xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(h, r, j, d) -> (h, r, d)>,
                       affine_map<(h, r, j, d) -> (h, d, j)>,
                       affine_map<(h, r, j, d) -> (h, r, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : tensor<4x?x32xf32>, tensor<4x32x?xf32>) outs(%init : tensor<4x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x?x?xf32>
  return %0 : tensor<4x?x?xf32>
}

// The product with the values: the reduction over cached positions is
// dynamic: steps of 8, then of 1, in order.
// CHECK-LABEL: func.func @attention_values
// CHECK-NOT: linalg.generic
// CHECK: scf.for {{.*}} step %c8 iter_args({{.*}}) -> (vector<1x8x32xf32>)
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
// CHECK: scf.for {{.*}} step %c1 iter_args({{.*}}) -> (vector<1x8x32xf32>)
// CHECK: vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK: return
func.func @attention_values(%p: tensor<4x?x?xf32>, %v: tensor<4x?x32xf32>, %init: tensor<4x?x32xf32>) -> tensor<4x?x32xf32> {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(h, r, d, j) -> (h, r, j)>,
                       affine_map<(h, r, d, j) -> (h, j, d)>,
                       affine_map<(h, r, d, j) -> (h, r, d)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<4x?x?xf32>, tensor<4x?x32xf32>) outs(%init : tensor<4x?x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x?x32xf32>
  return %0 : tensor<4x?x32xf32>
}

// Left alone: a product whose second operand depends on every output loop
// (no row shares it), and f16.
// CHECK-LABEL: func.func @not_blocked
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: vector.contract
func.func @not_blocked(%x: tensor<4x16x8xf32>, %y: tensor<4x8xf32>, %init: tensor<4x16xf32>,
                       %xh: tensor<4x8xf16>, %wh: tensor<8x16xf16>, %init2: tensor<4x16xf16>)
    -> (tensor<4x16xf32>, tensor<4x16xf16>) {
  %0 = linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, n, k)>,
                       affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<4x16x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %1 = linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xh, %wh : tensor<4x8xf16>, tensor<8x16xf16>) outs(%init2 : tensor<4x16xf16>) {
  ^bb0(%a: f16, %b: f16, %acc: f16):
    %p = arith.mulf %a, %b : f16
    %s = arith.addf %acc, %p : f16
    linalg.yield %s : f16
  } -> tensor<4x16xf16>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf16>
}

// Three full tiles of 32 columns: their loop is marked for
// spec-parallelize-columns (each iteration writes whole output columns).
// CHECK-LABEL: func.func @wide
// CHECK: scf.for %{{.*}} = %c0 to %c96 step %c32
// CHECK: vector.contract {{.*}} : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
// CHECK: } {spec.column_tiles}
// The defaults: column tiles of 64 and at most 384 accumulator elements
// per tile. The 8-row tiles split their 64 columns into two of 32 (8 x 64
// would not fit the registers); the 6-, 4-, 2- and 1-row tiles keep 64, so
// that one row has four independent multiply-add chains, not two. The
// 32-column remainder is a tile of its own. The reduction steps by 4.
// NARROW-LABEL: func.func @wide
// NARROW: scf.for %{{.*}} step %c8 iter_args(%{{.*}}) -> (tensor<?x64xf32>)
// NARROW: scf.for %{{.*}} = %c0 to %c64 step %c32
// NARROW: scf.for %{{.*}} = %c0 to %c16 step %c4
// NARROW: vector.contract {{.*}} : vector<8x4xf32>, vector<4x32xf32> into vector<8x32xf32>
// NARROW: vector.contract {{.*}} : vector<6x4xf32>, vector<4x64xf32> into vector<6x64xf32>
// NARROW: vector.contract {{.*}} : vector<4x4xf32>, vector<4x64xf32> into vector<4x64xf32>
// NARROW: vector.contract {{.*}} : vector<2x4xf32>, vector<4x64xf32> into vector<2x64xf32>
// NARROW: vector.contract {{.*}} : vector<4xf32>, vector<4x64xf32> into vector<64xf32>
// NARROW: vector.contract {{.*}} : vector<8x4xf32>, vector<4x32xf32> into vector<8x32xf32>
// NARROW: vector.contract {{.*}} : vector<6x4xf32>, vector<4x32xf32> into vector<6x32xf32>
// NARROW: vector.contract {{.*}} : vector<4xf32>, vector<4x32xf32> into vector<32xf32>
// NARROW-NOT: vector.contract
// NARROW: return
func.func @wide(%x: tensor<?x16xf32>, %w: tensor<16x96xf32>, %init: tensor<?x96xf32>) -> tensor<?x96xf32> {
  %0 = linalg.matmul ins(%x, %w : tensor<?x16xf32>, tensor<16x96xf32>) outs(%init : tensor<?x96xf32>) -> tensor<?x96xf32>
  return %0 : tensor<?x96xf32>
}
