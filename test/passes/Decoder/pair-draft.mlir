// RUN: spec-opt %s --spec-pair-draft -split-input-file -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-pair-draft='gamma=6 decoder-name=spec sampling=true temperature=0.7' -split-input-file -verify-diagnostics=only-expected | FileCheck %s --check-prefix=OPTIONS
// RUN: spec-opt %s --spec-pair-draft='sampling=true top-k=4 top-p=0.5' -split-input-file -verify-diagnostics=only-expected | FileCheck %s --check-prefix=FILTERS
// RUN: not spec-opt %s --spec-pair-draft='target=big draft=small' -split-input-file 2>&1 | FileCheck %s --check-prefix=NAMED
// RUN: spec-opt %s --spec-pair-draft='gamma=6 tree-parents=0,0,1 tree-ranks=0,1,0' -split-input-file -verify-diagnostics=only-expected | FileCheck %s --check-prefix=TREE
// RUN: spec-opt %s --spec-pair-draft='gamma=8 min-confidence=0.4' -split-input-file -verify-diagnostics=only-expected | FileCheck %s --check-prefix=CONFIDENCE

// A compatible pair: same tokenizer, vocabulary and special tokens.
func.func private @big(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259, bos_token_id = 256,
                    eos_token_id = 257, max_context = 512, tokenizer = "sha256:bytes">}
func.func private @small(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 259, bos_token_id = 256,
                    eos_token_id = 257, max_context = 512, tokenizer = "sha256:bytes">}

// CHECK: spec.decoder @decoder target(@big) proposer(#spec.draft<@small, gamma = 4>) verify(#spec.greedy)
// OPTIONS: spec.decoder @spec target(@big) proposer(#spec.draft<@small, gamma = 6>) verify(#spec.rejection<temperature = 0.7>)
// FILTERS: spec.decoder @decoder target(@big) proposer(#spec.draft<@small, gamma = 4>) verify(#spec.rejection<top_k = 4, top_p = 0.5>)
// A tree of the draft's candidates is gamma deep, whatever gamma says.
// TREE: spec.decoder @decoder target(@big) proposer(#spec.draft<@small, gamma = 2>) verify(#spec.greedy) tree(#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>)
// Drafting that stops at the first token below 40%.
// CONFIDENCE: spec.decoder @decoder target(@big) proposer(#spec.draft<@small, gamma = 8, min_confidence = 0.4>) verify(#spec.greedy)
// NAMED-DAG: spec.decoder @decoder target(@big) proposer(#spec.draft<@small, gamma = 4>)
// The later splits have no @big.
// NAMED-DAG: error: no function @big for the target

// -----

// The same tokenizer with a padded embedding (as 151936 vs 152064): a warning,
// and the larger model's logits are sliced to the common vocabulary.
func.func @target(%ids: tensor<?x?xi64>) -> tensor<?x?x260xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 260, tokenizer = "sha256:bytes">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %ids, %c0 : tensor<?x?xi64>
  %s = tensor.dim %ids, %c1 : tensor<?x?xi64>
  %logits = tensor.empty(%b, %s) : tensor<?x?x260xf32>
  return %logits : tensor<?x?x260xf32>
}
// expected-warning @below {{draft @draft and target @target have vocabularies of 259 and 260 tokens but the same tokenizer, so the larger embedding is padding: using the first 259 logits of @target}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bytes">}

// CHECK-LABEL: func.func @target(
// CHECK-SAME: -> tensor<?x?x259xf32>
// CHECK-SAME: spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bytes">
// CHECK: %[[LOGITS:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x260xf32>
// CHECK: %[[SLICED:.*]] = tensor.extract_slice %[[LOGITS]][0, 0, 0] [%{{.*}}, %{{.*}}, 259] [1, 1, 1] : tensor<?x?x260xf32> to tensor<?x?x259xf32>
// CHECK: return %[[SLICED]] : tensor<?x?x259xf32>
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 4>) verify(#spec.greedy)

// -----

// Different maximum contexts: generation stops at the smaller one.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 8, max_context = 2048>}
// expected-warning @below {{draft @draft and target @target have maximum contexts of 512 and 2048 positions; generation stops at 512}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 8, max_context = 512>}
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 4>)
