// RUN: spec-opt %s --spec-tree-attention -split-input-file | FileCheck %s

// A draft that proposes a tree deeper than one runs forwards over the tree's
// candidates: it gets a tree mask too.
#query = affine_map<(d0, d1) -> (d0, 0)>
#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @target(
// CHECK-SAME: tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
// CHECK-LABEL: func.func @draft(
// CHECK-SAME: tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
// CHECK: arith.cmpi sge
func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>, %scores: tensor<1x2x?x?xf32>)
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>}, tensor<1x2x?x?xf32>)
    attributes {spec.role = #spec.role<target>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %keys = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %keys) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #query, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %empty = tensor.empty(%queries, %keys) : tensor<1x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %scores : tensor<?x?xi1>, tensor<1x2x?x?xf32>)
      outs(%empty : tensor<1x2x?x?xf32>) {
  ^bb0(%m: i1, %s: f32, %out: f32):
    %neg = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %neg, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%queries) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}
func.func @draft(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>, %scores: tensor<1x2x?x?xf32>)
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>}, tensor<1x2x?x?xf32>)
    attributes {spec.role = #spec.role<draft>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %keys = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %keys) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #query, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %empty = tensor.empty(%queries, %keys) : tensor<1x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %scores : tensor<?x?xi1>, tensor<1x2x?x?xf32>)
      outs(%empty : tensor<1x2x?x?xf32>) {
  ^bb0(%m: i1, %s: f32, %out: f32):
    %neg = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %neg, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%queries) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

// -----

// A tree one deep: the draft's one forward per round is a chain; it keeps
// its causal mask.
#query = affine_map<(d0, d1) -> (d0, 0)>
#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @target(
// CHECK-SAME: tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
// CHECK-LABEL: func.func @draft(
// CHECK-NOT: tree_mask
// CHECK: spec.decoder
func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>, %scores: tensor<1x2x?x?xf32>)
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>}, tensor<1x2x?x?xf32>)
    attributes {spec.role = #spec.role<target>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %keys = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %keys) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #query, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %empty = tensor.empty(%queries, %keys) : tensor<1x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %scores : tensor<?x?xi1>, tensor<1x2x?x?xf32>)
      outs(%empty : tensor<1x2x?x?xf32>) {
  ^bb0(%m: i1, %s: f32, %out: f32):
    %neg = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %neg, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%queries) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}
func.func @draft(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>, %scores: tensor<1x2x?x?xf32>)
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>}, tensor<1x2x?x?xf32>)
    attributes {spec.role = #spec.role<draft>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %keys = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %keys) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #query, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %empty = tensor.empty(%queries, %keys) : tensor<1x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %scores : tensor<?x?xi1>, tensor<1x2x?x?xf32>)
      outs(%empty : tensor<1x2x?x?xf32>) {
  ^bb0(%m: i1, %s: f32, %out: f32):
    %neg = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %neg, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%queries) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 1>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)
