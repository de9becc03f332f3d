//===- SpecAttrs.td - spec dialect attributes --------------*- tablegen -*-===//

#ifndef SPECULA_DIALECT_SPEC_SPECATTRS_TD
#define SPECULA_DIALECT_SPEC_SPECATTRS_TD

include "dialects/spec/SpecBase.td"
include "dialects/spec/SpecInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class Spec_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Spec_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A double-precision parameter written as a plain float literal (`0.8`).
class Spec_F64Parameter<string desc, string default>
    : APFloatParameter<desc> {
  let defaultValue = "::llvm::APFloat(" # default # ")";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ ::specula::spec::detail::printShortestDouble($_printer, $_self) }];
}

//===----------------------------------------------------------------------===//
// Function roles and model configuration
//===----------------------------------------------------------------------===//

def Spec_RoleAttr : Spec_Attr<"Role", "role"> {
  let summary = "the role of a model function in a speculative decoder";
  let description = [{
    Attached to a `func.func` as `spec.role`. A `target` produces the logits
    whose distribution speculative decoding must preserve; a `draft` is a
    cheaper model of the same vocabulary that proposes tokens
    autoregressively; a `medusa_head` reads the target's last hidden state and
    predicts the token `depth` positions after the next one; an `mtp_module`
    is a DeepSeek-V3-style module at `depth` in a chain, consuming the previous
    depth's hidden state and the embedding of the next token.

    Heads and modules carry their depth (1 is the first proposal position);
    targets and drafts do not.

    Example:

    ```mlir
    func.func @head1(%h: tensor<?x64xf32>) -> tensor<?x259xf32>
        attributes {spec.role = #spec.role<medusa_head, depth = 1>}
    ```
  }];
  let parameters = (ins
    EnumParameter<Spec_FunctionRole>:$kind,
    OptionalParameter<"std::optional<int64_t>">:$depth);
  let assemblyFormat = "`<` $kind (`,` `depth` `=` $depth^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True for Medusa heads and MTP modules: the roles that carry a depth.
    bool isHead() const {
      return getKind() == FunctionRole::MedusaHead ||
             getKind() == FunctionRole::MTPModule;
    }
  }];
}

def Spec_IOAttr : Spec_Attr<"IO", "io"> {
  let summary = "what an argument or result of a model function is";
  let description = [{
    Attached to a model function's arguments and results as `spec.io`: the
    contract between the importer, which sets it from the model's input and
    output names (ONNX: `input_ids`, `position_ids`,
    `past_key_values.{i}.key|value`, `logits`, `present.{i}.key|value`,
    `hidden_states`, `medusa_logits.{k}`, and an MTP module's
    `previous_hidden_states`), and the passes, which find values
    by it and never by name. `past_key`, `past_value`, `present_key` and
    `present_value` carry the layer (`index` from 0), `head_logits` the
    head's depth (from 1); `kv_cache` and `past_length` are the in-place
    cache and its valid length that `spec-kv-cache-inplace` adds.

    Example:

    ```mlir
    func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                      %k: tensor<?x2x?x32xf32> {spec.io = #spec.io<past_key, index = 0>})
        -> (tensor<?x?x259xf32> {spec.io = #spec.io<logits>})
    ```
  }];
  let parameters = (ins
    EnumParameter<Spec_IOKind>:$kind,
    OptionalParameter<"std::optional<int64_t>">:$index);
  let assemblyFormat = "`<` $kind (`,` `index` `=` $index^)? `>`";
  let genVerifyDecl = 1;
}

def Spec_ModelConfigAttr : Spec_Attr<"ModelConfig", "model_config"> {
  let summary = "configuration of a model: vocabulary, special tokens, context";
  let description = [{
    Attached to a `func.func` as `spec.config`; the ONNX importer fills it from
    the model's `metadata_props`. Only `vocab_size` is required. Token ids must
    lie in `[0, vocab_size)`; `tokenizer` is a fingerprint (e.g. the SHA-256 of
    the tokenizer's vocabulary) used to refuse drafts whose token ids mean
    something else than the target's.

    Example:

    ```mlir
    #spec.model_config<vocab_size = 259, bos_token_id = 256, eos_token_id = 257,
                       pad_token_id = 258, max_context = 512,
                       tokenizer = "sha256:3f1a...">
    ```
  }];
  let parameters = (ins
    "int64_t":$vocab_size,
    OptionalParameter<"std::optional<int64_t>">:$bos_token_id,
    OptionalParameter<"std::optional<int64_t>">:$eos_token_id,
    OptionalParameter<"std::optional<int64_t>">:$pad_token_id,
    OptionalParameter<"std::optional<int64_t>">:$max_context,
    OptionalParameter<"::mlir::StringAttr">:$tokenizer);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Proposers
//===----------------------------------------------------------------------===//

def Spec_DraftProposerAttr : Spec_Attr<"DraftProposer", "draft", [
    DeclareAttrInterfaceMethods<Spec_ProposerAttrInterface>]> {
  let summary = "an external draft model proposing gamma tokens per step";
  let description = [{
    Names a function with role `draft` and the number of tokens `gamma` (at
    least 1) it proposes autoregressively before each verification.

    With `min_confidence` (in (0, 1); 0, the default, is off) a round's
    drafting stops early: at the first token to which the draft gives a
    probability below it, which is not proposed, so that the round verifies
    only the tokens the draft was confident of (dynamic speculation length,
    as Hugging Face's `assistant_confidence_threshold`). Where the draft is
    unsure, its tokens are mostly rejected, and each costs a draft forward
    and a verified row. Greedy verification only: the output stays exactly
    the target's.

    Example: `#spec.draft<@draft, gamma = 4>`,
    `#spec.draft<@draft, gamma = 8, min_confidence = 0.4>`
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$model, "int64_t":$gamma,
                        Spec_F64Parameter<"probability below which drafting stops (0: off)",
                                          "0.0">:$minConfidence);
  let assemblyFormat = [{
    `<` $model `,` `gamma` `=` $gamma
        (`,` `min_confidence` `=` $minConfidence^)? `>`
  }];
  let builders = [
    AttrBuilder<(ins "::mlir::FlatSymbolRefAttr":$model, "int64_t":$gamma), [{
      return $_get($_ctxt, model, gamma, ::llvm::APFloat(0.0));
    }]>
  ];
  let genVerifyDecl = 1;
}

def Spec_MTPProposerAttr : Spec_Attr<"MTPProposer", "mtp", [
    DeclareAttrInterfaceMethods<Spec_ProposerAttrInterface, ["verifyRoles"]>]> {
  let summary = "multi-token-prediction heads fused into the target";
  let description = [{
    Names the Medusa heads or the chain of MTP modules, in depth order
    (depth 1 first). Each head proposes one token, so a step proposes as many
    tokens as there are heads. An MTP module may be listed again right after
    itself: it then also runs at the next depth, on the hidden states it gave
    at the previous one (a module trained at depth 1 chained to depth 3 is
    `[@module, @module, @module]`).

    Example: `#spec.mtp<[@head1, @head2, @head3]>`
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::FlatSymbolRefAttr">:$heads);
  let assemblyFormat = "`<` `[` $heads `]` `>`";
  let genVerifyDecl = 1;
}

def Spec_NoProposerAttr : Spec_Attr<"NoProposer", "none", [
    DeclareAttrInterfaceMethods<Spec_ProposerAttrInterface>]> {
  let summary = "no proposer: the target alone, one forward per token";
  let description = [{
    A decoder that proposes nothing: each round is one target forward and
    commits its pick, as the target-only loop every decoder has. A user
    compiles a target this way first, measures it, then adds a draft or
    heads (`specc model.onnx -o model.spec`). No tree.

    Example: `spec.decoder @decoder target(@target) proposer(#spec.none)
    verify(#spec.greedy)`
  }];
}

def Spec_TreeAttr : Spec_Attr<"Tree", "tree"> {
  let summary = "a static tree of candidates verified in one forward";
  let description = [{
    The candidates a round verifies, as a tree under the last committed
    token (the root, row 0 of the verify forward). Node `i` (row `i`, from
    1) has parent `parents[i - 1]` (0 is the root; parents come before their
    children) and is the `ranks[i - 1]`-th most likely token (0: the most
    likely) of the proposer's distribution at its depth: for Medusa heads,
    head `d` at depth `d`; for a draft, the draft's next-token distribution
    after the node's parent. Medusa's `medusa_choices` `[[0], [1], [0, 0]]`
    is `#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>`. Siblings have
    distinct ranks.

    Example: `#spec.tree<parents = [0, 0, 1], ranks = [0, 1, 0]>`
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$parents,
                        ArrayRefParameter<"int64_t">:$ranks);
  let assemblyFormat =
      "`<` `parents` `=` `[` $parents `]` `,` `ranks` `=` `[` $ranks `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Candidates, the root not counted.
    int64_t getNumNodes() const { return getParents().size(); }
    /// The depth of row `row` (0 for the root).
    int64_t getDepth(int64_t row) const;
    /// The deepest candidate's depth.
    int64_t getMaxDepth() const;
    /// Whether row `ancestor` is row `row` or on its path to the root.
    bool isAncestorOrSelf(int64_t ancestor, int64_t row) const;
  }];
}

// Any attribute that says how a decoder proposes.
def Spec_ProposerAttr : Attr<
    CPred<"::llvm::isa<::specula::spec::ProposerAttrInterface>($_self)">,
    "a proposer (#spec.draft, #spec.mtp or #spec.none)"> {
  let storageType = "::specula::spec::ProposerAttrInterface";
  let returnType = storageType;
  let convertFromStorage = "$_self";
}

//===----------------------------------------------------------------------===//
// Verification rules
//===----------------------------------------------------------------------===//

def Spec_GreedyAttr : Spec_Attr<"Greedy", "greedy", [
    DeclareAttrInterfaceMethods<Spec_VerificationRuleAttrInterface>]> {
  let summary = "greedy verification: exact agreement with the target's argmax";
  let description = [{
    A proposal is accepted while it equals the argmax of the target logits at
    its position; the first mismatch is replaced by the target's argmax. The
    output is token-for-token the target's own greedy decoding.

    Example: `#spec.greedy`
  }];
}

def Spec_RejectionAttr : Spec_Attr<"Rejection", "rejection", [
    DeclareAttrInterfaceMethods<Spec_VerificationRuleAttrInterface>]> {
  let summary = "lossless rejection sampling (Leviathan et al., Chen et al.)";
  let description = [{
    A proposal `x` drawn from the proposer's distribution `q` is accepted with
    probability `min(1, p(x)/q(x))`, where `p` is the target's distribution
    after temperature, top-k and top-p; on rejection a token is drawn from
    `norm(max(0, p - q))`. The output distribution is exactly the target's.

    `temperature` must be positive; `top_k = 0` disables top-k; `top_p` lies
    in `(0, 1]` and 1 disables nucleus filtering.

    Example: `#spec.rejection<temperature = 0.8, top_k = 40, top_p = 0.95>`
  }];
  let parameters = (ins
    Spec_F64Parameter<"sampling temperature", "1.0">:$temperature,
    DefaultValuedParameter<"int64_t", "0", "top-k, 0 = disabled">:$top_k,
    Spec_F64Parameter<"nucleus mass, 1 = disabled", "1.0">:$top_p);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// Any attribute that says how proposals are verified.
def Spec_VerificationRuleAttr : Attr<
    CPred<"::llvm::isa<::specula::spec::VerificationRuleAttrInterface>($_self)">,
    "a verification rule (#spec.greedy or #spec.rejection)"> {
  let storageType = "::specula::spec::VerificationRuleAttrInterface";
  let returnType = storageType;
  let convertFromStorage = "$_self";
}

#endif // SPECULA_DIALECT_SPEC_SPECATTRS_TD
