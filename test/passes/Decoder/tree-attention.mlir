// RUN: spec-opt %s --spec-tree-attention -split-input-file | FileCheck %s
// RUN: spec-opt %s --spec-tree-attention=function=layer -split-input-file \
// RUN:   | FileCheck %s --check-prefix=NAMED

// The causal mask as the importer writes torch's
// `Where(key_pos > query_pos, -inf, scores)`: a [queries x keys] comparison
// of a per-query and a per-key operand, selecting -inf in the scores. The
// decoder's target gets a tree mask argument, and the mask reads it for the
// last keys, as many as it has columns (the forward's own rows, and for a
// draft extending a tree the rows cached just before them).
#query = affine_map<(d0, d1) -> (d0, 0)>
#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#scalar = affine_map<(d0, d1, d2, d3) -> ()>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @target(
// CHECK-SAME: %[[TREE:[^:]*]]: tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
// CHECK: %[[INIT:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?xi1>
// CHECK: %[[ROWS:.*]] = tensor.dim %[[INIT]], %c0
// CHECK: %[[KEYS:.*]] = tensor.dim %[[INIT]], %c1
// CHECK: %[[TREEROWS:.*]] = tensor.dim %[[TREE]], %c0
// CHECK: %[[COLUMNS:.*]] = tensor.dim %[[TREE]], %c1
// CHECK: %[[PAST:.*]] = arith.subi %[[KEYS]], %[[COLUMNS]] : index
// CHECK: arith.cmpi eq, %[[TREEROWS]], %[[ROWS]] : index
// CHECK: arith.cmpi sle, %[[ROWS]], %[[COLUMNS]] : index
// CHECK: arith.cmpi sle, %[[COLUMNS]], %[[KEYS]] : index
// CHECK: cf.assert %{{.*}}, "the tree mask is not rows x m of the forward, rows <= m <= keys (spec-tree-attention)"
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[K:[^:]*]]: i64, %[[Q:[^:]*]]: i64, %{{.*}}: i1):
// CHECK-NEXT: %[[CAUSAL:.*]] = arith.cmpi sgt, %[[K]], %[[Q]] : i64
// CHECK-NEXT: %[[ROW:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[COL:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[OWN:.*]] = arith.cmpi sge, %[[COL]], %[[PAST]] : index
// CHECK-NEXT: %[[REL:.*]] = arith.subi %[[COL]], %[[PAST]] : index
// CHECK-NEXT: %[[SAFE:.*]] = arith.select %[[OWN]], %[[REL]], %c0{{.*}} : index
// CHECK-NEXT: %[[VISIBLE:.*]] = tensor.extract %[[TREE]][%[[ROW]], %[[SAFE]]] : tensor<?x?xi1>
// CHECK-NEXT: %[[HIDDEN:.*]] = arith.xori %[[VISIBLE]], %true : i1
// CHECK-NEXT: %[[FUTURE:.*]] = arith.select %[[OWN]], %[[HIDDEN]], %[[CAUSAL]] : i1
// CHECK-NEXT: linalg.yield %[[FUTURE]] : i1
// NAMED-LABEL: func.func @target(
// NAMED-NOT: tree_mask
// NAMED: func.func @layer(
// NAMED-SAME: tensor<?x?xi1> {spec.io = #spec.io<tree_mask>})
func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                  %hidden: tensor<?x?x4xf32>,
                  %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>,
                  %scores: tensor<1x2x?x?xf32>)
    -> (tensor<1x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<1x2x?x?xf32>)
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
  %neg = arith.constant dense<0xFF800000> : tensor<f32>
  %empty = tensor.empty(%queries, %keys) : tensor<1x2x?x?xf32>
  %masked = linalg.generic {indexing_maps = [#mask, #scalar, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %neg, %scores : tensor<?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>)
      outs(%empty : tensor<1x2x?x?xf32>) {
  ^bb0(%m: i1, %n: f32, %s: f32, %out: f32):
    %r = arith.select %m, %n, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %logits = tensor.empty(%queries) : tensor<1x?x16xf32>
  return %logits, %masked : tensor<1x?x16xf32>, tensor<1x2x?x?xf32>
}

// The same mask written `query_pos < key_pos`, with -inf in the select's
// body: rewritten by name.
func.func @layer(%query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>,
                 %scores: tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %keys = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %keys) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#query, #key, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%query_pos, %key_pos : tensor<?x1xi64>, tensor<1x?xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%q: i64, %k: i64, %out: i1):
    %later = arith.cmpi slt, %q, %k : i64
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
  return %masked : tensor<1x2x?x?xf32>
}

func.func private @head1(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2]>)
    verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)

