// RUN: spec-opt %s --spec-fuse-attention="rows-per-group=1 positions-per-block=2" --canonicalize --cse | FileCheck %s
// RUN: spec-opt %s --spec-fuse-attention --canonicalize --cse | FileCheck %s --check-prefix=DEFAULT

// The attention of a grouped-query decoder as the ONNX importer writes it
// (torch's k[:, :, None].expand(...).reshape(...), a transposed product with
// the queries, the scale and causal mask, softmax, the product with the
// values expanded the same way) becomes one pass over the cached rows per
// query row: nothing is expanded, transposed or materialized per score.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#bc = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#kt = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

func.func @gqa(%q: tensor<?x4x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>,
               %mask: tensor<?x?xi1>, %shape5: tensor<5xindex>, %shape4: tensor<4xindex>) -> tensor<?x4x?x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 2.828427 : f32
  %b = tensor.dim %q, %c0 : tensor<?x4x?x8xf32>
  %s = tensor.dim %q, %c2 : tensor<?x4x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  // keys[:, :, None].expand(1, 2, 2, t, 8).reshape(1, 4, t, 8), transposed
  %k5 = tensor.reshape %keys(%shape5) : (tensor<1x2x?x8xf32>, tensor<5xindex>) -> tensor<?x2x1x?x8xf32>
  %ke = tensor.empty(%b, %t) : tensor<?x2x2x?x8xf32>
  %kb = linalg.generic {indexing_maps = [#bc, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k5 : tensor<?x2x1x?x8xf32>) outs(%ke : tensor<?x2x2x?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x2x2x?x8xf32>
  %k4 = tensor.reshape %kb(%shape4) : (tensor<?x2x2x?x8xf32>, tensor<4xindex>) -> tensor<?x4x?x8xf32>
  %kte = tensor.empty(%b, %t) : tensor<?x4x8x?xf32>
  %kt = linalg.transpose ins(%k4 : tensor<?x4x?x8xf32>) outs(%kte : tensor<?x4x8x?xf32>) permutation = [0, 1, 3, 2]
  %se = tensor.empty(%b, %s, %t) : tensor<?x4x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kt : tensor<?x4x?x8xf32>, tensor<?x4x8x?xf32>) outs(%sz : tensor<?x4x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %a, %k : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x?xf32>
  // where(mask, -inf, scores / sqrt(8))
  %x = linalg.generic {indexing_maps = [#mask, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask, %scores : tensor<?x?xi1>, tensor<?x4x?x?xf32>) outs(%se : tensor<?x4x?x?xf32>) {
  ^bb0(%masked: i1, %v: f32, %out: f32):
    %d = arith.divf %v, %scale : f32
    %r = arith.select %masked, %ninf, %d : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x?xf32>
  // softmax over the last dimension
  %re = tensor.empty(%b, %s) : tensor<?x4x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<?x4x?x1xf32>) -> tensor<?x4x?x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<?x4x?x?xf32>) outs(%mi : tensor<?x4x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x1xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %max : tensor<?x4x?x?xf32>, tensor<?x4x?x1xf32>) outs(%se : tensor<?x4x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<?x4x?x1xf32>) -> tensor<?x4x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<?x4x?x?xf32>) outs(%si : tensor<?x4x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<?x4x?x?xf32>, tensor<?x4x?x1xf32>) outs(%se : tensor<?x4x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x?xf32>
  // p . values (expanded the same way, not transposed)
  %v5 = tensor.reshape %values(%shape5) : (tensor<1x2x?x8xf32>, tensor<5xindex>) -> tensor<?x2x1x?x8xf32>
  %vb = linalg.generic {indexing_maps = [#bc, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%v5 : tensor<?x2x1x?x8xf32>) outs(%ke : tensor<?x2x2x?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x2x2x?x8xf32>
  %v4 = tensor.reshape %vb(%shape4) : (tensor<?x2x2x?x8xf32>, tensor<4xindex>) -> tensor<?x4x?x8xf32>
  %oe = tensor.empty(%b, %s) : tensor<?x4x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %out = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v4 : tensor<?x4x?x?xf32>, tensor<?x4x?x8xf32>) outs(%oz : tensor<?x4x?x8xf32>) {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x8xf32>
  return %out : tensor<?x4x?x8xf32>
}

// CHECK-LABEL: func.func @gqa(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x4x?x8xf32>, %[[K:[^:]*]]: tensor<1x2x?x8xf32>, %[[V:[^:]*]]: tensor<1x2x?x8xf32>, %[[MASK:[^:]*]]: tensor<?x?xi1>
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.reshape
// The sizes the reshapes were assumed to have are checked when it runs.
// CHECK: %[[T:.*]] = tensor.dim %[[K]], %c2
// CHECK: cf.assert %{{.*}}, "spec-fuse-attention: the keys do not have the sizes the attention was fused for"
// CHECK: cf.assert %{{.*}}, "spec-fuse-attention: the values do not have the sizes the attention was fused for"
// Each sequence of the batch reads its own keys and values.
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[T]], %c2 : index
// CHECK: scf.for %[[B:.*]] = %c0 to %{{.*}} step %c1
// CHECK-NEXT: scf.for %[[H:.*]] = %c0 to %c4 step %c1
// Query head h reads kv head h / 2.
// CHECK-NEXT: %[[KVH:.*]] = arith.divui %[[H]], %c2 : index
// CHECK-NEXT: scf.for %[[ROW:.*]] = %c0 to %{{.*}} step %c1
// CHECK-NEXT: %[[QROW:.*]] = vector.transfer_read %[[Q]][%[[B]], %[[H]], %[[ROW]], %c0]
// CHECK-NEXT: %[[STATE:.*]]:3 = scf.for %{{.*}} = %c0 to %[[BLOCKS]] step %c1 iter_args(%[[M:.*]] = %cst{{.*}}, %[[L:.*]] = %cst{{.*}}, %[[ACC:.*]] = %cst{{.*}}) -> (f32, vector<2xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %[[K]][%[[B]], %[[KVH]], %{{.*}}, %c0]
// CHECK-NOT: vector.transfer_read %[[V]]
// The scores (blocks narrower than a register): q . k summed by halves per
// position, then the modifier's body on the block's scores at once, the mask
// gathered per position.
// CHECK: arith.mulf %[[QROW]], %{{.*}} : vector<8xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [4], sizes = [4], strides = [1]}
// CHECK: vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: tensor.extract %[[MASK]][%[[ROW]], %{{.*}}] : tensor<?x?xi1>
// CHECK: tensor.extract %[[MASK]][%[[ROW]], %{{.*}}] : tensor<?x?xi1>
// CHECK: vector.from_elements %{{.*}}, %{{.*}} : vector<2xi1>
// CHECK: arith.divf %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<2xi1>, vector<2xf32>
// One rescale per block, the block's weights as one vector, summed per lane.
// The maxima are compares and selects (maxps), not NaN-propagating maximumf.
// CHECK: arith.cmpf ogt, %{{.*}}, %{{.*}} : vector<1xf32>
// CHECK: arith.cmpf ogt, %[[M]], %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: %[[WEIGHTS:.*]] = math.exp %{{.*}} : vector<2xf32>
// CHECK: vector.fma %[[L]], %{{.*}}, %[[WEIGHTS]] : vector<2xf32>
// Blocks without a zero weight add every value row; the others skip them.
// CHECK: %[[NONZERO:.*]] = arith.cmpf une, %[[WEIGHTS]], %{{.*}} : vector<2xf32>
// CHECK: %[[ALL:.*]] = vector.reduction <and>, %[[NONZERO]] : vector<2xi1> into i1
// Each value row is read next to its multiply-add (read with the keys, the
// rows stayed live across the block's exp and were spilled).
// CHECK: scf.if %[[ALL]] -> (vector<8xf32>)
// CHECK-NOT: arith.select
// CHECK: %[[V0:.*]] = vector.transfer_read %[[V]][%[[B]], %[[KVH]], %{{.*}}, %c0]
// CHECK: vector.fma %{{.*}}, %[[V0]], %{{.*}} : vector<8xf32>
// CHECK-NOT: arith.select
// CHECK: %[[V1:.*]] = vector.transfer_read %[[V]][%[[B]], %[[KVH]], %{{.*}}, %c0]
// CHECK: vector.fma %{{.*}}, %[[V1]], %{{.*}} : vector<8xf32>
// CHECK: } else {
// CHECK: vector.transfer_read %[[V]]
// CHECK: vector.fma
// CHECK: arith.select
// CHECK: vector.transfer_read %[[V]]
// CHECK: vector.fma
// CHECK: arith.select
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : f32, vector<2xf32>, vector<8xf32>
// CHECK: vector.extract_strided_slice %[[STATE]]#1 {offsets = [1], sizes = [1], strides = [1]}
// CHECK: %[[SUM:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT: %[[OUT:.*]] = arith.divf %[[STATE]]#2, %[[SUM]] : vector<8xf32>
// CHECK-NEXT: vector.transfer_write %[[OUT]], %{{.*}}[%[[B]], %[[H]], %[[ROW]], %c0]

// By default each row makes its own pass (a group of rows would keep every
// key row of a block live between them, more than the registers hold), and
// blocks are 16 positions.
// DEFAULT-LABEL: func.func @gqa(
// DEFAULT: arith.ceildivui %{{.*}}, %c16 : index
// DEFAULT: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// DEFAULT: scf.for {{.*}} -> (f32, vector<16xf32>, vector<8xf32>)
// A block's scores 8 to a register: each position's products folded to 8
// lanes, 8 registers reduced together by pairwise sums, twice per block.
// DEFAULT-COUNT-8: arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// DEFAULT-COUNT-6: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 8, 10, 4, 6, 12, 14] : vector<8xf32>, vector<8xf32>
// DEFAULT: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// DEFAULT: vector.shuffle %{{.*}}, %{{.*}} [4, 5, 6, 7, 12, 13, 14, 15]
// DEFAULT-COUNT-8: arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// DEFAULT-COUNT-6: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 8, 10, 4, 6, 12, 14] : vector<8xf32>, vector<8xf32>
// DEFAULT: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// DEFAULT: vector.shuffle %{{.*}}, %{{.*}} [4, 5, 6, 7, 12, 13, 14, 15]
// DEFAULT: vector.insert_strided_slice %{{.*}}, %{{.*}} {offsets = [8], strides = [1]} : vector<8xf32> into vector<16xf32>
// DEFAULT: arith.divf %{{.*}}, %{{.*}} : vector<16xf32>
// DEFAULT: math.exp %{{.*}} : vector<16xf32>
// DEFAULT: vector.transfer_write

// Multi-head attention: keys read as they are (not transposed), softmax of
// the scores directly.
func.func @mha(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %q, %c2 : tensor<1x2x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sz : tensor<1x2x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %k, %a : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %re = tensor.empty(%s) : tensor<1x2x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scores : tensor<1x2x?x?xf32>) outs(%mi : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maxnumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %max : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x?x?xf32>) outs(%si : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %oe = tensor.empty(%s) : tensor<1x2x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %out = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %values : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%oz : tensor<1x2x?x8xf32>) {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x8xf32>
  return %out : tensor<1x2x?x8xf32>
}

// CHECK-LABEL: func.func @mha(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x2x?x8xf32>, %[[K:[^:]*]]: tensor<1x2x?x8xf32>, %[[V:[^:]*]]: tensor<1x2x?x8xf32>
// CHECK-NOT: linalg.
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// CHECK: vector.transfer_read %[[K]][%c0, %[[H]], %{{.*}}, %c0]
// CHECK: vector.transfer_read %[[V]][%c0, %[[H]], %{{.*}}, %c0]
// CHECK: return


// A modifier that reads the position (ALiBi-like bias) runs on the block's
// scores at once: the positions are a vector of indices.
func.func @alibi(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %q, %c2 : tensor<1x2x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sz : tensor<1x2x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %k, %a : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x2x?x?xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%v: f32, %out: f32):
    %pos = linalg.index 3 : index
    %i = arith.index_cast %pos : index to i64
    %f = arith.sitofp %i : i64 to f32
    %half = arith.constant -0.5 : f32
    %bias = arith.mulf %f, %half : f32
    %r = arith.addf %v, %bias : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %re = tensor.empty(%s) : tensor<1x2x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x?x?xf32>) outs(%mi : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maxnumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %max : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x?x?xf32>) outs(%si : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %oe = tensor.empty(%s) : tensor<1x2x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %out = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %values : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%oz : tensor<1x2x?x8xf32>) {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x8xf32>
  return %out : tensor<1x2x?x8xf32>
}

// DEFAULT-LABEL: func.func @alibi(
// DEFAULT-NOT: linalg.
// DEFAULT: %[[POS:.*]] = arith.addi %{{.*}}, %{{.*}} : vector<16xindex>
// DEFAULT: %[[CLAMPED:.*]] = arith.minui %[[POS]], %{{.*}} : vector<16xindex>
// DEFAULT: arith.index_cast %[[CLAMPED]] : vector<16xindex> to vector<16xi64>
// DEFAULT: arith.sitofp %{{.*}} : vector<16xi64> to vector<16xf32>
// DEFAULT: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// DEFAULT: arith.cmpf ogt, %{{.*}}, %{{.*}} : vector<8xf32>

// A modifier with an op that is not elementwise (a table read per head)
// runs per score, its results gathered into the block's vector.
func.func @scale_table(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>, %table: tensor<2xf32>) -> tensor<1x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %q, %c2 : tensor<1x2x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sz : tensor<1x2x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %k, %a : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x2x?x?xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%v: f32, %out: f32):
    %h = linalg.index 1 : index
    %scale = tensor.extract %table[%h] : tensor<2xf32>
    %r = arith.mulf %v, %scale : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %re = tensor.empty(%s) : tensor<1x2x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x?x?xf32>) outs(%mi : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maxnumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %max : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x?x?xf32>) outs(%si : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %oe = tensor.empty(%s) : tensor<1x2x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %out = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %values : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%oz : tensor<1x2x?x8xf32>) {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x8xf32>
  return %out : tensor<1x2x?x8xf32>
}

// DEFAULT-LABEL: func.func @scale_table(
// DEFAULT-SAME: %[[TABLE:[^:]*]]: tensor<2xf32>
// DEFAULT-NOT: linalg.
// DEFAULT: %[[SCALE:.*]] = tensor.extract %[[TABLE]][%{{.*}}] : tensor<2xf32>
// DEFAULT-COUNT-16: arith.mulf %{{.*}}, %[[SCALE]] : f32
// DEFAULT-NEXT: vector.from_elements %{{.*}} : vector<16xf32>
// DEFAULT: arith.cmpf ogt, %{{.*}}, %{{.*}} : vector<8xf32>

// A mask computed elementwise from the positions is recomputed per block
// from them: the key positions read as one vector, the query's broadcast.
func.func @causal(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>, %key_pos: tensor<1x?xi64>, %query_pos: tensor<?x1xi64>) -> tensor<1x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %q, %c2 : tensor<1x2x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sz : tensor<1x2x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %k, %a : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  // torch's causal mask: key position > query position, as a tensor.
  %me = tensor.empty(%s, %t) : tensor<?x?xi1>
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>) outs(%me : tensor<?x?xi1>) {
  ^bb0(%k: i64, %qp: i64, %out: i1):
    %gt = arith.cmpi sgt, %k, %qp : i64
    linalg.yield %gt : i1
  } -> tensor<?x?xi1>
  %x = linalg.generic {indexing_maps = [#mask, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask, %scores : tensor<?x?xi1>, tensor<1x2x?x?xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%masked: i1, %v: f32, %out: f32):
    %r = arith.select %masked, %ninf, %v : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %re = tensor.empty(%s) : tensor<1x2x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x?x?xf32>) outs(%mi : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maxnumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %max : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x?x?xf32>) outs(%si : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %oe = tensor.empty(%s) : tensor<1x2x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %out = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %values : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%oz : tensor<1x2x?x8xf32>) {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x8xf32>
  return %out : tensor<1x2x?x8xf32>
}

// DEFAULT-LABEL: func.func @causal(
// DEFAULT-SAME: %[[KEYPOS:[^:]*]]: tensor<1x?xi64>, %[[QPOS:[^:]*]]: tensor<?x1xi64>
// DEFAULT-NOT: linalg.
// DEFAULT-NOT: tensor<?x?xi1>
// DEFAULT: scf.for %{{.*}} = %c0 to %c2 step %c1
// DEFAULT-NEXT: scf.for %[[ROW:.*]] = %c0 to %{{.*}} step %c1
// DEFAULT: scf.for %[[BLOCK:.*]] = %c0
// DEFAULT: %[[FIRST:.*]] = arith.muli %[[BLOCK]], %c16 : index
// DEFAULT: %[[KEYS:.*]] = vector.transfer_read %[[KEYPOS]][%c0, %[[FIRST]]], %{{.*}} : tensor<1x?xi64>, vector<16xi64>
// DEFAULT: %[[Q:.*]] = tensor.extract %[[QPOS]][%[[ROW]], %c0] : tensor<?x1xi64>
// DEFAULT: %[[QS:.*]] = vector.broadcast %[[Q]] : i64 to vector<16xi64>
// DEFAULT: %[[MASKED:.*]] = arith.cmpi sgt, %[[KEYS]], %[[QS]] : vector<16xi64>
// DEFAULT: arith.select %[[MASKED]], %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>

// Keys read from a cache before a write of the values into it, used only by
// the fused loops after the write, are read from the written cache: the
// write leaves them alone, and bufferization need not copy them.
func.func @cache_reads(%q: tensor<1x2x?x8xf32>, %cache: tensor<2x2x16x8xf32>, %new_values: tensor<1x2x4x8xf32>, %length: index) -> tensor<1x2x?x8xf32> {
  // The keys are read from the cache before the values are written into it.
  %keys = tensor.extract_slice %cache[0, 0, 0, 0] [1, 2, %length, 8] [1, 1, 1, 1] : tensor<2x2x16x8xf32> to tensor<1x2x?x8xf32>
  %written = tensor.insert_slice %new_values into %cache[1, 0, 0, 0] [1, 2, 4, 8] [1, 1, 1, 1] : tensor<1x2x4x8xf32> into tensor<2x2x16x8xf32>
  %values = tensor.extract_slice %written[1, 0, 0, 0] [1, 2, %length, 8] [1, 1, 1, 1] : tensor<2x2x16x8xf32> to tensor<1x2x?x8xf32>
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %q, %c2 : tensor<1x2x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sz : tensor<1x2x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %k, %a : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %re = tensor.empty(%s) : tensor<1x2x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scores : tensor<1x2x?x?xf32>) outs(%mi : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maxnumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %max : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x?x?xf32>) outs(%si : tensor<1x2x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) outs(%se : tensor<1x2x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %oe = tensor.empty(%s) : tensor<1x2x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %out = linalg.generic {indexing_maps = [#q, #kt, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %values : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%oz : tensor<1x2x?x8xf32>) {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x8xf32>
  return %out : tensor<1x2x?x8xf32>
}

// DEFAULT-LABEL: func.func @cache_reads(
// DEFAULT-SAME: %[[CACHE:[^:]*]]: tensor<2x2x16x8xf32>
// DEFAULT: %[[WRITTEN:.*]] = tensor.insert_slice %{{.*}} into %[[CACHE]][1, 0, 0, 0]
// DEFAULT-DAG: %[[KEYS:.*]] = tensor.extract_slice %[[WRITTEN]][0, 0, 0, 0]
// DEFAULT-DAG: %[[VALUES:.*]] = tensor.extract_slice %[[WRITTEN]][1, 0, 0, 0]
// DEFAULT: vector.transfer_read %[[KEYS]]
