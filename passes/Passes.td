//===- Passes.td - spec dialect passes ---------------------*- tablegen -*-===//

#ifndef SPECULA_PASSES_PASSES_TD
#define SPECULA_PASSES_PASSES_TD

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
               "most likely tokens after its parent">
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

    Refused with an error naming the function and tensor: a present output
    that is not `Concat(past, new)` along the sequence axis, a past tensor
    used other than by that concatenation and its shape, a cache of unknown
    heads or head dimension, an unknown capacity, or an attention mask that
    is not batch x dynamic positions or has no `input_ids` to size it by.
  }];
  let options = [
    Option<"capacity", "capacity", "int64_t", "0",
           "Positions the cache holds (0: the model's max_context)">
  ];
  let dependentDialects = ["::specula::spec::SpecDialect",
                           "::mlir::arith::ArithDialect",
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

def SpecBlockContractions
    : Pass<"spec-block-contractions", "::mlir::func::FuncOp"> {
  let summary = "Register-block contractions for the CPU: one load of a "
                "weight (or key, or value) vector serves every row of a tile";
  let description = [{
    A forward of `r` rows (1 for a decode step, gamma + 1 for a verify, the
    prompt for a prefill) multiplies its activations by each weight matrix,
    `out[rows..., n] += a[rows..., k] * w[k, n]`, and its queries by the
    keys and values of each attention head, `out[h, rows, n] += a[h, rows,
    k] * w[h, k, n]`. Computed row by row, every row streams all of `w`
    through the vector units and reloads and stores its output row for every
    `k`, so a six-row verify costs about six one-row steps. This pass, on
    tensors before bufferization, tiles every f32 contraction whose second
    operand `w` does not depend on the row loops (any `linalg` op with one
    multiply-accumulate reduction `k`, the output's innermost loop `n`
    indexing `w`, and at least one row loop indexing `a` and the output but
    not `w`) into `rows x columns` output tiles with a `depth`-long
    reduction loop innermost, vectorizes every tile with `linalg::vectorize`,
    turns the result into `vector.contract`, and hoists the tile's
    accumulators out of the reduction loop (`hoistLoopInvariantSubsets`).
    Lowered to outer products, each vector of `w` is loaded once per `k` for
    all the tile's rows, and the accumulators stay in registers. Loops that
    index both operands (batch, attention head) and outer row loops are
    tiled by one.

    Dynamic sizes (the rows of a forward; the cached positions, which are
    `n` of the product with the keys and `k` of the product with the
    values) are tiled, the partial last tile peeled off
    (`peelForLoopAndSimplifyBounds`) and tiled again: rows by `rows / 2`, and
    so on down to one row (with a tile of 6 between 8 and 4, so that a
    six-row verify, gamma = 5 proposals, is one tile: one pass over `w`
    rather than a four-row and a two-row tile); columns and reductions by 8,
    then by one. Every tile has static sizes and vectorizes without masks.
    Static remainders are peeled into tiles of their own. The column tiles
    are the outer loop and the row tiles (marked `spec.row_tiles`) run
    inside each: the row tiles of a forward read the same column tile of `w`
    one after the other, from cache, so `w` comes from memory once per
    forward whatever its row count (a six-row verify of a 407 MiB model:
    2.73 one-row steps with rows outside, 2.20 with columns outside, and
    about 1.05 as one six-row tile, bench/forward_cost.py).

    A row tile whose accumulators (rows x columns elements) exceed
    `max-tile-elements` then has its columns split into narrower tiles, a
    power of two wide: with the defaults an 8-row tile computes 32 columns
    at a time, the 6- to 1-row tiles 64. A one-row tile of 32 columns is
    two multiply-add chains, each waiting for the latency of the last; 64
    columns give it four, and cut the example target's one-row step by
    about 5% and the example draft's by 10% (alternated runs; a six-row
    tile of 64 columns keeps its 24 accumulators in registers).

    Batch invariance (what exact greedy speculation relies on): every output
    element is still one multiply-add chain over `k` in ascending order
    starting from the output's initial value, whatever the tile it falls in
    and however many rows the forward has; the tile shapes only change which
    elements are computed side by side. Lowering `vector.contract` to outer
    products (`convert-vector-to-llvm{vector-contract-lowering=outerproduct}`)
    keeps that order; the products are fused multiply-adds (`llvm.fmuladd`)
    in every tile alike.

    Left alone: contractions whose second operand depends on every output
    loop, and other element types.

    Example: `spec-opt --pass-pipeline='builtin.module(func.func(spec-block-contractions{rows=8 columns=64 depth=8 max-tile-elements=384}))'`
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8",
           "Rows per tile (a power of two, at most 16); partial tiles are "
           "split into halves (and 6 rows)">,
    Option<"columns", "columns", "int64_t", "64",
           "Output columns per tile (a power of two, at most 128)">,
    Option<"depth", "depth", "int64_t", "8",
           "Reduction steps per iteration of the reduction loop (a power of "
           "two, at most 64)">,
    Option<"maxTileElements", "max-tile-elements", "int64_t", "384",
           "Most accumulator elements (rows x columns) per tile: the column "
           "tile of a row tile with more is split into narrower powers of "
           "two (0: no limit)">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect",
                           "::specula::spec::SpecDialect"];
}

def SpecParallelizeColumns
    : Pass<"spec-parallelize-columns", "::mlir::func::FuncOp"> {
  let summary = "Run the column tiles of blocked contractions on several "
                "threads";
  let description = [{
    `spec-block-contractions` marks the loop over a contraction's full
    column tiles (`spec.column_tiles`): each iteration computes whole output
    columns, every element in the same order whatever the iteration runs on.
    After bufferization, this pass turns each marked loop that is worth it
    into an `scf.parallel`, which `convert-scf-to-openmp` shares among the
    threads of an OpenMP team. Results are bit-identical for any number of
    threads: work is split by output columns, never inside a reduction.

    A loop is worth it when it has at least two iterations and its
    contraction does at least `min-work` multiply-adds per row (a row goes
    through one of the row tiles, each with its own copy of the
    contraction: the work of the largest one counts, not their sum);
    smaller ones cost less than waking the threads (on the example models,
    whose largest projection is 128 x 512, OpenMP regions cost 18% of the
    target's tokens/s with one thread and 55% with two; on a 1024-wide
    model two threads give 1.85x, bench/README.md). Reductions over a run-time
    length (attention over the cached positions) and bodies that allocate
    or call stay sequential. Marked loops left sequential lose the marker.

    Refused: a marked loop that still carries values (it runs before
    bufferization).

    Example: `spec-opt --pass-pipeline='builtin.module(func.func(spec-parallelize-columns{min-work=65536}))'`
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "kDefaultParallelMinWork",
           "Multiply-adds per row (columns x depth) below which a "
           "contraction's column tiles stay on one thread">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def SpecLowerChecks : Pass<"spec-lower-checks", "::mlir::ModuleOp"> {
  let summary = "Report failed run-time checks to the caller instead of "
                "aborting";
  let description = [{
    The importer checks at run time what only the inputs decide (a Slice
    step of 0 computed in the graph), as `cf.assert %ok, "message"`.
    Upstream's lowering of `cf.assert` prints and aborts, which would take
    the caller's process down. This pass turns each one into a call of
    `specrt_check(i1 ok, ptr message)` with the message in a constant
    global: the runtime (`libspecrt`, and `GraphExecutor` for JIT-compiled
    graphs) keeps the first failed message of a run, the code goes on (the
    importer keeps it in bounds), and the run ends with that message as its
    error.

    Refused: a check inside a GPU kernel, which cannot call the host.

    Example: `spec-opt --spec-lower-checks`
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def SpecFoldShapeTensors : Pass<"spec-fold-shape-tensors"> {
  let summary = "Turn the graph's small integer shape tensors into scalars";
  let description = [{
    ONNX graphs compute the shapes they reshape and expand to as small
    integer tensors (Shape, Gather, Unsqueeze, Concat); imported, each
    becomes a `tensor.concat` of one-element tensors, most of them a
    `tensor.reshape` of a 0-d tensor, read back with `tensor.extract`.
    Bufferized, every forward allocates a buffer per shape and fills it
    with one strided copy per element. This pass rewrites a `tensor.concat`
    of rank-1 integer or index tensors with at most `max-elements` elements
    into `tensor.from_elements` of their elements, and a `tensor.extract` at
    constant indices of a `tensor.reshape` between static shapes into an
    extract of the reshape's source at the same linear index; and an
    elementwise `linalg.generic` on integer tensors of at most
    `max-elements` elements whose operands are `from_elements`, fills or
    constants (Expand's `Where(Equal(shape, -1), 1, shape)`, a size divided
    by the head count) into its body once per element on the scalars.
    Extracts of `from_elements` and of constants fold. What remains of a
    shape is the scalars it was computed from: host arithmetic, where as
    linalg ops they would be GPU kernels whose results the host reads back.
    Float tensors, larger concatenations or generics, concatenations of
    inputs of dynamic size, generics with reductions or reading computed
    tensors, and extracts out of bounds are left alone.

    Example: `spec-opt --spec-fold-shape-tensors='max-elements=8'`
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "16",
           "Largest concatenation (in elements) turned into scalars">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpecFuseElementwise : Pass<"spec-fuse-elementwise"> {
  let summary = "Fuse elementwise linalg producers into their consumers when "
                "no element is computed twice";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` with a stricter rule. Upstream
    fuses a single-use elementwise producer into any `linalg.generic`
    consumer, also one with loops the fused operand does not depend on; the
    producer's body then runs in every iteration of those loops. In the
    importer's attention that fused the rotary embedding of the queries into
    the product with the keys: three multiplies and an add per score instead
    of per query element, for every cached position. This pass fuses only
    when the consumer's indexing map of the fused operand uses every loop of
    the consumer (each producer element is computed once); otherwise the
    producer stays a separate op. Reshape propagation and constant folding
    follow the same rule. A generic that yields one constant everywhere
    (the importer's shape arithmetic, such as a rotary embedding's half
    width) becomes that constant, so the slices it sizes become static.

    A `tensor.concat` (of at most `max-concat-inputs` inputs) that only a
    `linalg.generic` reads, along one of its parallel loops that every
    operand indexes by itself or not at all, is fused piecewise: one copy
    of the generic per input of the concatenation, on that input and on
    slices of the other operands and of the output, each inserted into the
    output. Nothing is concatenated: bufferized, the pieces read their
    inputs in place and write their slices of one buffer. The importer's
    rotary embedding, `x * cos + concat(-x2, x1) * sin`, then reads both
    halves of `x` where they are and negates in its first piece. Every
    element is computed by the same body as before, so results are
    bit-identical.

    With `fold-transposes` (spec-to-cuda's choice; off by default, the
    CPU's vectorized loops prefer the copy), a `linalg.transpose` read by
    elementwise generics is read through: each of them reads the
    transpose's input with the permuted indexing map, and a slice of a
    transpose becomes the transpose of the slice of its input, so that the
    rotary embedding's halves of the transposed queries and keys are read
    from the projections where they are. On the GPU each transpose was a
    copy kernel.

    Example: `spec-opt --spec-fuse-elementwise='max-concat-inputs=2
    fold-transposes=true'`
  }];
  let options = [
    Option<"maxConcatInputs", "max-concat-inputs", "int64_t", "4",
           "Concatenations of at most this many inputs are fused piecewise "
           "into their consumer (0: none)">,
    Option<"foldTransposes", "fold-transposes", "bool", "false",
           "Elementwise generics read transposes' inputs through permuted "
           "indexing maps (slices of transposes become transposes of "
           "slices)">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpecFuseAttention : Pass<"spec-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Fuse the importer's attention into one pass over the cached "
                "keys and values per query row, with online softmax";
  let description = [{
    The ONNX importer writes attention as a chain of tensor ops, each a full
    pass over heads x rows x positions: the keys expanded to every query
    head (grouped-query attention: `k[:, :, None].expand(...).reshape(...)`)
    and transposed, `q . k^T`, the scale and masks, softmax's max, exp, sum
    and divide, and the product with the values, expanded again. On every
    forward that copies the whole cached prefix several times.

    This pass matches the chain ending in `softmax(x) . v`, where `x` is
    `q . k^T` or an elementwise op of it and other tensors (scaling, the
    causal mask's select, an additive padding mask: its body is cloned), and
    the keys and values are `[1, heads, positions, head_dim]` rows or their
    grouped-query expansion; it replaces it by `scf.for` loops over heads and
    groups of `rows-per-group` query rows (the rows left over go one by
    one), each group making one pass over the positions that reads each key
    and value row in place once (`vector.transfer_read` of `head_dim`
    elements) and keeps, per row, a running maximum, sum and weighted sum of
    values (online softmax). Positions go in blocks of `positions-per-block`:
    one rescale of the running state and one vector `math.exp` of the
    block's weights per block. When `head_dim` and the block are multiples
    of 8, each position's products are folded into one 8-lane register and
    8 positions' registers reduced together by pairwise sums (as `vhaddps`
    does), so a block's scores come out in registers without a reduction
    per position. The modifier's body runs on a block's scores at once when
    its ops are elementwise: an input computed elementwise from the
    positions (torch's causal mask) is recomputed from them, an input
    contiguous in the positions is read as one vector. A query head `h`
    reads kv head `h / (heads / kv_heads)`. Keys read from the cache before
    a write of the values into it are read from the written cache (the
    write leaves them alone), so bufferization does not copy them.

    Each row's arithmetic depends only on its own scores, never on how many
    rows the forward has or which group it is in, so exact greedy
    verification still holds by construction (batch invariance): blocks
    start at multiples of the block size, a position past the end of the
    last block gets the score -inf, as a masked one does, and a zero weight
    leaves the running state exactly as it was; `q . k` is summed in a fixed
    order. The sizes the match assumes of
    dimensions computed in the graph (the reshapes' batch 1, kv heads,
    repeat, positions and head size) are checked at run time with
    `cf.assert` (reported by `spec-lower-checks`). A chain that does not
    match is left as it is.

    Example: `spec-opt --spec-fuse-attention`
  }];
  let options = [
    Option<"rowsPerGroup", "rows-per-group", "int64_t", "1",
           "Query rows that share each key and value load (1 to 16)">,
    Option<"positionsPerBlock", "positions-per-block", "int64_t", "16",
           "Cached positions per step of the online softmax (1 to 64): "
           "one rescale and one vector exp per block">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def SpecCloneSharedFills : Pass<"spec-clone-shared-fills"> {
  let summary = "Give each op that accumulates into a shared fill a fill of "
                "its own";
  let description = [{
    CSE merges identical `linalg.fill`s of `tensor.empty`s: the importer's
    zero (or -inf) accumulators of every contraction and reduction of one
    shape become one fill. One-Shot Bufferize then gives each op that writes
    into it a new buffer and a copy of the shared one: 41 copies per forward
    of the example target, each a kernel launch on the GPU and a strided
    copy on the CPU. This pass clones a `linalg.fill` on tensors that has
    more than one use for each use as a destination (a destination-style
    op's init), right before that op; reads keep the original, which is
    erased when nothing reads it. Each fill then bufferizes in place, and
    the device schedules fold it into the op that accumulates into it.
    Fills used once, fills only read and fills on buffers are left alone.
    Run it after the last CSE before bufferization.

    Example: `spec-opt --spec-clone-shared-fills`
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def SpecInterchangeContractions
    : Pass<"spec-interchange-contractions", "::mlir::func::FuncOp"> {
  let summary = "Put the reduction loop of matmul-like ops outside the "
                "innermost output loop, so that the innermost loop vectorizes";
  let description = [{
    The importer writes MatMul and the attention products as `linalg.generic`
    ops whose last loop is the reduction: `C[m, n] += A[m, k] * B[k, n]`
    iterates `(m, n, k)`, so the innermost loop strides through `B` column by
    column and accumulates one scalar. This pass swaps the reduction loop
    with the loop before it when that loop indexes the output's innermost
    (contiguous) dimension, giving `(m, k, n)`: the innermost loop reads `B`
    and updates `C` contiguously, which LLVM's loop vectorizer turns into
    vector loads and multiply-adds.

    Each output element still accumulates over `k` in ascending order, so
    results are bit-identical to the original order and do not depend on how
    many rows are computed together (batch invariance, which exact greedy
    speculation relies on). Ops with several reductions, or whose output is
    not indexed by the loop before the reduction, are left alone.

    Example: `spec-opt --pass-pipeline='builtin.module(func.func(spec-interchange-contractions))'`
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def SpecApproximateMath : Pass<"spec-approximate-math"> {
  let summary = "Replace calls of math functions with polynomial "
                "approximations that vectorize";
  let description = [{
    Rewrites the `math` ops named in `ops` (without the `math.` prefix) into
    upstream MLIR's polynomial approximations: plain `arith` and `math.fma`
    operations instead of a call into libm. Loops that apply them to every
    element (softmax's `exp`, SiLU's sigmoid) then vectorize, where a libm
    call per element does not. The approximations are accurate to a few
    ulp of float32 (upstream's tests). `exp` clamps its input to
    [-87.8, 88.8]: exp(-inf), a masked attention score, gives about 7e-39
    instead of 0, and overflow gives about 3.4e38 instead of inf.

    Every element goes through the same instructions wherever it sits in a
    vector (the approximations use `math.fma`, which rounds once whether
    scalar or vector), so results still do not depend on how many rows are
    computed together.

    Example: `spec-opt --spec-approximate-math='ops=exp,tanh'`
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "The math ops to approximate, e.g. exp,tanh,erf,log">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def SpecExternalizeWeights
    : Pass<"spec-externalize-weights", "::mlir::ModuleOp"> {
  let summary = "Move large constants of LLVM-dialect code into a weights "
                "file the runtime maps";
  let description = [{
    Runs on a module in the LLVM dialect (after `spec-graph-to-llvm`). Every
    constant `llvm.mlir.global` whose dense initializer (`dense_resource` or
    a non-splat `dense`) holds at least `min-bytes` bytes is written into the
    file `path`, at an offset aligned to 64 bytes (or the global's own larger
    alignment), and removed from the module. Each `llvm.mlir.addressof` of it
    becomes an address computed from the weights base:

      %base = llvm.load @spec_weights_base {invariant} : !llvm.ptr
      %w = llvm.getelementptr inbounds %base[OFFSET] : (!llvm.ptr) -> !llvm.ptr, i8

    `@spec_weights_base` is an exported pointer global (null until set). The
    runtime maps the weights file and stores its address there before calling
    any entry point, so weights are never compiled into code: code generation
    time does not grow with model size, and one shared object can run with
    other weights of the same layout.

    Splat constants and small ones stay in code (with `splats`, splats and
    booleans move too, written out element by element, a byte per boolean:
    `spec-to-cuda` moves every constant, since kernels cannot read the
    host's globals). Without `path` the pass fails, as it does when the file
    cannot be written or a constant's data is missing (an elided resource).

    Example: `spec-opt --spec-externalize-weights='path=weights.bin min-bytes=256'`
  }];
  let options = [
    Option<"path", "path", "std::string", "\"\"",
           "The weights file to write (required)">,
    Option<"minBytes", "min-bytes", "int64_t", "1024",
           "Constants smaller than this stay in code">,
    Option<"splats", "splats", "bool", "false",
           "Also move splat and boolean constants (expanded): code on a "
           "device cannot read the host's globals">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def SpecOrderGlobals : Pass<"spec-order-globals", "::mlir::ModuleOp"> {
  let summary = "Name and order bufferization's constant globals by first "
                "use, so compilation is reproducible";
  let description = [{
    `one-shot-bufferize` with function boundaries turns each constant tensor
    into a private constant `memref.global` named `__constant_<shape>[_N]`,
    numbered and placed in the order it visits functions, and MLIR 22 takes
    that order from a map keyed by operation addresses: two runs of the same
    pipeline on the same input can give the globals different names and
    places, hence different LLVM modules and weights-file layouts.

    This pass renames every private constant `memref.global` to
    `__constant_<i>`, where i is the order of its first `memref.get_global`
    in the module (walk order), and moves them, in that order, to the start
    of the module (unused ones after them, by name). Only the names and the
    order of the globals change. Run it right after bufferization;
    `spec-graph-to-llvm` does.

    Refused, naming the global and the user: a global referenced by anything
    but `memref.get_global` (renaming it would break that reference).
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def SpecGPUAttention : Pass<"spec-gpu-attention", "::mlir::func::FuncOp"> {
  let summary = "Compute the importer's attention in two GPU kernels that "
                "read the cached keys and values in place";
  let description = [{
    The GPU's counterpart of `spec-fuse-attention`, on tensors. The
    importer's attention, `softmax(modify(q . k^T)) . v` with the keys and
    values expanded to every query head (grouped-query attention) and the
    keys transposed, bufferizes to a kernel per op: the expansions and the
    transpose copy the cached prefix, and softmax's maximum, exp, sum and
    divide each make a pass over the scores. On a decode step every one of
    them costs a launch, more than it computes.

    This pass matches the same chain as `spec-fuse-attention` and replaces
    it by two ops. The scores become a contraction that reads the cached key
    rows where they are (query head `h` reads kv head `h / repeat`, an
    affine `floordiv` in its indexing map), one thread per score once
    scheduled, its accumulators' fill sized by what it reads (one nest with
    it). Softmax and the product with the values become one
    `linalg.generic` over the output's elements `[1, heads, rows,
    head_dim]` whose body makes three passes over the positions: the row's
    maximum, the sum of `exp(x - max)`, and the sum of `exp(x - max) / sum`
    times the value row's element, read in place. `x` is the modifier's
    value (scaling, masks), its body run on its operands' elements where a
    pass reads a score, so it is no kernel of its own. Each pass clones the
    body of the op it replaces, in the same order over
    the positions, so every output is computed by the same arithmetic as
    before, bit for bit (and a row's values never depend on how many rows
    the forward has: batch invariance holds as it did).

    With `fold-transposes` (the default), a query that is a
    `linalg.transpose` is read through it (the transpose's input, with the
    permuted indexing map), and an output whose only use is a transpose is
    written in that transpose's layout: two copy kernels fewer per
    attention.

    The sizes the match assumes of dimensions computed in the graph (batch
    1, the reshapes' kv heads, repeat, positions and head size) are checked
    at run time with `cf.assert` (reported by `spec-lower-checks`), and a
    layer's keys read from the cache before its values were written into it
    are read after the write, in place (as `spec-fuse-attention` does). A
    chain that does not match is left as it is.

    Example: `spec-opt --spec-gpu-attention='fold-transposes=false'`
  }];
  let options = [
    Option<"foldTransposes", "fold-transposes", "bool", "true",
           "Read a transposed query through its transpose and write the "
           "output in the layout of a transpose that is its only use">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpecGPUContractions
    : Pass<"spec-gpu-contractions", "::mlir::func::FuncOp"> {
  let summary = "GPU loops for contractions whose rows share an operand: "
                "each weight read once for a tile of rows, with vector loads, "
                "and deep reductions split among threads";
  let description = [{
    A decode step reads every weight once, so on a GPU its contractions are
    bound by memory bandwidth, and a verify forward of gamma + 1 rows should
    cost about what one row does. `spec-gpu-schedule` alone gives one thread
    per output: a six-row forward reads each weight six times, and a
    one-row product `[1, K] x [K, N]` runs N threads, each reading a column
    of K weights one after the other (2048 threads for a 2048-wide layer:
    a sixth of an H200's multiprocessors, with one load in flight each).

    This pass, on bufferized code before `spec-gpu-schedule`, rewrites every
    f32 contraction `out[outer..., rows, n] += a[outer..., rows, k] *
    w[outer..., k, n]` whose `w` does not depend on the rows (weight
    matrices; the keys and values of an attention head) into an
    `scf.parallel` nest that `spec-gpu-schedule` then maps: one thread per
    group of `vector-width` adjacent columns, per tile of up to `rows` rows,
    and per slice of the reduction. The thread loads each `vector-width`
    group of `w` once per `k` (one 128-bit load for 4 f32 when `w`'s rows
    are contiguous and 16-byte aligned) and multiplies it into the
    accumulators of all the tile's rows, which stay in registers. A tile of
    fewer rows than `rows` (the last one, or a forward with fewer rows) is
    computed as tiles of 6, 4, 2 and 1 rows, so that no thread computes rows
    that do not exist.

    When `w` has at least `split-min-bytes` bytes and a static reduction of
    more than `slice-depth` steps, the reduction is split into slices of
    `slice-depth` steps computed by different threads (K / slice-depth
    times more threads, and as many more loads in flight), each into its
    own partial sum, and a second loop nest adds each output's partial sums
    to it in slice order.

    Batch invariance (exact greedy speculation relies on it): each output is
    one fused multiply-add chain over its slice's `k` in ascending order,
    and the slices' sums are added in slice order; the slices depend only on
    `k`'s extent, never on the number of rows, and every row of every tile
    runs the same arithmetic. A row's values are therefore the same whether
    the forward has one row or nine.

    An output initialized by a `linalg.fill` just before the contraction
    (with only ops that touch no memory, or allocate, in between) starts its
    accumulators (or, split, its sum of partial sums) from the fill's value,
    and the fill is erased: the same arithmetic, one kernel launch fewer.
    Likewise an elementwise `linalg.generic` right after a contraction that
    is not split (a residual or bias add, an activation), which reads the
    output once at the same element and writes a buffer that no thread of
    the contraction reads: the contraction's threads apply its body to each
    accumulator lane and store its result, the product itself only where
    something else reads it (its buffer is erased otherwise).

    With `prologues`, an elementwise `linalg.generic` of at most four arith
    ops (RMSNorm's scaling `x / rms * gain`) that writes the rows input of
    contractions is computed by their threads where they read it, and
    erased: legal when every read of its output, until the output is
    overwritten, freed or its allocation's block ends, is such a
    contraction's rows input, when nothing writes the producer's inputs
    before the last of them, and when the producer is not another
    contraction's epilogue. Each thread computes the rows it reads with the
    producer's own ops, so the values are the same; the cost is that
    arithmetic per row and reduction step in every thread, which is why
    math functions (an exponential) are left to a kernel of their own.

    With `pairs`, a contraction right after another one (an initializing
    fill and ops that touch no memory between) whose epilogue reads the
    first one's product at the same element (SwiGLU's `silu(gate) * up`
    after the gate and up projections) is computed by the first one's
    threads in the same loop over the reduction: one load of each weight and
    of the rows per step, and the first products passed to the epilogue in
    registers (stored only where something else reads them). Legal when
    both are not split and have the same schedule, indexing maps, loop
    sizes and rows input, the first has no epilogue of its own, and neither
    writes a buffer the other reads.

    The loops are ordinary `scf` and `vector` ops: with
    `spec-to-cpu{gpu-schedule-threads}` they run on the CPU, which is how
    the exact-greedy and ONNX Runtime tests check them without a GPU.

    Left alone: contractions of other element types, with bodies other than
    one multiply and one add, or not bufferized.

    Refused: options out of range (rows a power of two in [1, 16];
    vector-width 1, 2 or 4; slice-depth at least 1; split-min-bytes not
    negative).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8",
           "Most rows a thread computes from one load of weights (a power "
           "of two, at most 16)">,
    Option<"vectorWidth", "vector-width", "int64_t", "4",
           "Adjacent columns per thread, loaded as one vector where the "
           "weights' rows are contiguous and aligned (1, 2 or 4)">,
    Option<"sliceDepth", "slice-depth", "int64_t", "32",
           "Reduction steps per thread when the reduction is split">,
    Option<"splitMinBytes", "split-min-bytes", "int64_t", "kDefaultGPUSplitMinBytes",
           "Split the reduction of contractions whose shared operand has at "
           "least this many bytes (0: every one with a static reduction "
           "longer than slice-depth)">,
    Option<"pairs", "pairs", "bool", "true",
           "Compute a contraction whose epilogue reads the previous one's "
           "product (SwiGLU's up projection after its gate) in the same "
           "threads and loop">,
    Option<"prologues", "prologues", "bool", "true",
           "Compute an elementwise producer of the rows input (a norm's "
           "scaling) where the contraction reads it">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def SpecGPUSchedule : Pass<"spec-gpu-schedule", "::mlir::func::FuncOp"> {
  let summary = "Map bufferized linalg ops and copies to GPU blocks and "
                "threads";
  let description = [{
    The schedule of `spec-to-cuda`, on bufferized code: every `memref.copy`
    becomes a `linalg.copy`, every linalg op an `scf.parallel` nest over its
    parallel dimensions around `scf.for` loops over its reductions (an op
    without parallel dimensions gets a one-iteration `scf.parallel`), and
    each outermost `scf.parallel` is tiled on its innermost dimension by
    `threads` (fewer, in whole warps, for a narrower static dimension) and
    mapped for `convert-parallel-loops-to-gpu`: the tiles of the three
    innermost dimensions to block x, y and z, the threads of a tile to
    thread x, every other dimension and every nested parallel loop to
    sequential loops inside the thread.

    One thread computes each output whole, its reduction included, in the
    order of the op's reduction loops: a row's values never depend on how
    many rows a forward has (batch invariance, so speculative greedy equals
    target-only greedy on the GPU too). Adjacent threads write adjacent
    outputs of the innermost dimension and, in a contraction with row-major
    weights, read adjacent weights: loads are coalesced.

    With `fuse` (the default), adjacent nests over the same iteration space
    become one nest, so one kernel, where each iteration of the second reads
    and writes only what the same iteration of the first wrote or read: a
    reduction's initializing fill and the reduction, an elementwise op and
    the next, the key and value cache writes of a layer, or writes only
    subviews of one buffer whose static ranges in some dimension do not
    overlap those of the other (a rotary embedding's two halves). A nest's
    dimensions of one iteration are dropped first, so that a `[rows, 1]`
    fill and the reduction over `rows` it initializes (its output indexed
    `[row, 0]`) are the same iteration space. Each launch costs
    more than a decode step's small kernels compute, and fusing changes no
    arithmetic: each output is computed by the same ops in the same order.
    Between fused nests may lie only ops without regions that allocate or
    touch no buffer the first nest touches (host code storing a reshape's
    shape), none of them writing what it reads; accesses other than `memref.load` and `memref.store` (the vector
    loads of `spec-gpu-contractions`) keep their nest apart from any nest
    that touches the same buffers.

    With `merge` (the default), after fusion, adjacent nests that may run
    at once become one nest, so one kernel, over the concatenation of their
    iterations (one dimension, row-major): an iteration runs the body of the
    nest its index falls in, with that nest's variables recovered from the
    offset. Such nests write no buffer that may alias one another touches,
    but for subviews of one buffer whose static ranges in some dimension do
    not overlap: a layer's query, key and value projections, which read
    the same normalized rows; its rotary embeddings of the queries and keys
    and its value cache write. The ops between them obey the rule for
    fusion. Merging too changes no arithmetic.

    The loops stay executable on the CPU (they are ordinary `scf` loops with
    mapping attributes until `convert-parallel-loops-to-gpu` runs).

    Refused: options out of range (threads must be a multiple of 32 in
    [32, 1024]); linalg ops on tensors (run it after bufferization).
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"fuse", "fuse", "bool", "true",
           "Fuse adjacent nests over the same iteration space into one "
           "kernel where each iteration depends only on the same iteration">,
    Option<"merge", "merge", "bool", "true",
           "Merge adjacent nests that may run at once (no buffer one writes "
           "is touched by another) into one kernel over all their "
           "iterations">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpecGPUAsyncLaunches
    : Pass<"spec-gpu-async-launches", "::mlir::func::FuncOp"> {
  let summary = "Chain kernel launches on one stream; synchronize only "
                "before host code that touches what they touch";
  let description = [{
    A synchronous `gpu.launch_func` is lowered to a launch followed by a
    stream synchronization: a forward of a few hundred kernels waits for the
    GPU a few hundred times. This pass makes the launches of each block
    asynchronous, chained on one token (one stream, so they still run in
    order), and inserts a synchronous `gpu.wait` only before the first host
    operation that may touch memory a pending kernel touches: a load, store
    or other memory effect on a buffer (traced through views, casts and
    reshapes to its allocation, global, block argument or call result) that
    a pending launch received or may alias (a block argument may be any
    buffer; an allocation may be a block argument of the blocks inside the
    one that allocated it), a reshape whose shape buffer does, any
    operation with regions, a call, a terminator, or an operation whose
    effects are unknown. Constant globals never need one: kernels only read
    them. Allocation and deallocation do not synchronize: the runtime
    reuses a freed block only after the stream's next synchronization.

    Runs on host functions after `gpu-kernel-outlining`; `spec-to-cuda`
    runs it unless `async-launches=false`.

    Refused: a launch that is asynchronous already.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // SPECULA_PASSES_PASSES_TD
