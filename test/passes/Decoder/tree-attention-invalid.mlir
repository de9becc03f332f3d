// RUN: spec-opt %s --spec-tree-attention -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-tree-attention=function=missing \
// RUN:   -split-input-file 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: spec-tree-attention: no function named @missing

#query = affine_map<(d0, d1) -> (d0, 0)>
#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A target without a causal mask (here, one that masks with 0 instead of
// -inf, which is not attention's Where) cannot verify a tree.
// expected-error @below {{@target has no causal attention mask to make a tree mask of: none of the form Where(key_pos > query_pos, -inf, scores)}}
func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                  %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>,
                  %scores: tensor<1x2x?x?xf32>)
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
    %zero = arith.constant 0.0 : f32
    %r = arith.select %m, %zero, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%queries) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0, 0], ranks = [0, 1]>)

// -----

#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A mask that compares the key with itself is not causal.
// expected-error @below {{@target has no causal attention mask to make a tree mask of}}
func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                  %key_pos: tensor<1x?xi64>, %scores: tensor<1x2x?x?xf32>)
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>}, tensor<1x2x?x?xf32>)
    attributes {spec.role = #spec.role<target>} {
  %c1 = arith.constant 1 : index
  %keys = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%keys, %keys) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #key, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %key_pos : tensor<1x?xi64>, tensor<1x?xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %empty = tensor.empty(%keys, %keys) : tensor<1x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %scores : tensor<?x?xi1>, tensor<1x2x?x?xf32>)
      outs(%empty : tensor<1x2x?x?xf32>) {
  ^bb0(%m: i1, %s: f32, %out: f32):
    %neg = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %neg, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%keys) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>)

// -----

// expected-error @below {{@target already takes a tree mask}}
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>})
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1]>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0], ranks = [0]>)
