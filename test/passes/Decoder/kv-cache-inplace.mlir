// RUN: spec-opt %s --spec-kv-cache-inplace -allow-unregistered-dialect | FileCheck %s
// RUN: spec-opt %s --spec-kv-cache-inplace=capacity=64 -allow-unregistered-dialect | FileCheck %s --check-prefix=CAPACITY

// A one-layer decoder in the form the ONNX importer gives: the cache comes in
// as past_key_values tensors and goes out as present = Concat(past, new);
// the past length is read off the past tensor's shape.

func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                  %past_k: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new_k: tensor<?x2x?x8xf32>, %new_v: tensor<?x2x?x8xf32>)
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        tensor<?x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>},
        tensor<?x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>},
        index {spec.io = #spec.io<past_length>})
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 16, max_context = 128>} {
  %c2 = arith.constant 2 : index
  %past = tensor.dim %past_k, %c2 : tensor<?x2x?x8xf32>
  %keys = tensor.concat dim(2) %past_k, %new_k
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new_v
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %logits = "test.attention"(%keys, %values) : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32>
  return %logits, %keys, %values, %past : tensor<?x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, index
}

// CHECK-LABEL: func.func @target(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
// CHECK-SAME: %[[NEWK:[^:]*]]: tensor<?x2x?x8xf32>, %[[NEWV:[^:]*]]: tensor<?x2x?x8xf32>,
// CHECK-SAME: %[[CACHE:[^:]*]]: !spec.kv_cache<1x2x128x8xf32> {spec.io = #spec.io<kv_cache>},
// CHECK-SAME: %[[PAST:[^:]*]]: index {spec.io = #spec.io<past_length>})
// CHECK-SAME: -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>}, index {spec.io = #spec.io<past_length>}, !spec.kv_cache<1x2x128x8xf32> {spec.io = #spec.io<kv_cache>})
// CHECK: %[[K:.*]] = spec.cache.write %[[CACHE]] keys layer 0 at %[[PAST]], %[[NEWK]]
// CHECK: %[[N:.*]] = tensor.dim %[[NEWK]], %{{.*}}
// CHECK: %[[TOTAL:.*]] = arith.addi %[[PAST]], %[[N]] : index
// CHECK: %[[KEYS:.*]] = spec.cache.read %[[K]] keys layer 0 length %[[TOTAL]] : !spec.kv_cache<1x2x128x8xf32> -> tensor<1x2x?x8xf32>
// CHECK: %[[KEYSCAST:.*]] = tensor.cast %[[KEYS]] : tensor<1x2x?x8xf32> to tensor<?x2x?x8xf32>
// CHECK: %[[V:.*]] = spec.cache.write %[[K]] values layer 0 at %[[PAST]], %[[NEWV]]
// CHECK: %[[VALUES:.*]] = spec.cache.read %[[V]] values layer 0
// CHECK-NOT: tensor.concat
// CHECK: %[[LOGITS:.*]] = "test.attention"(%[[KEYSCAST]], %{{.*}})
// The past length read off the shape is now the argument.
// CHECK: return %[[LOGITS]], %[[PAST]], %[[V]]

// CAPACITY: !spec.kv_cache<1x2x64x8xf32>

// Functions without a role are left alone.
// CHECK-LABEL: func.func @helper(
// CHECK-SAME: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>}
func.func @helper(%past_k: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>}) -> tensor<?x2x?x8xf32> {
  return %past_k : tensor<?x2x?x8xf32>
}

// An attention_mask (as optimum exports take) becomes ones over the past and
// new positions, and leaves the signature.
func.func @draft(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                 %mask: tensor<?x?xi64> {spec.io = #spec.io<attention_mask>},
                 %past_k: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                 %past_v: tensor<?x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                 %new_k: tensor<?x2x?x8xf32>, %new_v: tensor<?x2x?x8xf32>)
    -> (tensor<?x?xi64> {spec.io = #spec.io<logits>},
        tensor<?x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>},
        tensor<?x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 16, max_context = 128>} {
  %keys = tensor.concat dim(2) %past_k, %new_k
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new_v
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %mask, %keys, %values : tensor<?x?xi64>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// CHECK-LABEL: func.func @draft(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
// CHECK-SAME: %[[NEWK:[^:]*]]: tensor<?x2x?x8xf32>, %[[NEWV:[^:]*]]: tensor<?x2x?x8xf32>,
// CHECK-SAME: %{{[^:]*}}: !spec.kv_cache<1x2x128x8xf32> {spec.io = #spec.io<kv_cache>},
// CHECK-SAME: %[[PAST:[^:]*]]: index {spec.io = #spec.io<past_length>})
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[SEQ:.*]] = tensor.dim %[[IDS]], %[[C1]]
// CHECK: %[[TOTAL:.*]] = arith.addi %[[PAST]], %[[SEQ]] : index
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[ONES:.*]] = tensor.splat %[[ONE]][%{{.*}}, %[[TOTAL]]] : tensor<?x?xi64>
// CHECK: return %[[ONES]],
