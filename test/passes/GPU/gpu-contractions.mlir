// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions))' -split-input-file | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{split-min-bytes=0 slice-depth=16}))' -split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{rows=2 vector-width=2}))' -split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{prologues=false}))' -split-input-file | FileCheck %s --check-prefix=NOPRO
// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-contractions{pairs=false}))' -split-input-file | FileCheck %s --check-prefix=NOPAIR

// A weight matrix (a 16-byte aligned global): a thread per 4 columns and
// tile of 8 rows. One aligned 128-bit load of the weights per k serves all
// the tile's rows; the accumulators start from the output. Fewer rows left:
// tiles of 6, 4 and 2 rows, then single rows.
// CHECK-LABEL: func.func @weights
// CHECK-NOT: linalg.generic
// CHECK: %[[W:.*]] = memref.get_global @w
// CHECK: %[[ROWS:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<1x?x64xf32>
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[ROWS]], %c8
// CHECK: %[[GROUPS:.*]] = arith.muli %c1{{.*}}, %c32
// CHECK: scf.parallel ({{.*}}, %[[TILE:.*]], %[[GROUP:.*]]) = ({{.*}}) to ({{.*}}, %[[TILES]], %[[GROUPS]])
// CHECK: %[[COLUMN:.*]] = arith.muli %[[GROUP]], %c4
// CHECK: %[[LEFT:.*]] = arith.subi
// CHECK: %[[FULL:.*]] = arith.cmpi uge, %[[LEFT]], %c8
// CHECK: scf.if %[[FULL]] {
// CHECK-COUNT-8: vector.load %arg1[{{.*}}] : memref<1x?x128xf32>, vector<4xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK-NEXT: %[[VEC:.*]] = vector.load %[[W]][%[[K]], %[[COLUMN]]] {alignment = 16 : i64} : memref<64x128xf32>, vector<4xf32>
// CHECK-COUNT-8: vector.fma %{{.*}}, %[[VEC]], %{{.*}} : vector<4xf32>
// CHECK-NOT: vector.load %[[W]]
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store
// CHECK: arith.cmpi uge, %{{.*}}, %c6
// CHECK: arith.cmpi uge, %{{.*}}, %c4
// CHECK: arith.cmpi uge, %{{.*}}, %c2
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for {{.*}} -> (vector<4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: return

// Split (split-min-bytes=0, slice-depth=16): 64 / 16 = 4 slices of the
// reduction, each into its own partial sums; a second loop nest adds them
// to the output in slice order.
// SPLIT-LABEL: func.func @weights
// SPLIT: %[[PARTIALS:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<4x1x?x128xf32>
// SPLIT: %[[THREADS:.*]] = arith.muli %c4{{.*}}, %c32
// SPLIT: scf.parallel ({{.*}}, %[[THREAD:.*]]) = ({{.*}}) to ({{.*}}, %[[THREADS]])
// SPLIT: %[[SLICE:.*]] = arith.divui %[[THREAD]], %c32
// SPLIT: %[[K0:.*]] = arith.muli %[[SLICE]], %c16
// SPLIT: %[[END:.*]] = arith.addi %[[K0]], %c16
// SPLIT: %[[K1:.*]] = arith.minui %[[END]], %c64
// SPLIT: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// SPLIT: scf.for %{{.*}} = %[[K0]] to %[[K1]] step %{{.*}} iter_args(%{{.*}} = %[[ZERO]],
// SPLIT: vector.store %{{.*}}, %[[PARTIALS]][%[[SLICE]],
// SPLIT: scf.parallel (%[[I:.*]], %[[J:.*]], %[[N:.*]]) =
// SPLIT: %[[OUT:.*]] = memref.load %arg1[%[[I]], %[[J]], %[[N]]]
// SPLIT: %[[SUM:.*]] = scf.for %[[S:.*]] = %{{.*}} to %c4{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[OUT]]) -> (f32)
// SPLIT: %[[PART:.*]] = memref.load %[[PARTIALS]][%[[S]], %[[I]], %[[J]], %[[N]]]
// SPLIT: arith.addf %[[ACC]], %[[PART]]
// SPLIT: memref.store %[[SUM]], %arg1[%[[I]], %[[J]], %[[N]]]
// SPLIT: memref.dealloc %[[PARTIALS]]

// rows=2 vector-width=2: tiles of 2 rows, then single rows; 2 columns per
// thread (64 groups).
// SMALL-LABEL: func.func @weights
// SMALL: arith.ceildivui %{{.*}}, %c2
// SMALL: arith.muli %c1{{.*}}, %c64
// SMALL: arith.cmpi uge, %{{.*}}, %c2
// SMALL-NOT: arith.cmpi uge
// SMALL: vector.load %{{.*}} {alignment = 8 : i64} : memref<64x128xf32>, vector<2xf32>
memref.global "private" constant @w : memref<64x128xf32> = dense<1.0> {alignment = 64 : i64}
func.func @weights(%a: memref<1x?x64xf32>, %out: memref<1x?x128xf32>) {
  %w = memref.get_global @w : memref<64x128xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %w : memref<1x?x64xf32>, memref<64x128xf32>) outs(%out : memref<1x?x128xf32>) {
  ^bb0(%in: f32, %in_1: f32, %o: f32):
    %0 = arith.mulf %in, %in_1 : f32
    %1 = arith.addf %o, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Weights of unknown alignment (a function argument): vector loads with the
// element's alignment.
// CHECK-LABEL: func.func @unaligned
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] : memref<64x128xf32>, vector<4xf32>
func.func @unaligned(%a: memref<?x64xf32>, %w: memref<64x128xf32>, %out: memref<?x128xf32>) {
  linalg.matmul ins(%a, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%out : memref<?x128xf32>)
  return
}

// -----

// The output's initializing fill, just before (an allocation between):
// the accumulators start from its value, and the fill is gone (a kernel
// launch fewer). Split, the partial sums are added to the fill's value.
// CHECK-LABEL: func.func @filled
// CHECK-SAME: (%{{.*}}: memref<?x64xf32>, %{{.*}}: memref<64x128xf32>, %[[START:.*]]: f32)
// CHECK-NOT: linalg.fill
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[START]] : f32 to vector<4xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[SPLAT]], %{{.*}} = %[[SPLAT]],
// SPLIT-LABEL: func.func @filled
// SPLIT-SAME: %[[START:[^:]*]]: f32)
// SPLIT-NOT: linalg.fill
// SPLIT: scf.for %{{.*}} iter_args(%{{.*}} = %[[START]]) -> (f32)
func.func @filled(%a: memref<?x64xf32>, %w: memref<64x128xf32>, %start: f32) -> memref<?x128xf32> {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %a, %c0 : memref<?x64xf32>
  %out = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x128xf32>
  linalg.fill ins(%start : f32) outs(%out : memref<?x128xf32>)
  %unrelated = memref.alloc() : memref<4xf32>
  linalg.matmul ins(%a, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%out : memref<?x128xf32>)
  memref.dealloc %unrelated : memref<4xf32>
  return %out : memref<?x128xf32>
}

// -----

// An elementwise op on the output right after the contraction (a residual
// add into a fresh buffer, an allocation between): the contraction's
// threads apply it to their accumulators, lane by lane, and store only its
// result (nothing else reads the product, whose buffer goes). Split, it
// stays a separate op.
// CHECK-LABEL: func.func @residual
// CHECK-NOT: linalg.generic
// CHECK: %[[SUM:.*]] = memref.alloc(%{{.*}}) : memref<?x128xf32>
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK: %[[ACC:.*]]:8 = scf.for
// CHECK-NOT: vector.store
// CHECK: %[[LANE:.*]] = vector.extract %[[ACC]]#0[0] : f32 from vector<4xf32>
// CHECK: %[[X:.*]] = memref.load %arg2[
// CHECK: %[[ADD:.*]] = arith.addf %[[LANE]], %[[X]] : f32
// CHECK: memref.store %[[ADD]], %[[SUM]][
// CHECK: vector.extract %[[ACC]]#0[1]
// CHECK: vector.extract %[[ACC]]#0[3]
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
// CHECK: return %[[SUM]]
// SPLIT-LABEL: func.func @residual
// SPLIT: linalg.generic
func.func @residual(%a: memref<?x64xf32>, %w: memref<64x128xf32>, %x: memref<?x128xf32>) -> memref<?x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %a, %c0 : memref<?x64xf32>
  %out = memref.alloc(%rows) : memref<?x128xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<?x128xf32>)
  linalg.matmul ins(%a, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%out : memref<?x128xf32>)
  %sum = memref.alloc(%rows) : memref<?x128xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%out, %x : memref<?x128xf32>, memref<?x128xf32>) outs(%sum : memref<?x128xf32>) {
  ^bb0(%p: f32, %in: f32, %o: f32):
    %r = arith.addf %p, %in : f32
    linalg.yield %r : f32
  }
  memref.dealloc %out : memref<?x128xf32>
  return %sum : memref<?x128xf32>
}

// -----

// Epilogues left apart: the consumer reads the output transposed, or writes
// a buffer that may be the contraction's input (a function argument); the
// product is stored where it is read later.
// CHECK-LABEL: func.func @no_epilogue
// CHECK: vector.store
// CHECK: linalg.generic
// CHECK: vector.store
// CHECK: linalg.generic
func.func @no_epilogue(%a: memref<128x64xf32>, %w: memref<64x128xf32>, %y: memref<128x128xf32>) -> memref<128x128xf32> {
  %out = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%a, %w : memref<128x64xf32>, memref<64x128xf32>) outs(%out : memref<128x128xf32>)
  %t = memref.alloc() : memref<128x128xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%out : memref<128x128xf32>) outs(%t : memref<128x128xf32>) {
  ^bb0(%p: f32, %o: f32):
    linalg.yield %p : f32
  }
  %out2 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%a, %w : memref<128x64xf32>, memref<64x128xf32>) outs(%out2 : memref<128x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%out2 : memref<128x128xf32>) outs(%y : memref<128x128xf32>) {
  ^bb0(%p: f32, %o: f32):
    %n = arith.negf %p : f32
    linalg.yield %n : f32
  }
  memref.dealloc %out : memref<128x128xf32>
  memref.dealloc %out2 : memref<128x128xf32>
  return %t : memref<128x128xf32>
}

// -----

// A fill kept: something between it and the contraction reads the output.
// CHECK-LABEL: func.func @fill_read_between
// CHECK: linalg.fill
// CHECK: memref.load
// CHECK: vector.load %arg2
func.func @fill_read_between(%a: memref<?x64xf32>, %w: memref<64x128xf32>, %out: memref<?x128xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<?x128xf32>)
  %first = memref.load %out[%c0, %c0] : memref<?x128xf32>
  linalg.matmul ins(%a, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%out : memref<?x128xf32>)
  return %first : f32
}

// -----

// Attention scores against keys stored [head, 32, positions]: the heads
// index the keys too (an outer loop of threads), the positions are dynamic
// columns: one column per thread, scalar loads; the keys are read once for
// all query rows. The reduction is not split (the keys are not static).
// CHECK-LABEL: func.func @scores
// CHECK: %[[POSITIONS:.*]] = memref.dim %arg1, %c3
// CHECK: %[[COLUMNS:.*]] = arith.muli %c1{{.*}}, %[[POSITIONS]]
// CHECK: scf.parallel (%[[BATCH:[^,]+]], %[[HEAD:[^,]+]], %{{[^,]+}}, %{{[^,]+}}) = ({{.*}}) to (%{{.*}}, %c4, %{{.*}}, %[[COLUMNS]])
// CHECK: vector.load %arg1[%[[BATCH]], %[[HEAD]], %{{.*}}, %{{.*}}] : memref<1x4x32x?xf32>, vector<1xf32>
// SPLIT-LABEL: func.func @scores
// SPLIT-NOT: memref.alloc
// SPLIT: return
func.func @scores(%q: memref<1x4x?x32xf32>, %keys: memref<1x4x32x?xf32>, %out: memref<1x4x?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : memref<1x4x?x32xf32>, memref<1x4x32x?xf32>) outs(%out : memref<1x4x?x?xf32>) {
  ^bb0(%in: f32, %in_1: f32, %o: f32):
    %0 = arith.mulf %in, %in_1 : f32
    %1 = arith.addf %0, %o : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Left alone: a reduction that is not a contraction, a contraction whose
// body does more than multiply and add, other element types, and tensors.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: linalg.generic
// CHECK: linalg.matmul
// CHECK-NOT: scf.parallel
func.func @left_alone(%a: memref<?x64xf32>, %w: memref<64x128xf32>, %out: memref<?x128xf32>, %sum: memref<?x1xf32>,
                      %ah: memref<?x64xf16>, %wh: memref<64x128xf16>, %outh: memref<?x128xf16>,
                      %at: tensor<?x64xf32>, %wt: tensor<64x128xf32>, %outt: tensor<?x128xf32>) -> tensor<?x128xf32> {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%a : memref<?x64xf32>) outs(%sum : memref<?x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %o, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%out : memref<?x128xf32>) {
  ^bb0(%in: f32, %in_1: f32, %o: f32):
    %0 = arith.mulf %in, %in_1 : f32
    %1 = math.absf %0 : f32
    %2 = arith.addf %o, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ah, %wh : memref<?x64xf16>, memref<64x128xf16>) outs(%outh : memref<?x128xf16>) {
  ^bb0(%in: f16, %in_1: f16, %o: f16):
    %0 = arith.mulf %in, %in_1 : f16
    %1 = arith.addf %o, %0 : f16
    linalg.yield %1 : f16
  }
  %r = linalg.matmul ins(%at, %wt : tensor<?x64xf32>, tensor<64x128xf32>) outs(%outt : tensor<?x128xf32>) -> tensor<?x128xf32>
  return %r : tensor<?x128xf32>
}

// -----

// A norm's scaling (x / root * gain) read by two projections and nothing
// else before its buffer is overwritten: each contraction's threads compute
// it where they read their rows input, and the scaling is erased.
// CHECK-LABEL: func.func @prologue
// CHECK-NOT: linalg.generic
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: vector.load %[[W1:.*]][
// CHECK: %[[X:.*]] = memref.load %arg0[%[[ROW:.*]], %[[K:.*]]] : memref<?x64xf32>
// CHECK: %[[ROOT:.*]] = memref.load %arg1[%[[ROW]], %c0{{.*}}] : memref<?x1xf32>
// CHECK: %[[GAIN:.*]] = memref.load %arg2[%[[K]]] : memref<64xf32>
// CHECK: %[[DIV:.*]] = arith.divf %[[X]], %[[ROOT]] : f32
// CHECK: %[[A:.*]] = arith.mulf %[[DIV]], %[[GAIN]] : f32
// CHECK: vector.broadcast %[[A]]
// CHECK: scf.parallel
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill
// NOPRO-LABEL: func.func @prologue
// NOPRO: linalg.generic
// NOPRO: linalg.yield
// NOPRO-NOT: arith.divf
// NOPRO: return
func.func @prologue(%x: memref<?x64xf32>, %root: memref<?x1xf32>, %gain: memref<64xf32>, %w1: memref<64x128xf32>, %w2: memref<64x128xf32>) -> (memref<?x128xf32>, memref<?x128xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x64xf32>
  %o1 = memref.alloc(%rows) : memref<?x128xf32>
  %o2 = memref.alloc(%rows) : memref<?x128xf32>
  %normed = memref.alloc(%rows) : memref<?x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %root, %gain : memref<?x64xf32>, memref<?x1xf32>, memref<64xf32>) outs(%normed : memref<?x64xf32>) {
  ^bb0(%in: f32, %r: f32, %g: f32, %o: f32):
    %d = arith.divf %in, %r : f32
    %m = arith.mulf %d, %g : f32
    linalg.yield %m : f32
  }
  linalg.matmul ins(%normed, %w1 : memref<?x64xf32>, memref<64x128xf32>) outs(%o1 : memref<?x128xf32>)
  linalg.matmul ins(%normed, %w2 : memref<?x64xf32>, memref<64x128xf32>) outs(%o2 : memref<?x128xf32>)
  linalg.fill ins(%zero : f32) outs(%normed : memref<?x64xf32>)
  memref.dealloc %normed : memref<?x64xf32>
  return %o1, %o2 : memref<?x128xf32>, memref<?x128xf32>
}

// -----

// Producers kept: the scaling's buffer is returned; the second one's input
// is written before the contraction reads it; the third's body calls a math
// function (every thread reading an element would compute it).
// CHECK-LABEL: func.func @no_prologue
// CHECK: linalg.generic
// CHECK: scf.parallel
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK: scf.parallel
// CHECK: linalg.generic
// CHECK: scf.parallel
// CHECK: return
func.func @no_prologue(%x: memref<?x64xf32>, %root: memref<?x1xf32>, %w: memref<64x128xf32>) -> memref<?x64xf32> {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x64xf32>
  %o = memref.alloc(%rows) : memref<?x128xf32>
  %normed = memref.alloc(%rows) : memref<?x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %root : memref<?x64xf32>, memref<?x1xf32>) outs(%normed : memref<?x64xf32>) {
  ^bb0(%in: f32, %r: f32, %out: f32):
    %d = arith.divf %in, %r : f32
    linalg.yield %d : f32
  }
  linalg.matmul ins(%normed, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%o : memref<?x128xf32>)
  %scaled = memref.alloc(%rows) : memref<?x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %root : memref<?x64xf32>, memref<?x1xf32>) outs(%scaled : memref<?x64xf32>) {
  ^bb0(%in: f32, %r: f32, %out: f32):
    %d = arith.divf %in, %r : f32
    linalg.yield %d : f32
  }
  linalg.fill ins(%one : f32) outs(%root : memref<?x1xf32>)
  linalg.matmul ins(%scaled, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%o : memref<?x128xf32>)
  %exp = memref.alloc(%rows) : memref<?x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x64xf32>) outs(%exp : memref<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.matmul ins(%exp, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%o : memref<?x128xf32>)
  memref.dealloc %scaled : memref<?x64xf32>
  memref.dealloc %exp : memref<?x64xf32>
  memref.dealloc %o : memref<?x128xf32>
  return %normed : memref<?x64xf32>
}

// -----

// SwiGLU: the up projection's epilogue reads the gate projection's product
// at the same element. The gate's threads compute both in one loop over the
// reduction (one load of each weight and of the rows per step) and apply the
// epilogue to the accumulators; the gate's products, read nowhere else, are
// never stored and their buffer goes.
// CHECK-LABEL: func.func @pair
// CHECK: %[[UP:.*]] = memref.alloc
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK-NEXT: vector.load %arg1[
// CHECK-NEXT: vector.load %arg2[
// CHECK-COUNT-2: vector.fma
// CHECK-NOT: scf.parallel
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[UP]][
// CHECK-NOT: scf.parallel
// CHECK-NOT: linalg.
// CHECK-NOT: memref.dealloc
// CHECK: return %[[UP]]
// NOPAIR-LABEL: func.func @pair
// NOPAIR: scf.parallel
// NOPAIR: scf.parallel
// NOPAIR: math.exp
// NOPAIR: return
func.func @pair(%x: memref<?x64xf32>, %wg: memref<64x128xf32>, %wu: memref<64x128xf32>) -> memref<?x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x64xf32>
  %gate = memref.alloc(%rows) : memref<?x128xf32>
  %up = memref.alloc(%rows) : memref<?x128xf32>
  linalg.fill ins(%zero : f32) outs(%gate : memref<?x128xf32>)
  linalg.matmul ins(%x, %wg : memref<?x64xf32>, memref<64x128xf32>) outs(%gate : memref<?x128xf32>)
  linalg.fill ins(%zero : f32) outs(%up : memref<?x128xf32>)
  linalg.matmul ins(%x, %wu : memref<?x64xf32>, memref<64x128xf32>) outs(%up : memref<?x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%gate, %up : memref<?x128xf32>, memref<?x128xf32>) outs(%up : memref<?x128xf32>) {
  ^bb0(%g: f32, %u: f32, %o: f32):
    %n = arith.negf %g : f32
    %e = math.exp %n : f32
    %s = arith.addf %e, %one : f32
    %r = arith.divf %one, %s : f32
    %silu = arith.mulf %g, %r : f32
    %m = arith.mulf %silu, %u : f32
    linalg.yield %m : f32
  }
  memref.dealloc %gate : memref<?x128xf32>
  return %up : memref<?x128xf32>
}

// -----

// Pairs refused: the second contraction reads other rows (two nests); the
// next one's weights are another shape (two nests). The last pair is
// computed together, and the first product, read again after the
// epilogue, is stored.
// CHECK-LABEL: func.func @no_pair
// CHECK: scf.parallel
// CHECK: :8 = scf.for
// CHECK: scf.parallel
// CHECK: :8 = scf.for
// CHECK: scf.parallel
// CHECK: :8 = scf.for
// CHECK: scf.parallel
// CHECK: :8 = scf.for
// CHECK: scf.parallel
// CHECK: %[[BOTH:.*]]:16 = scf.for
// CHECK: vector.store %[[BOTH]]#0, %[[FIRST:.*]][
// CHECK-NOT: scf.parallel
// CHECK: memref.load %[[FIRST]][%c0, %c0]
func.func @no_pair(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %wg: memref<64x128xf32>, %wu: memref<64x128xf32>, %wn: memref<64x64xf32>) -> (memref<?x128xf32>, memref<?x64xf32>, memref<?x128xf32>, f32) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x64xf32>
  %a = memref.alloc(%rows) : memref<?x128xf32>
  %b = memref.alloc(%rows) : memref<?x128xf32>
  linalg.matmul ins(%x, %wg : memref<?x64xf32>, memref<64x128xf32>) outs(%a : memref<?x128xf32>)
  linalg.matmul ins(%y, %wu : memref<?x64xf32>, memref<64x128xf32>) outs(%b : memref<?x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<?x128xf32>, memref<?x128xf32>) outs(%b : memref<?x128xf32>) {
  ^bb0(%g: f32, %u: f32, %o: f32):
    %m = arith.mulf %g, %u : f32
    linalg.yield %m : f32
  }
  %c = memref.alloc(%rows) : memref<?x64xf32>
  %d = memref.alloc(%rows) : memref<?x128xf32>
  linalg.matmul ins(%x, %wn : memref<?x64xf32>, memref<64x64xf32>) outs(%c : memref<?x64xf32>)
  linalg.matmul ins(%x, %wu : memref<?x64xf32>, memref<64x128xf32>) outs(%d : memref<?x128xf32>)
  %e = memref.alloc(%rows) : memref<?x128xf32>
  %f = memref.alloc(%rows) : memref<?x128xf32>
  linalg.matmul ins(%x, %wg : memref<?x64xf32>, memref<64x128xf32>) outs(%e : memref<?x128xf32>)
  linalg.matmul ins(%x, %wu : memref<?x64xf32>, memref<64x128xf32>) outs(%f : memref<?x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%e, %f : memref<?x128xf32>, memref<?x128xf32>) outs(%f : memref<?x128xf32>) {
  ^bb0(%g: f32, %u: f32, %o: f32):
    %m = arith.mulf %g, %u : f32
    linalg.yield %m : f32
  }
  %read = memref.load %e[%c0, %c0] : memref<?x128xf32>
  return %b, %c, %f, %read : memref<?x128xf32>, memref<?x64xf32>, memref<?x128xf32>, f32
}
