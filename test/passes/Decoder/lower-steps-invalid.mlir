// RUN: spec-opt %s --spec-lower-steps -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-lower-steps=argmax-lanes=12 -split-input-file 2>&1 | FileCheck %s --check-prefix=LANES
// RUN: not spec-opt %s --spec-lower-steps=argmax-lanes=-1 -split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// LANES: spec-lower-steps: argmax-lanes must be 0 (a linalg reduction) or a power of two up to 64, got 12
// NEGATIVE: spec-lower-steps: argmax-lanes must be 0 (a linalg reduction) or a power of two up to 64, got -1

func.func @f(%logits: tensor<2x?xf32>) -> tensor<2xi64> {
  // expected-error @below {{expects rows x vocabulary logits of static shape (greedy: a static vocabulary)}}
  %t, %q = spec.propose %logits rule(#spec.greedy)
      : tensor<2x?xf32> -> tensor<2xi64>, tensor<2x?xf32>
  return %t : tensor<2xi64>
}

// -----

// Sampling draws per row from a static number of rows.
func.func @f(%logits: tensor<?x8xf32>, %key: i64) -> tensor<?xi64> {
  // expected-error @below {{expects rows x vocabulary logits of static shape (greedy: a static vocabulary)}}
  %t, %q = spec.propose %logits key(%key) rule(#spec.rejection<temperature = 1.0, top_k = 0, top_p = 1.0>)
      : tensor<?x8xf32> -> tensor<?xi64>, tensor<?x8xf32>
  return %t : tensor<?xi64>
}

// -----

func.func @f(%c: !spec.kv_cache<1x1x8x4xf32>) -> !spec.kv_cache<1x1x8x4xf32> {
  // expected-error @below {{the loop-level cache ops (append, view, commit, rollback, length) are not lowered; spec-kv-cache-inplace and spec-lower-generate use write/read at explicit lengths}}
  %r = spec.cache.rollback %c : !spec.kv_cache<1x1x8x4xf32>
  return %r : !spec.kv_cache<1x1x8x4xf32>
}
