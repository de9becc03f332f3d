//===- SpecBase.td - spec dialect definition ---------------*- tablegen -*-===//
//
// The `spec` dialect carries only what is specific to speculative decoding:
// the roles of model functions, the decoder composition, the step operations
// of the propose/verify/accept loop and KV caches with an explicit length.
// Tensor math stays in upstream dialects.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_DIALECT_SPEC_SPECBASE_TD
#define SPECULA_DIALECT_SPEC_SPECBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Spec_Dialect : Dialect {
  let name = "spec";
  let cppNamespace = "::specula::spec";
  let summary = "Speculative decoding: model roles, decoder compositions, "
                "propose/verify/accept steps and KV caches";
  let description = [{
    The `spec` dialect describes a speculative decoder on top of model
    functions written in upstream dialects (`func`, `linalg`, `tensor`,
    `arith`, `math`, `tosa`). It expresses:

    * the **role** of each model function (`#spec.role<target>`,
      `#spec.role<draft>`, `#spec.role<medusa_head, depth = k>`,
      `#spec.role<mtp_module, depth = k>`) and the **model configuration** it
      carries (`#spec.model_config<...>`: vocabulary size, special token ids,
      maximum context, tokenizer fingerprint), both as discardable attributes
      `spec.role` and `spec.config` on `func.func`; a target that
      `spec-fuse-mtp-heads` extended with its heads names the target it was
      made from with `spec.fused_from = @target`;
    * the **decoder composition** `spec.decoder`: a target, a proposer
      (`#spec.mtp<...>` heads fused into the target, or `#spec.draft<...>` an
      external draft model proposing gamma tokens) and a verification rule
      (`#spec.greedy` or lossless `#spec.rejection<...>` sampling);
    * the **step operations** the decode loop is built from: `spec.propose`,
      `spec.verify`, `spec.accept`;
    * **KV caches** (`!spec.kv_cache`) as preallocated buffers with a length,
      so that discarding rejected tokens (`spec.cache.rollback`) is O(1).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Discardable attribute naming the role of a model function.
    static constexpr ::llvm::StringLiteral kRoleAttrName = "spec.role";
    /// Discardable attribute carrying a model function's configuration.
    static constexpr ::llvm::StringLiteral kConfigAttrName = "spec.config";
    /// Discardable attribute of a fused target: the target it extends.
    static constexpr ::llvm::StringLiteral kFusedFromAttrName =
        "spec.fused_from";
    /// Discardable attribute of a decode loop (`@<decoder>_generate`): the
    /// positions its sequence buffer holds, prompt included. It survives the
    /// lowering to LLVM, where the artifact writer reads it for the manifest.
    static constexpr ::llvm::StringLiteral kContextCapacityAttrName =
        "spec.context_capacity";
    /// Discardable unit attribute of a loop over the column tiles of a
    /// blocked contraction (spec-block-contractions): its iterations write
    /// disjoint output columns, so spec-parallelize-columns may run them on
    /// several threads without changing any result.
    static constexpr ::llvm::StringLiteral kColumnTilesAttrName =
        "spec.column_tiles";
    /// Discardable unit attribute of a loop over the row tiles of a blocked
    /// contraction, inside a column tile: its trip count is the forward's
    /// row count, not work per row (spec-parallelize-columns).
    static constexpr ::llvm::StringLiteral kRowTilesAttrName =
        "spec.row_tiles";
    /// Discardable attribute of a model function: the sequence slots its
    /// cache holds (spec-slot-target sets it on a decoder's batched target,
    /// spec-kv-cache-inplace gives the function a cache of that many).
    static constexpr ::llvm::StringLiteral kSlotsAttrName = "spec.slots";
    /// Discardable attribute of a spec.decoder: its target's batched twin
    /// (spec-slot-target), which spec-lower-rounds builds rounds on.
    static constexpr ::llvm::StringLiteral kSlotTargetAttrName =
        "spec.slot_target";
    /// Discardable attribute of a spec.decoder with a draft or an MTP
    /// module: its batched twin (spec-slot-target), which proposes in
    /// batched rounds.
    static constexpr ::llvm::StringLiteral kSlotDraftAttrName =
        "spec.slot_draft";
    /// Discardable unit attribute of a spec.decoder whose draft has another
    /// tokenizer than its target (spec-pair-draft's cross-tokenizer): the
    /// runtime translates its proposals into the target's tokens between
    /// batched rounds, and its decode loop is the target's alone.
    static constexpr ::llvm::StringLiteral kCrossTokenizerAttrName =
        "spec.cross_tokenizer";
    /// Discardable attribute of a batched round's entry points: the shape of
    /// the cache of slots the caller passes (2 x layers x slots x kv_heads x
    /// capacity x head_dim). It survives the lowering to LLVM, where the
    /// artifact writer reads it for the manifest.
    static constexpr ::llvm::StringLiteral kSlotCacheShapeAttrName =
        "spec.slot_cache_shape";
    /// Argument and result attribute of a model function: what the value is
    /// (#spec.io), the contract between the importer and the passes.
    static constexpr ::llvm::StringLiteral kIOAttrName = "spec.io";

  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

def Spec_FunctionRole : I32EnumAttr<"FunctionRole",
    "the role of a model function in a speculative decoder", [
      I32EnumAttrCase<"Target", 0, "target">,
      I32EnumAttrCase<"Draft", 1, "draft">,
      I32EnumAttrCase<"MedusaHead", 2, "medusa_head">,
      I32EnumAttrCase<"MTPModule", 3, "mtp_module">
    ]> {
  let cppNamespace = "::specula::spec";
  let genSpecializedAttr = 0;
}

def Spec_IOKind : I32EnumAttr<"IOKind",
    "what a model function's argument or result is", [
      I32EnumAttrCase<"TokenIds", 0, "token_ids">,
      I32EnumAttrCase<"PositionIds", 1, "position_ids">,
      I32EnumAttrCase<"PastKey", 2, "past_key">,
      I32EnumAttrCase<"PastValue", 3, "past_value">,
      I32EnumAttrCase<"PresentKey", 4, "present_key">,
      I32EnumAttrCase<"PresentValue", 5, "present_value">,
      I32EnumAttrCase<"Logits", 6, "logits">,
      I32EnumAttrCase<"HiddenStates", 7, "hidden_states">,
      I32EnumAttrCase<"HeadLogits", 8, "head_logits">,
      I32EnumAttrCase<"KVCache", 9, "kv_cache">,
      I32EnumAttrCase<"PastLength", 10, "past_length">,
      I32EnumAttrCase<"PreviousHiddenStates", 11, "previous_hidden_states">,
      I32EnumAttrCase<"AttentionMask", 12, "attention_mask">,
      I32EnumAttrCase<"TreeMask", 13, "tree_mask">,
      I32EnumAttrCase<"FirstSlot", 14, "first_slot">,
      I32EnumAttrCase<"PastLengths", 15, "past_lengths">
    ]> {
  let cppNamespace = "::specula::spec";
  let genSpecializedAttr = 0;
}

def Spec_CachePart : I32EnumAttr<"CachePart",
    "the keys or the values of a KV cache", [
      I32EnumAttrCase<"Keys", 0, "keys">,
      I32EnumAttrCase<"Values", 1, "values">
    ]> {
  let cppNamespace = "::specula::spec";
}

#endif // SPECULA_DIALECT_SPEC_SPECBASE_TD
