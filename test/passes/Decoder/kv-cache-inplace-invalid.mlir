// RUN: spec-opt %s --spec-kv-cache-inplace -split-input-file -verify-diagnostics -allow-unregistered-dialect

// expected-error @below {{present.0.value of @target is not Concat(past_key_values.0.value, new) along the sequence axis}}
func.func @target(%past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %values = tensor.concat dim(2) %new, %past_v : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys, %values : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// expected-error @below {{@target lacks present.0.value; a functional cache needs past and present for every layer}}
func.func @target(%past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>})
    attributes {spec.role = #spec.role<target>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys : tensor<1x2x?x8xf32>
}

// -----

func.func @target(%past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<draft>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  // expected-error @below {{past_key_values.0.key of @target is used other than by its concatenation and its shape}}
  "test.use"(%past_k) : (tensor<1x2x?x8xf32>) -> ()
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys, %values : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// expected-error @below {{@target has no max_context; pass capacity=<positions>}}
func.func @target(%past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys, %values : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// expected-error @below {{past_key_values.0.key of @target must be batch x kv_heads x past x head_dim with static heads and head dimension, got 'tensor<1x?x?x8xf32>'}}
func.func @target(%past_k: tensor<1x?x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x?x?x8xf32> {spec.io = #spec.io<past_value, index = 0>})
    -> (tensor<1x?x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x?x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>} {
  return %past_k, %past_v : tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>
}

// -----

// expected-error @below {{attention_mask of @target must be batch x total_sequence (dynamic) of integers or floats, got 'tensor<1x9xi64>'}}
func.func @target(%ids: tensor<1x?xi64> {spec.io = #spec.io<token_ids>},
                  %mask: tensor<1x9xi64> {spec.io = #spec.io<attention_mask>},
                  %past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys, %values : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// expected-error @below {{@target has an attention_mask but no input_ids (batch x sequence) to size it by}}
func.func @target(%mask: tensor<?x?xi64> {spec.io = #spec.io<attention_mask>},
                  %past_k: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<1x2x?x8xf32> {spec.io = #spec.io<past_value, index = 0>},
                  %new: tensor<1x2x?x8xf32>)
    -> (tensor<1x2x?x8xf32> {spec.io = #spec.io<present_key, index = 0>}, tensor<1x2x?x8xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>, spec.config = #spec.model_config<vocab_size = 8, max_context = 32>} {
  %keys = tensor.concat dim(2) %past_k, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %values = tensor.concat dim(2) %past_v, %new : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %keys, %values : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}
