// RUN: spec-opt %s --spec-lower-steps -split-input-file -verify-diagnostics

func.func @f(%logits: tensor<?x8xf32>) -> tensor<?xi64> {
  // expected-error @below {{expects rows x vocabulary logits of static shape}}
  %t, %q = spec.propose %logits rule(#spec.greedy)
      : tensor<?x8xf32> -> tensor<?xi64>, tensor<?x8xf32>
  return %t : tensor<?xi64>
}

// -----

func.func @f(%c: !spec.kv_cache<1x1x8x4xf32>) -> !spec.kv_cache<1x1x8x4xf32> {
  // expected-error @below {{the loop-level cache ops (append, view, commit, rollback, length) are not lowered; spec-kv-cache-inplace and spec-lower-generate use write/read at explicit lengths}}
  %r = spec.cache.rollback %c : !spec.kv_cache<1x1x8x4xf32>
  return %r : !spec.kv_cache<1x1x8x4xf32>
}
