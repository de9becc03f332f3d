// RUN: spec-opt %s --spec-kv-cache-inplace=slots=2 -split-input-file -verify-diagnostics -allow-unregistered-dialect
// RUN: not spec-opt %s --spec-kv-cache-inplace=slots=-1 -split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// NEGATIVE: spec-kv-cache-inplace: slots must be 0 (one sequence) or positive, got -1

// A batch fixed at 1 in the export has no room for several sequences.
// expected-error @below {{@target has a fixed batch of 1; a cache of slots needs a dynamic batch}}
func.func @target(%past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys, %values : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// Attention the pass cannot see masked (here an opaque op) could read other
// sequences' keys.
// expected-error @below {{@target has no causal attention mask of the form Where(key_pos > query_pos, -inf, scores) to make one per sequence of a batch of slots}}
func.func @target(%past_k: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<?x2x?x8xf32>)
    -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<?x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %out = "test.attention"(%keys, %values) : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %out, %keys, %values : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// A mask that already varies with the batch cannot be broadcast per row.
#query = affine_map<(d0, d1) -> (d0, 0)>
#key = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#batched = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
#scalar = affine_map<(d0, d1, d2, d3) -> ()>
#scores = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @target(%past_k: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<?x2x?x8xf32>, %query_pos: tensor<?x1xi64>, %key_pos: tensor<1x?xi64>,
                  %scores: tensor<?x2x?x?xf32>)
    -> (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<?x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %queries = tensor.dim %query_pos, %c0 : tensor<?x1xi64>
  %total = tensor.dim %key_pos, %c1 : tensor<1x?xi64>
  %init = tensor.empty(%queries, %total) : tensor<?x?xi1>
  %future = linalg.generic {indexing_maps = [#key, #query, #rows],
                            iterator_types = ["parallel", "parallel"]}
      ins(%key_pos, %query_pos : tensor<1x?xi64>, tensor<?x1xi64>)
      outs(%init : tensor<?x?xi1>) {
  ^bb0(%k: i64, %q: i64, %out: i1):
    %later = arith.cmpi sgt, %k, %q : i64
    linalg.yield %later : i1
  } -> tensor<?x?xi1>
  %neg = arith.constant dense<0xFF800000> : tensor<f32>
  // expected-error @below {{the causal mask of @target masks scores that are not batch x heads x queries x keys broadcast over the batch; a cache of slots needs one mask per sequence}}
  %masked = linalg.generic {indexing_maps = [#batched, #scalar, #scores, #scores],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%future, %neg, %scores : tensor<?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>)
      outs(%scores : tensor<?x2x?x?xf32>) {
  ^bb0(%m: i1, %n: f32, %s: f32, %out: f32):
    %r = arith.select %m, %n, %s : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  return %masked, %keys, %values : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}
