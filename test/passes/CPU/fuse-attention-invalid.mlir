// RUN: not spec-opt %s --spec-fuse-attention=rows-per-group=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not spec-opt %s --spec-fuse-attention=positions-per-block=65 -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: spec-opt %s --spec-fuse-attention -split-input-file | FileCheck %s

// ROWS: error: spec-fuse-attention: rows-per-group must be between 1 and 16, got 0
// BLOCK: error: spec-fuse-attention: positions-per-block must be between 1 and 64, got 65

// What is not exactly attention is left as it is: a softmax whose maximum
// starts from 0 (not -inf), scores accumulated from 1, a division the other
// way round.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#bc = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#kt = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

func.func @max_from_zero(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
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
  %mi = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x?x1xf32>) -> tensor<1x2x?x1xf32>
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

// CHECK-LABEL: func.func @max_from_zero(
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-NOT: scf.for

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#bc = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#kt = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

func.func @scores_from_one(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.dim %q, %c2 : tensor<1x2x?x8xf32>
  %t = tensor.dim %keys, %c2 : tensor<1x2x?x8xf32>
  %se = tensor.empty(%s, %t) : tensor<1x2x?x?xf32>
  %one = arith.constant 1.0 : f32
  %sz = linalg.fill ins(%one : f32) outs(%se : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
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

// CHECK-LABEL: func.func @scores_from_one(
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-NOT: scf.for

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#bc = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#kt = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

func.func @divided_by_max(%q: tensor<1x2x?x8xf32>, %keys: tensor<1x2x?x8xf32>, %values: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
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
    %r = arith.divf %d, %in : f32
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

// CHECK-LABEL: func.func @divided_by_max(
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-NOT: scf.for
