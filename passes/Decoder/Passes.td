//===- Passes.td - decoder-level passes: composition, KV caches, the decode loop -*- tablegen -*-===//

#ifndef SPECULA_PASSES_DECODER_PASSES_TD
#define SPECULA_PASSES_DECODER_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecChooseGamma : Pass<"spec-choose-gamma", "::mlir::ModuleOp"> {
  let summary = "Choose how many tokens a draft or a chained MTP module "
                "proposes per step";
  let description = [{
    For every `spec.decoder` with an external draft, picks the number of
    proposed tokens gamma in `[1, max-gamma]` that maximizes the expected
    speedup over running the target alone (Leviathan et al., 2023):

      E[tokens per target step] = (1 - a^(gamma+1)) / (1 - a)
      speedup(gamma)            = E / (gamma * (c + v) + 1)

    where `a` is the per-token acceptance rate and `c` the cost of one draft
    step relative to one target step. `a` comes from the `acceptance-rate`
    option or else the decoder's `acceptance_rate` attribute. `c` comes from
    the `cost-ratio` option or else from the graphs: decoding is bound by
    memory traffic, so a step costs the bytes of weights it reads, and `c` is
    the ratio of the draft's to the target's constant weight bytes (constants
    in each function and the functions it calls). `v` is what verifying one
    more position adds to a target step (`verify-cost`, default 0 as in
    Leviathan et al.: a memory-bound target reads its weights once for all
    positions; a compute-bound one, such as a small model on a CPU, pays for
    each). `spec-run --compare --profile` measures a, c and v.

    The chosen gamma is written into the decoder's `#spec.draft` proposer and
    reported as a remark with its reasoning. When no gamma predicts a speedup
    above 1, the decoder is left unchanged and a warning says that the draft
    does not pay, with the numbers.

    A decoder whose proposer is one DeepSeek-style MTP module (listed once,
    or chained with itself) gets its chain's depth chosen the same way: a
    round runs the module gamma times and verifies gamma + 1 positions, as a
    draft does, with `c` the module's cost relative to the target's; the
    chosen depth is written as the module listed that many times. Medusa
    heads and chains of distinct modules are skipped: their count is fixed by
    training; so is a draft that proposes a tree: the tree's depth is its
    gamma.

    Example: `spec-opt --spec-choose-gamma='acceptance-rate=0.8 max-gamma=6'`
  }];
  let options = [
    Option<"acceptanceRate", "acceptance-rate", "double", "-1.0",
           "Per-token acceptance rate in [0, 1]; default: the decoder's "
           "acceptance_rate attribute">,
    Option<"costRatio", "cost-ratio", "double", "-1.0",
           "Cost of one draft step relative to one target step (> 0); "
           "default: the ratio of their weight bytes">,
    Option<"verifyCost", "verify-cost", "double", "0.0",
           "Cost of verifying one more position, in target steps (>= 0)">,
    Option<"maxGamma", "max-gamma", "int64_t", "8",
           "Largest gamma (or MTP chain depth) considered (>= 1)">
  ];
}
def SpecChooseTree : Pass<"spec-choose-tree", "::mlir::ModuleOp"> {
  let summary = "Choose the tree of candidates a decoder with Medusa heads "
                "or a draft verifies per round";
  let description = [{
    For every `spec.decoder` whose proposer is Medusa heads or a draft and
    that has no tree yet, builds the tree of candidates with the highest
    predicted speedup over running the target alone, as Medusa builds its
    `medusa_choices`:

      E[tokens per target forward] = 1 + sum over nodes of P(path accepted)
      P(path accepted)             = product of a[d][r] along the path
      speedup(tree)                = E / (1 + nodes * v + depth * c)

    where `a[d][r]` is the probability that the r-th most likely token of
    the proposer at depth d + 1 (head d + 1, or the draft's d + 1-th
    forward) is the target's token given that the path to it was accepted
    (`acceptance`, depth by depth, `ranks` entries per depth; `specc --tree
    auto` estimates it from a tree decoder's `spec-run --profile`), `v`
    what verifying one more row adds to a target step (`verify-cost`; 0 for
    a memory-bound target, which reads its weights once for all rows) and
    `c` what a draft forward costs, in target steps (`draft-cost`; a draft
    runs one forward per depth; Medusa heads propose inside the target's
    forward, so it does not apply to them). For each size and depth, the
    best tree holds the nodes with the highest path probabilities; the pass
    keeps the tree that pays most, up to `max-nodes`.

    The tree is written as the decoder's `tree`; Medusa heads beyond its
    depth are dropped, and a draft's gamma becomes its depth. A tree that
    is one most-likely candidate per depth becomes a plain chain of that
    many heads or draft tokens (no tree: the chain's sampling verification
    also draws from the proposer's distributions). A remark gives the
    choice with Medusa's paths; when no tree predicts a speedup above 1, a
    warning says so and the decoder is left unchanged. Decoders with an MTP
    module or a tree already are skipped.

    Example:
    `spec-opt --spec-choose-tree='acceptance=0.6,0.2,0.4,0.1 ranks=2 verify-cost=0.05'`
  }];
  let options = [
    ListOption<"acceptance", "acceptance", "double",
               "Per depth, the acceptance of each rank (most likely first), "
               "in [0, 1]">,
    Option<"ranks", "ranks", "int64_t", "1",
           "Entries of `acceptance` per depth (>= 1)">,
    Option<"verifyCost", "verify-cost", "double", "0.0",
           "Cost of verifying one more row, in target steps (>= 0)">,
    Option<"draftCost", "draft-cost", "double", "0.0",
           "Cost of a draft's forward, in target steps (>= 0; drafts only)">,
    Option<"maxNodes", "max-nodes", "int64_t", "63",
           "Most candidates in the tree (>= 1; Medusa's largest default "
           "tree has 63)">
  ];
}
def SpecPairDraft : Pass<"spec-pair-draft", "::mlir::ModuleOp"> {
  let summary = "Pair a target with an external draft model after checking "
                "that they are compatible";
  let description = [{
    Takes the function with role `target` and the function with role `draft`
    of the module (or the ones the `target` and `draft` options name), checks
    that the draft can propose tokens the target can verify, and creates
    `spec.decoder` with `#spec.draft<@draft, gamma = N>`.

    Every incompatibility is reported at once, each naming both models and
    their values, with a note saying how to fix it:

    * tokenizer fingerprints (`tokenizer_sha256`) differ: token ids would mean
      different text (error);
    * vocabulary sizes differ: an error, unless the tokenizers are the same,
      in which case one model's embedding is only padded (as in 151936 vs
      152064): a warning, and the larger model's logits are sliced to the
      smaller vocabulary in its function;
    * BOS, EOS or PAD ids differ (error);
    * maximum contexts differ: the decoder uses the smaller one (warning);
    * logits element types differ (error);
    * either model lacks the key/value cache inputs of the model contract
      (`#spec.io<past_key, index = 0>`, from `past_key_values.0.key`)
      (error).

    With `tree-parents` and `tree-ranks`, each round verifies a static tree
    of the draft's candidates (`#spec.tree`; SpecInfer's token trees)
    instead of a chain, and gamma is the tree's depth: the draft runs one
    forward per depth (spec-tree-attention lets it run over the tree).

    With `cross-tokenizer`, the draft's tokenizer must differ from the
    target's (both fingerprints known); vocabularies and special token ids
    may differ (BOS and EOS correspond by role), and the decoder is marked
    `spec.cross_tokenizer`: its proposals are in the draft's tokens, which
    the runtime spells and re-tokenizes into the target's between batched
    rounds (docs/cross-tokenizer.md). Sampled, the runtime draws each
    proposal as a target token with the distribution it came from, and the
    target's rejection sampling keeps its own distribution. Chains only so
    far: trees and min-confidence are refused.
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"\"",
           "The target function (default: the one with role target)">,
    Option<"draftName", "draft", "std::string", "\"\"",
           "The draft function (default: the one with role draft)">,
    Option<"gamma", "gamma", "int64_t", "4",
           "Tokens the draft proposes per step (spec-choose-gamma can tune "
           "it)">,
    Option<"decoderName", "decoder-name", "std::string", "\"decoder\"",
           "Name of the created spec.decoder">,
    Option<"sampling", "sampling", "bool", "false",
           "Verify by lossless rejection sampling instead of greedy">,
    Option<"temperature", "temperature", "double", "1.0",
           "Sampling temperature (with sampling)">,
    Option<"topK", "top-k", "int64_t", "0",
           "Sample among the k most likely tokens only (with sampling; 0: "
           "off)">,
    Option<"topP", "top-p", "double", "1.0",
           "Sample among the smallest set of most likely tokens holding this "
           "probability mass (with sampling; 1: off)">,
    Option<"minConfidence", "min-confidence", "double", "0.0",
           "Stop a round's drafting at the first token the draft gives a "
           "probability below this (#spec.draft's min_confidence; greedy "
           "only; 0: always gamma)">,
    ListOption<"treeParents", "tree-parents", "int64_t",
               "Verify a tree of the draft's candidates per round: each "
               "candidate's parent (#spec.tree's parents; gamma becomes the "
               "tree's depth)">,
    ListOption<"treeRanks", "tree-ranks", "int64_t",
               "With tree-parents: each candidate's rank among the draft's "
               "most likely tokens after its parent">,
    Option<"crossTokenizer", "cross-tokenizer", "bool", "false",
           "Pair a draft whose tokenizer differs from the target's "
           "(spec.cross_tokenizer): vocabularies and special token ids may "
           "differ; the runtime translates proposals between rounds (chains "
           "so far)">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecComposeHeads : Pass<"spec-compose-heads", "::mlir::ModuleOp"> {
  let summary = "Compose a decoder over the target and its Medusa heads or "
                "MTP modules";
  let description = [{
    What spec-pair-draft is for a draft: creates `spec.decoder
    @<decoder-name> target(@<target>) proposer(#spec.mtp<[heads]>)
    verify(<rule>)`, with a `tree` when `tree-parents` and `tree-ranks` give
    one. The heads are the functions `heads` names, in depth order, or by
    default every function with role `medusa_head` or `mtp_module`, in the
    module's order; the target is the function `target` names or the one
    with role `target`.

    With `depth`, a round proposes that many tokens: the first `depth`
    heads, or, when `depth` exceeds the heads given, the last head chained
    with itself, which only a DeepSeek-style MTP module can do (it runs
    again on its own output; TensorRT-LLM and DeepSeek-V3 chain one module
    1-3 deep). The decoder's verifier checks the rest: heads of one kind, in
    depth order, whose hidden-state input matches the target's.

    Example:
    `spec-opt --spec-compose-heads='heads=head1,head2 sampling=true temperature=0.8'`
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"\"",
           "The target function (default: the one with role target)">,
    ListOption<"heads", "heads", "std::string",
               "The Medusa heads or MTP modules, in depth order (default: "
               "every function with one of their roles, in module order)">,
    Option<"depth", "depth", "int64_t", "0",
           "Tokens proposed per round: the first N heads, or the last MTP "
           "module chained up to depth N (0: one per head)">,
    Option<"decoderName", "decoder-name", "std::string", "\"decoder\"",
           "Name of the created spec.decoder">,
    Option<"sampling", "sampling", "bool", "false",
           "Verify by lossless rejection sampling instead of greedy">,
    Option<"temperature", "temperature", "double", "1.0",
           "Sampling temperature (with sampling)">,
    Option<"topK", "top-k", "int64_t", "0",
           "Sample among the k most likely tokens only (with sampling; 0: "
           "off)">,
    Option<"topP", "top-p", "double", "1.0",
           "Sample among the smallest set of most likely tokens holding this "
           "probability mass (with sampling; 1: off)">,
    ListOption<"treeParents", "tree-parents", "int64_t",
               "Verify a tree of the heads' candidates per round: each "
               "candidate's parent (#spec.tree's parents)">,
    ListOption<"treeRanks", "tree-ranks", "int64_t",
               "With tree-parents: each candidate's rank among its head's "
               "most likely tokens">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect"];
}
def SpecComposeTarget : Pass<"spec-compose-target", "::mlir::ModuleOp"> {
  let summary = "Compose a decoder that runs the target alone";
  let description = [{
    Creates `spec.decoder @<decoder-name> target(@<target>)
    proposer(#spec.none) verify(<rule>)`: a decoder that proposes nothing,
    so its decode loop is one target forward per token. It is where a user
    starts (`specc model.onnx -o model.spec`): the same artifact, runtime and
    server as a speculative decoder, measured before a draft or heads are
    added. The target is the function `target` names or the one with role
    `target`; the rule samples with `sampling`.

    Example:
    `spec-opt --spec-compose-target='sampling=true temperature=0.7'`
  }];
  let options = [
    Option<"targetName", "target", "std::string", "\"\"",
           "The target function (default: the one with role target)">,
    Option<"decoderName", "decoder-name", "std::string", "\"decoder\"",
           "Name of the created spec.decoder">,
    Option<"sampling", "sampling", "bool", "false",
           "Sample from the target's distribution instead of greedy">,
    Option<"temperature", "temperature", "double", "1.0",
           "Sampling temperature (with sampling)">,
    Option<"topK", "top-k", "int64_t", "0",
           "Sample among the k most likely tokens only (with sampling; 0: "
           "off)">,
    Option<"topP", "top-p", "double", "1.0",
           "Sample among the smallest set of most likely tokens holding this "
           "probability mass (with sampling; 1: off)">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect"];
}
def SpecFuseMTPHeads : Pass<"spec-fuse-mtp-heads", "::mlir::ModuleOp"> {
  let summary = "Fuse Medusa heads into the target so that one forward "
                "returns the verification logits and the next proposals";
  let description = [{
    For every `spec.decoder` with an `#spec.mtp` proposer of Medusa heads,
    creates `@<target>_fused`: the target's body, then each head's body
    applied to the target's last hidden state (its `#spec.io<hidden_states>`
    result), returning the target's results followed by one
    `#spec.io<head_logits, index = k>` result per head. The trunk is computed once. Weights
    that the heads share with the target or with each other (Medusa heads
    reuse the target's output projection) are deduplicated: equal constants
    become one. The decoder then refers to the fused target.

    With `last-position-only` (the default), the heads read only the last
    position's hidden state: proposals continue the sequence from its end.

    Decoders over DeepSeek-style MTP modules (`mtp_module`), which need the
    next token computed in the graph and a cache of their own, are left as
    they are: their decode loop runs the module after the target's forward
    (fusing them is not supported yet).
  }];
  let options = [
    Option<"numHeads", "num-heads", "int64_t", "0",
           "Use only the first N heads (0: all)">,
    Option<"lastPositionOnly", "last-position-only", "bool", "true",
           "Apply the heads to the last position's hidden state only">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecKVCacheInplace : Pass<"spec-kv-cache-inplace", "::mlir::ModuleOp"> {
  let summary = "Turn the functional KV cache of model functions into "
                "in-place writes into a preallocated cache";
  let description = [{
    Model functions imported from ONNX take the past keys and values
    (`#spec.io<past_key|past_value, index = i>`, from
    `past_key_values.{i}.key|value`) and return the present ones
    (`#spec.io<present_key|present_value, index = i>`) as `Concat(past,
    new)`: every step copies the whole cache. For each function with role `target`, `draft` or
    `mtp_module` that does, this pass replaces those arguments by one
    `!spec.kv_cache` of fixed capacity and an `index` past length (both
    appended to the arguments, as `#spec.io<kv_cache>` and
    `#spec.io<past_length>`), and
    those results by the updated cache (appended to the results); each
    concatenation becomes `spec.cache.write` of the new entries at the past
    length followed by `spec.cache.read` of the first `past + new` positions,
    and the past tensors' shapes become the past length and the cache's
    geometry.

    An `attention_mask` argument (`#spec.io<attention_mask>`, batch x
    total positions, as optimum exports take) is dropped too: the decode
    loops run one unpadded sequence, for which it is all ones over the past
    and new positions, and the function computes it so.

    The caller carries the valid length: keeping the accepted prefix after
    verification, or rolling the draft back, is only a change of that index,
    O(1) for both models. Caches hold batch 1.

    With `slots=S`, the cache holds S sequences (`layers x S x kv_heads x
    capacity x head_dim`) and one forward runs a batch of them, each row of
    the batch a sequence at its own length: the function takes the cache,
    the first slot of the batch (`index`, `#spec.io<first_slot>`) and the
    batch's past lengths (`tensor<?xi64>`, `#spec.io<past_lengths>`) in
    place of the cache and the past length; row b writes slot `first + b`
    at `past_lengths[b]` (`spec.cache.write_slots`) and attends to that
    slot's keys (`spec.cache.read_slots`). The reads span the batch's
    longest past, so the model's causal mask (`Where(key_pos > query_pos,
    -inf, scores)`, as `spec-tree-attention` finds it) becomes one per row,
    `key > past_lengths[b] + query`: a row sees its own sequence's keys and
    nothing of the others' or of its slot's stale positions. A sequence
    whose proposals are fewer than the batch's rows pads them; padded rows
    write past its length, where its next forward overwrites them.
    A function with `spec.slots = S` (`spec-slot-target`'s batched target)
    gets a cache of S slots whatever the option says.

    Refused with an error naming the function and tensor: a present output
    that is not `Concat(past, new)` along the sequence axis, a past tensor
    used other than by that concatenation and its shape, a cache of unknown
    heads or head dimension, an unknown capacity, or an attention mask that
    is not batch x dynamic positions or has no `input_ids` to size it by;
    with slots, a model with a fixed batch of 1 or with no causal mask of
    that form to make one per row, or a negative slot count.
  }];
  let options = [
    Option<"capacity", "capacity", "int64_t", "0",
           "Positions the cache holds (0: the model's max_context); with "
           "slots, positions of each slot">,
    Option<"slots", "slots", "int64_t", "0",
           "Sequences the cache holds, each forward a batch of them (0: one "
           "sequence, batch 1)">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecTreeAttention : Pass<"spec-tree-attention", "::mlir::ModuleOp"> {
  let summary = "Let a target verify a tree of candidates in one forward: "
                "its causal mask becomes a tree mask it takes as an argument";
  let description = [{
    A forward verifies a chain of proposals because each row attends to the
    rows before it. To verify a tree of candidates in one forward (Medusa's
    top-k per head, SpecInfer's token trees), a row must attend to the
    cached positions and to its own ancestors in the tree only.

    This pass finds the causal mask the target computes, as torch exports
    it: `future = key_pos > query_pos` over `[queries x keys]` (a
    `linalg.generic` of one `arith.cmpi sgt`, or `slt` the other way round,
    between a per-query and a per-key operand) feeding the `Where(future,
    -inf, scores)` of every attention layer. It appends an argument `tree`,
    `tensor<?x?xi1>` (`#spec.io<tree_mask>`, n x m for the forward's n rows:
    its m columns are the last m keys, the forward's own n rows and the
    m - n rows cached just before them; `tree[i][j]` says that key `j` is
    row `i` or one of its ancestors), and makes the mask, for those keys
    (key index `k >= past = keys - m`), `not tree[i][k - past]`; earlier
    keys keep the original comparison. m = n verifies a tree in one
    forward; m > n lets a draft extend a tree depth by depth, each forward
    feeding one depth and seeing the depths before it in its cache. A
    lower-triangular n x n `tree` gives back the causal mask, which is what
    the decode loops pass for prefill and one-token steps. The sizes are
    checked at run time (`cf.assert`: n rows, n <= m <= keys).

    It rewrites the target of every decoder with a `tree` and, when that
    decoder's draft proposes the tree (deeper than one: its forwards below
    the first depth run over the tree's candidates), the draft; or the
    function named by `function`. Refused, naming the function: no causal
    mask of that form (`Where(key_pos > query_pos, -inf, scores)`), or a
    function that already takes a tree mask.

    Example: `spec-opt --spec-kv-cache-inplace --spec-tree-attention`
  }];
  let options = [
    Option<"function", "function", "std::string", "\"\"",
           "Rewrite this function (default: the target, and a draft that "
           "proposes the tree, of every decoder with a tree)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecSlotTarget : Pass<"spec-slot-target", "::mlir::ModuleOp"> {
  let summary = "Give each decoder's target a batched twin over a cache of "
                "sequence slots";
  let description = [{
    Batched rounds run many sequences' rows through one target forward. For
    each `spec.decoder`, this pass clones its target as `@<target>_slots`
    with `spec.slots = <slots>` (which `spec-kv-cache-inplace` turns into a
    cache of that many slots, the batch's rows each at their own length)
    and names the clone on the decoder (`spec.slot_target`), for
    `spec-lower-rounds` to build the rounds on. The decoder's own loops keep
    the target they had. A target with heads fused in (`spec.fused_from`)
    is cloned as it is when the heads propose in the rounds (Medusa heads,
    greedy, a chain); otherwise the target they were fused into is, so that
    rounds compute no heads they do not use. A draft gets a twin too
    (`spec.slot_draft`), and so does an MTP module that proposes in the
    rounds (a chain of one module: it reads the target's hidden states and
    keeps a cache of its own per slot).

    Refused: `slots` below 1, and a decoder that already has a batched
    target.
  }];
  let options = [
    Option<"slots", "slots", "int64_t", "8",
           "Sequences the batched target's cache holds (the largest batch)">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect"];
}
def SpecLowerRounds : Pass<"spec-lower-rounds", "::mlir::ModuleOp"> {
  let summary = "Build a decoder's batched rounds: prefills of one slot and "
                "rounds over a batch of slots, with and without a draft";
  let description = [{
    For each `spec.decoder` with a batched target (`spec.slot_target`, from
    `spec-slot-target`, in the in-place cache form of
    `spec-kv-cache-inplace`), builds the functions a runtime drives a batch
    of sequences with, sharing one cache of slots that the caller keeps
    between calls:

    ```mlir
    // %tokens into slot %slot at positions %start..: the prompt, or a chunk
    // of it after %start cached positions; returns the next token (sampled:
    // drawn with %key, the sequence's seed).
    func.func private @<decoder>_prefill_step(%cache: !spec.kv_cache<...>,
        %slot: index, %start: index, %tokens: tensor<?xi64>, %key: i64)
        -> (i64, !spec.kv_cache<...>)
    // One token for each sequence of slots [%first, %first + n): its last
    // token at its length; returns the next ones (sampled: sequence b's
    // drawn with %keys[b] + %lengths[b], its seed plus its position).
    func.func private @<decoder>_round_step(%cache: !spec.kv_cache<...>,
        %first: index, %lengths: tensor<?xi64>, %tokens: tensor<?xi64>,
        %keys: tensor<?xi64>) -> (tensor<?xi64>, !spec.kv_cache<...>)
    ```

    A decoder with a draft (and its batched twin, `spec.slot_draft`) also
    gets a prefill of the draft's cache and a speculative round:

    ```mlir
    func.func private @<decoder>_draft_prefill_step(
        %draft_cache: !spec.kv_cache<...>, %slot: index, %start: index,
        %tokens: tensor<?xi64>, %key: i64) -> (i64, !spec.kv_cache<...>)
    // The draft proposes gamma tokens per sequence (its first forward feeds
    // the tokens at lengths - 1 and lengths, %previous and %tokens), the
    // target verifies every sequence's in one forward; sequence b commits
    // %picks[b, 0 .. %counts[b]). Sampled, %keys[b] is sequence b's round
    // key.
    func.func private @<decoder>_spec_round_step(%cache, %draft_cache,
        %first: index, %lengths: tensor<?xi64>, %previous: tensor<?xi64>,
        %tokens: tensor<?xi64>, %keys: tensor<?xi64>)
        -> (tensor<?x(gamma+1)xi64>, tensor<?xi64>, !spec.kv_cache<...>,
            !spec.kv_cache<...>)
    ```

    and the entries a runtime calls through MLIR's C interface, named as
    the steps without `_step`: each calls its step and returns its results
    but not the caches, which bufferized steps write in place into the
    caller's buffers (a public function returning a cache would return a
    copy of it every round). Each entry's `spec.slot_cache_shape` is the
    shape of its first cache.

    A decoder whose draft has another tokenizer (`spec.cross_tokenizer`)
    gets, instead of the speculative round, the draft's prefill, the
    draft's own round (`@<decoder>_draft_round_step(%draft_cache, %first,
    %lengths, %tokens, %bias) -> (logits + bias, draft cache)`, one row per
    sequence, from which the runtime chooses) and the target's verification
    of given proposals (`@<decoder>_verify_step(%cache, %first, %lengths,
    %tokens, %proposals: tensor<?xgammaxi64>) -> (picks, counts, cache)`):
    the runtime translates between them (docs/cross-tokenizer.md). Sampled,
    the verification also takes the distributions the proposals were drawn
    from in the target's vocabulary (`tensor<?xgammaxvocab>`) and each
    sequence's round key, and accepts by rejection sampling.

    All run the batched target (`spec.verify`) and pick tokens with the
    decoder's rule (`spec.propose`, `spec.accept`), as its decode loops do.
    Greedy, a speculative round commits the target's picks up to its first
    disagreement with the draft, so each sequence's tokens are its
    target-only greedy tokens, whatever else shares its rounds and however
    the runtime mixes plain and speculative rounds (the speculation length
    per round, 0 or gamma, is the runtime's choice). Sampled, each sequence
    draws with its own keys, the ones its decode loop would use for the
    same draws (a round's keys are the seed + the sequence's target
    forwards x 2^20, its draft draws take the round key + their position,
    its acceptance the round's last key): a sequence's tokens do not
    depend on the rest of the batch, and with every round speculative they
    are the decode loop's tokens for the same seed. Rejection sampling is
    lossless per round, so a mix of plain and speculative rounds samples
    the target's distribution too, though not the same tokens as another
    mix.

    With Medusa heads fused into the target (a chain), every forward's
    heads give each sequence its next proposals, and the entries carry them
    instead of a draft's (sampled, also the distributions they were drawn
    from, `tensor<? x heads x vocab x f32>` after the proposals, in and out:
    the prefill's heads draw with %key + k + 1, the speculative round's
    with %keys[b] + k + 1 as the decode loop keys a round's heads, and the
    plain round's with %keys[b] + 2^19 + %lengths[b] + k + 1, keys the
    decode loops do not use):

    ```mlir
    func.func private @<decoder>_prefill_step(...) -> (i64,
        tensor<heads x i64>, !spec.kv_cache<...>)
    func.func private @<decoder>_round_step(...) -> (tensor<?xi64>,
        tensor<? x heads x i64>, !spec.kv_cache<...>)
    // Sequence b's proposals (%proposals row b) verified after its last
    // token; the heads at its last committed row give its next ones.
    func.func private @<decoder>_spec_round_step(%cache, %first: index,
        %lengths: tensor<?xi64>, %tokens: tensor<?xi64>,
        %proposals: tensor<? x heads x i64>, %keys: tensor<?xi64>)
        -> (tensor<? x (heads+1) x i64>, tensor<?xi64>,
            tensor<? x heads x i64>, !spec.kv_cache<...>)
    ```

    With an MTP module (a chain of one; its batched twin is the decoder's
    `spec.slot_draft`), the module reads the target's hidden states and
    keeps a cache of slots of its own. The target's prefill and plain round
    also return the hidden states of the rows they fed (`tensor<? x hidden
    x f32>` before the cache), which the runtime keeps until the module
    reads them:

    ```mlir
    // Row i at position %start + i reads %hidden row i and the token after
    // it, %tokens[i]; returns the module's proposal after the last row
    // (sampled: drawn with %key, and its distribution).
    func.func private @<decoder>_module_prefill_step(%module_cache,
        %slot: index, %start: index, %hidden: tensor<? x hidden x f32>,
        %tokens: tensor<?xi64>, %key: i64)
        -> (i64, [tensor<vocab x f32>,] !spec.kv_cache<...>)
    // Sequence b's proposal verified in 2 rows; the module runs on them
    // (their hidden states, the tokens committed after them) and proposes
    // at the sequence's last committed row (sampled: %q in and out, the
    // next drawn with %keys[b] + 1, as the decode loop draws after a
    // round).
    func.func private @<decoder>_spec_round_step(%cache, %module_cache,
        %first: index, %lengths: tensor<?xi64>, %tokens: tensor<?xi64>,
        %proposals: tensor<?x1xi64>, [%q: tensor<?x1xvocabxf32>,]
        %keys: tensor<?xi64>)
        -> (tensor<?x2xi64>, tensor<?xi64>, tensor<?x1xi64>,
            [tensor<?x1xvocabxf32>,] !spec.kv_cache<...>, !spec.kv_cache<...>)
    ```

    A decoder whose proposer does not propose in rounds (trees, chains of
    more than one MTP module) gets the prefill and the plain round, and a
    remark saying so.

    Refused: a batched target or draft that does not take token ids, positions, a
    cache of slots, a first slot and past lengths (and nothing else) or
    does not return logits and the cache, a batched target without the
    logits of every head for every row when heads propose, sampled heads
    in a context of 2^19 - heads positions or more (their plain rounds'
    keys would meet other draws'), and a batched MTP module that does not
    take the target's hidden states or a target that does not return them.
  }];
  let dependentDialects = ["::specula::spec::SpecDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecLowerGenerate : Pass<"spec-lower-generate", "::mlir::ModuleOp"> {
  let summary = "Lower a decoder to an explicit propose / verify / accept "
                "loop";
  let description = [{
    For every `spec.decoder` with a `#spec.draft` proposer whose target and
    draft take preallocated caches (run `spec-kv-cache-inplace` first), or
    with Medusa heads fused into the target for every position
    (`spec-fuse-mtp-heads{last-position-only=false}`), creates
    `@<decoder>_generate(%prompt: tensor<?xi64>, %max_new_tokens: index,
    %key: i64, %stop_tokens: tensor<?xi64>) -> (tensor<Cxi64>, index, index,
    tensor<Rxi64>, i64, i64)`: the prompt followed by the generated tokens in a buffer of the
    caches' capacity C, its length, the number of target forwards, how many
    verify rounds accepted 0, 1, ..., R - 1 proposals (R is the round's
    width, proposals + 1; the runtime derives acceptance per position from
    it), and the nanoseconds the rounds spent proposing and verifying, read
    from `@specrt_clock_ns() -> i64` (declared here; the runtime and
    `GraphExecutor` provide it).

    The function prefills both caches with the prompt, takes the first token
    from the target's last logits, then loops (`scf.while`) until
    `max_new_tokens` tokens are generated, EOS (the target's
    `eos_token_id`) or one of `%stop_tokens` is committed (anywhere in a
    round, not only as its last token), or the context is full:

    * propose: gamma draft forwards (`scf.for`); the first feeds the draft
      every token it has not cached yet (the last token, and the previous
      round's last proposal when all were accepted), each picks a token with
      `spec.propose` under the decoder's rule;
    * verify: one `spec.verify` of the target on the last token and the
      gamma proposals;
    * accept: `spec.accept` gives the accepted count n and the next token;
    * commit and roll back: the accepted proposals and the next token are
      written to the sequence, and the valid lengths advance to the accepted
      prefix (target: n + 1 new positions; draft: at most gamma), which
      discards the rejected positions of both caches in O(1).

    When fewer than gamma + 1 positions are left in the context, a second
    loop steps the target alone (one forward per token, as the target-only
    loop does) until the context is full, so that speculative generation
    stops exactly where target-only generation stops. Its forwards count as
    target forwards and verify time, not as verify rounds.

    Sampling rules draw with keys `key + 2^20 * round + position` (target-only
    steps: `key + position`), so a run
    is reproducible from its key. The returned length never exceeds the
    prompt plus `max_new_tokens` (a round may compute up to gamma tokens
    more); tokens after an EOS accepted inside a round are for the caller to
    drop.

    With Medusa heads the loop has no draft: the fused forward that verifies
    the last token and the heads' proposals also gives, at the row of the
    last accepted token, the next token's logits and the heads' next
    proposals; with a `tree`, one forward verifies every
    candidate (the heads' top-k, rows at length + depth, the target's tree
    mask from `spec-tree-attention`), the target's picks (greedy, or drawn
    at every row when sampling) walk down the tree
    and `spec.cache.move` moves the accepted path's cache rows into place.
    With DeepSeek-style MTP modules each depth of the chain runs beside the
    target with its own in-place cache: after each verification depth 1
    processes the new positions (the target's hidden states there and the
    tokens after them), depth d > 1 also the positions it was fed a rejected
    proposal at, on the previous depth's hidden states (kept by position);
    the last row of depth d proposes, and depth d + 1 is fed that proposal.

    It also creates `@<decoder>_target_only`, the same signature and
    context capacity with one target forward per token: the reference speculative decoding must
    reproduce, and the baseline of speedups. Both loops carry
    `llvm.emit_c_interface` (the runtime calls them from C) and
    `spec.context_capacity` (C, which the artifact's manifest reports).
    The model functions they call become private: the loops are the
    module's entry points, and bufferization then drops a model's cache
    result, which aliases its cache argument, instead of copying the cache
    on every forward.
  }];
  let options = [
    Option<"decoderName", "decoder", "std::string", "\"\"",
           "Lower only the decoder with this name (default: all)">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecLowerSteps : Pass<"spec-lower-steps", "::mlir::ModuleOp"> {
  let summary = "Lower the spec step and cache ops to tensors for the CPU";
  let description = [{
    Rewrites what `spec-lower-generate` and `spec-kv-cache-inplace` produce
    into upstream ops, so that `spec-graph-to-llvm` compiles the decode loop:

    * `!spec.kv_cache<LxHxCxDxT>` becomes `tensor<2xLxHxCxDxT>` (keys, then
      values) everywhere: function signatures, calls, loops;
    * `spec.cache.alloc` a zero-filled tensor, `spec.cache.write` a
      `tensor.insert_slice` at the position, `spec.cache.read` a
      `tensor.extract_slice` of the first positions;
    * `spec.verify` a `func.call` of the target;
    * greedy `spec.propose`: the first argmax of each row (and a one-hot q);
      greedy `spec.accept`: the target's argmax per row, the longest prefix
      of proposals equal to it, and the target's token after that prefix.
    * `#spec.rejection` (temperature only): `spec.propose` samples each row
      from q = softmax(logits / T); `spec.accept` accepts proposal x with
      probability min(1, p(x) / q(x)), draws the token after the first
      rejection from norm(max(0, p - q)) and the bonus token from the last
      row's p. Uniform numbers come from splitmix64 of the op's key and a
      counter, so a seeded run is reproducible.

    * `top_k` / `top_p` of `#spec.rejection`: both p and q are filtered
      before the steps above (top-k, then top-p on what top-k kept, then
      renormalized), so rejection sampling reproduces the filtered target
      distribution. Each row's threshold is found by 32 bisection steps over
      the bit patterns of the probabilities, one pass over the row each.

    The `spec.decoder` compositions are erased: after `spec-lower-generate`
    their generate functions are what remains to compile. The loop-level
    cache ops (`append`, `commit`, `rollback`,
    `view`, `length`) are refused for now.

    With `argmax-lanes=N` the greedy argmax runs in vectors of N columns
    (an `scf.for` over each row's chunks keeping each lane's largest value
    and first column, then the smallest column holding the row's maximum):
    the same tokens as the linalg reduction, NaNs and ties included, for
    the CPU, where the reduction's loop carries its running maximum through
    memory. spec-to-cpu uses 16; the default, 0, keeps the linalg reduction
    every device's pipeline can schedule.
  }];
  let options = [
    Option<"argmaxLanes", "argmax-lanes", "int64_t", "0",
           "Columns per vector of the greedy argmax (0: a linalg reduction)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // SPECULA_PASSES_DECODER_PASSES_TD
