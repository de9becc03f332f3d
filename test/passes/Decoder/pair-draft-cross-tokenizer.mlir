// RUN: spec-opt %s --spec-pair-draft=cross-tokenizer=true -split-input-file -verify-diagnostics | FileCheck %s
// RUN: spec-opt %s --spec-pair-draft='cross-tokenizer=true gamma=6 decoder-name=cross' -split-input-file -verify-diagnostics=only-expected | FileCheck %s --check-prefix=OPTIONS
// RUN: spec-opt %s --spec-pair-draft='cross-tokenizer=true sampling=true temperature=0.8' -split-input-file -verify-diagnostics=only-expected | FileCheck %s --check-prefix=SAMPLING
// RUN: not spec-opt %s --spec-pair-draft='cross-tokenizer=true tree-parents=0 tree-ranks=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=TREE
// TREE: error: spec-pair-draft: a cross-tokenizer draft proposes chains so far; drop the tree
// RUN: not spec-opt %s --spec-pair-draft='cross-tokenizer=true min-confidence=0.5' -split-input-file 2>&1 | FileCheck %s --check-prefix=CONFIDENCE
// CONFIDENCE: error: spec-pair-draft: a cross-tokenizer draft proposes chains so far; drop min-confidence

// A draft with another tokenizer, vocabulary and special token ids (the
// example target reads bytes, models/draft_bpe.onnx BPE tokens): paired,
// and the decoder marked for the runtime to translate between them.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259, bos_token_id = 256,
                    eos_token_id = 257, max_context = 512, tokenizer = "sha256:bytes">}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x640xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 640, bos_token_id = 1,
                    eos_token_id = 2, max_context = 512, tokenizer = "sha256:bpe">}

// CHECK: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 4>) verify(#spec.greedy) {spec.cross_tokenizer}
// OPTIONS: spec.decoder @cross target(@target) proposer(#spec.draft<@draft, gamma = 6>) verify(#spec.greedy) {spec.cross_tokenizer}
// Sampled, the draft proposes from its distribution over the tokens both
// vocabularies share (token-level intersection), which the target's
// rejection sampling keeps lossless.
// SAMPLING: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 4>) verify(#spec.rejection<temperature = 0.8>) {spec.cross_tokenizer}

// -----

// The same tokenizer: nothing to translate.
// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bytes">}
// expected-error @below {{draft @draft and target @target use the same tokenizer (sha256:bytes): there is nothing to translate}}
// expected-note @below {{to fix: drop cross-tokenizer}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bytes">}

// -----

// A model that names no tokenizer cannot be translated from.
// expected-note @below {{target defined here}}
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x259xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259, tokenizer = "sha256:bytes">}
// expected-error @below {{draft @draft and target @target cannot be paired across tokenizers: @draft names no tokenizer (tokenizer_sha256)}}
// expected-note @below {{to fix: export both models with their tokenizer's fingerprint}}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x640xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 640>}
