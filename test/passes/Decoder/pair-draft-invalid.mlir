// RUN: spec-opt %s --spec-pair-draft -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-pair-draft=gamma=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=GAMMA
// GAMMA: error: spec-pair-draft: gamma must be at least 1, got 0
// RUN: not spec-opt %s --spec-pair-draft='sampling=true top-p=1.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=TOPP
// TOPP: error: top_p must lie in (0, 1], got 1.5
// RUN: not spec-opt %s --spec-pair-draft='sampling=true top-k=-1' -split-input-file 2>&1 | FileCheck %s --check-prefix=TOPK
// TOPK: error: top_k must be non-negative (0 disables it), got -1
// RUN: not spec-opt %s --spec-pair-draft='tree-parents=0,0 tree-ranks=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=TREE
// TREE: error: spec-pair-draft: a tree has one parent and one rank per candidate, got 2 parents and 1 ranks
// RUN: not spec-opt %s --spec-pair-draft='tree-parents=0,0 tree-ranks=1,1' -split-input-file 2>&1 | FileCheck %s --check-prefix=SAME
// SAME: error: spec-pair-draft: candidates 1 and 2 are the same token (rank 1 under parent 0)
// RUN: not spec-opt %s --spec-pair-draft=min-confidence=1 -split-input-file 2>&1 | FileCheck %s --check-prefix=CONFIDENCE
// CONFIDENCE: error: spec-pair-draft: min-confidence must lie in [0, 1), got 1
// RUN: not spec-opt %s --spec-pair-draft='min-confidence=0.5 sampling=true' -split-input-file 2>&1 | FileCheck %s --check-prefix=CONFIDENCE-SAMPLING
// CONFIDENCE-SAMPLING: error: spec-pair-draft: min-confidence stops drafting early under greedy verification only; drop it or sampling
// RUN: not spec-opt %s --spec-pair-draft='min-confidence=0.5 tree-parents=0 tree-ranks=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=CONFIDENCE-TREE
// CONFIDENCE-TREE: error: spec-pair-draft: min-confidence stops chains of proposals; a tree has a fixed shape

// One incompatibility per split, naming both models, with how to fix it;
// test/tools/specc shows several reported at once.

// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:aaaa">}
// expected-error @below {{draft @draft and target @target use different tokenizers (fingerprints sha256:bbbb and sha256:aaaa): the same token id would mean different text}}
// expected-note @below {{to fix: use a draft trained with the target's tokenizer}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bbbb">}

// -----

// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{draft @draft and target @target have vocabularies of 320 and 259 tokens}}
// expected-note @below {{to fix: pair models with the same vocabulary (if one is only padded, give both the same tokenizer_sha256)}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x320xf32>
    attributes {spec.role = #spec.role<draft>}

// -----

// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 8, bos_token_id = 1>}
// expected-error @below {{draft @draft and target @target disagree on the BOS token id (0 and 1)}}
// expected-note @below {{to fix: pair models whose special tokens agree}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 8, bos_token_id = 0>}

// -----

// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{draft @draft and target @target return logits of different element types (f16 and f32)}}
// expected-note @below {{to fix: export both models with the same logits precision}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x8xf16>
    attributes {spec.role = #spec.role<draft>}

// -----

// Models imported from ONNX without their key/value cache.
// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>}) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{draft @draft and target @target cannot be paired: @target has no key/value cache input (past_key_values.0.key)}}
// expected-note @below {{to fix: export the model with its cache (use_cache=True) so that each step processes only new tokens}}
func.func private @draft(tensor<?x?xi64> {spec.io = #spec.io<token_ids>}, tensor<?x1x?x32xf32> {spec.io = #spec.io<past_key, index = 0>}) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<draft>}

// -----

// expected-error @below {{no function has role 'draft' (set spec.role, or name it with the 'draft' option)}}
module {
  func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
      attributes {spec.role = #spec.role<target>}
}

// -----

// expected-error @below {{functions @a and @b both have role 'target'; name one with the 'target' option}}
module {
  func.func private @a(tensor<?x?xi64>) -> tensor<?x?x8xf32>
      attributes {spec.role = #spec.role<target>}
  func.func private @b(tensor<?x?xi64>) -> tensor<?x?x8xf32>
      attributes {spec.role = #spec.role<target>}
  func.func private @d(tensor<?x?xi64>) -> tensor<?x?x8xf32>
      attributes {spec.role = #spec.role<draft>}
}

// -----

// expected-error @below {{a symbol named @decoder exists already; choose another decoder-name}}
module {
  func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
      attributes {spec.role = #spec.role<target>}
  func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x8xf32>
      attributes {spec.role = #spec.role<draft>}
  func.func private @decoder()
}
