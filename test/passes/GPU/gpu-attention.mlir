// RUN: spec-opt %s --spec-gpu-attention --canonicalize --cse | FileCheck %s
// RUN: spec-opt %s --spec-gpu-attention=fold-transposes=false --canonicalize --cse | FileCheck %s --check-prefix=UNFOLDED

// The importer's attention becomes two ops: the scores from the cached key
// rows in place (query head h reads kv head h / 2), and one elementwise op
// over the output that makes softmax's passes over the positions, applying
// the scaling and mask where it reads a score, and the product with the
// value rows. Nothing is expanded or transposed.

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

// CHECK-DAG: #[[Q:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d3, d4)>
// CHECK-DAG: #[[QT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[OUTT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>

// CHECK-LABEL: func.func @gqa(
// CHECK-SAME: %[[QUERY:[^:]+]]: tensor<?x4x?x8xf32>, %[[KEYS:[^:]+]]: tensor<1x2x?x8xf32>, %[[VALUES:[^:]+]]: tensor<1x2x?x8xf32>, %[[MASK:[^:]+]]: tensor<?x?xi1>
// CHECK-NOT: linalg.transpose
// CHECK: %[[T:.+]] = tensor.dim %[[KEYS]], %c2
// CHECK: %[[SCORES:.+]] = linalg.generic {indexing_maps = [#[[Q]], #[[ROWS]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[QUERY]], %[[KEYS]] :
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[K:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[A]], %[[K]]
// CHECK-NEXT: arith.addf %[[ACC]], %[[M]]
// CHECK-NOT: arith.select
// CHECK: cf.assert {{.+}} "spec-gpu-attention: the keys do not have the sizes the attention was fused for"
// CHECK: cf.assert {{.+}} "spec-gpu-attention: keys and values of different lengths"
// CHECK: cf.assert {{.+}} "spec-gpu-attention: the queries' batch is not 1"
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(
// CHECK: %[[HEAD:.+]] = linalg.index 1
// CHECK: %[[ROW:.+]] = linalg.index 2
// CHECK: %[[COLUMN:.+]] = linalg.index 3
// CHECK: %[[KV:.+]] = arith.divui %[[HEAD]], %c2
// CHECK: %[[MAX:.+]] = scf.for %[[P0:[^ ]+]] = %c0 to %[[T]] step %c1 iter_args(%{{.+}} = %cst_0)
// CHECK: tensor.extract %[[MASK]][%[[ROW]], %[[P0]]]
// CHECK: tensor.extract %[[SCORES]][%{{.+}}, %[[HEAD]], %[[ROW]], %[[P0]]]
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: arith.maximumf
// CHECK: %[[SUM:.+]] = scf.for
// CHECK: arith.subf %{{.+}}, %[[MAX]]
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: scf.for %[[P:.+]] = %c0 to %[[T]]
// CHECK: math.exp
// CHECK: arith.divf %{{.+}}, %[[SUM]]
// CHECK: tensor.extract %[[VALUES]][%c0, %[[KV]], %[[P]], %[[COLUMN]]]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return


func.func @transposed(%qs: tensor<1x?x2x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>) -> tensor<1x?x2x8xf32> {
  // Queries [1, rows, heads, 8] transposed to [1, heads, rows, 8], keys in
  // their rows' layout (no transpose, one kv head per query head), the
  // output transposed back to [1, rows, heads, 8].
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %qs, %c1 : tensor<1x?x2x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %qe = tensor.empty(%s) : tensor<1x2x?x8xf32>
  %q = linalg.transpose ins(%qs : tensor<1x?x2x8xf32>) outs(%qe : tensor<1x2x?x8xf32>) permutation = [0, 2, 1, 3]
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %keys : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sz : tensor<1x2x?x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %m = arith.mulf %a, %k : f32
    %r = arith.addf %acc, %m : f32
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
  %te = tensor.empty(%s) : tensor<1x?x2x8xf32>
  %o = linalg.transpose ins(%out : tensor<1x2x?x8xf32>) outs(%te : tensor<1x?x2x8xf32>) permutation = [0, 2, 1, 3]
  return %o : tensor<1x?x2x8xf32>
}

// CHECK-LABEL: func.func @transposed(
// CHECK-SAME: %[[QS:[^:]+]]: tensor<1x?x2x8xf32>, %[[KEYS:[^:]+]]: tensor<1x2x?x8xf32>, %[[VALUES:[^:]+]]: tensor<1x2x?x8xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[QT]], {{.+}} ins(%[[QS]], %[[KEYS]] :
// CHECK-NOT: linalg.transpose
// CHECK: %[[OUT:.+]] = linalg.generic {indexing_maps = [#[[OUTT]]], {{.+}} outs(%{{.+}} : tensor<1x?x2x8xf32>)
// CHECK: arith.maxnumf
// CHECK: tensor.extract %[[VALUES]]
// CHECK: return %[[OUT]] : tensor<1x?x2x8xf32>

// UNFOLDED-LABEL: func.func @transposed(
// UNFOLDED: %[[QUERY:.+]] = linalg.transpose
// UNFOLDED: linalg.generic {{.+}} ins(%[[QUERY]], %{{.+}} :
// UNFOLDED: %[[OUT:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1x2x?x8xf32>)
// UNFOLDED: %[[RESULT:.+]] = linalg.transpose ins(%[[OUT]] :
// UNFOLDED: return %[[RESULT]]

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

// The keys' read is moved past the write of the values, so that both read
// the written cache in place.
// CHECK-LABEL: func.func @cache_reads(
// CHECK-SAME: %[[CACHE:[^:]+]]: tensor<2x2x16x8xf32>, %[[NEW:[^:]+]]: tensor<1x2x4x8xf32>, %[[LENGTH:[^:]+]]: index
// CHECK: %[[WRITTEN:.+]] = tensor.insert_slice %[[NEW]] into %[[CACHE]][1, 0, 0, 0]
// CHECK: %[[KEYS:.+]] = tensor.extract_slice %[[WRITTEN]][0, 0, 0, 0] [1, 2, %[[LENGTH]], 8]
// CHECK: %[[VALUES:.+]] = tensor.extract_slice %[[WRITTEN]][1, 0, 0, 0] [1, 2, %[[LENGTH]], 8]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[KEYS]] :
// CHECK: scf.for %{{.+}} = %c0 to %[[LENGTH]]
// CHECK: tensor.extract %[[VALUES]]
