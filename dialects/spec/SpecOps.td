//===- SpecOps.td - spec dialect operations ----------------*- tablegen -*-===//

#ifndef SPECULA_DIALECT_SPEC_SPECOPS_TD
#define SPECULA_DIALECT_SPEC_SPECOPS_TD

include "dialects/spec/SpecAttrs.td"
include "dialects/spec/SpecTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Spec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Spec_Dialect, mnemonic, traits>;

def Spec_TokenIds : TensorOf<[AnySignlessInteger]>;
def Spec_Logits : RankedTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// Decoder composition
//===----------------------------------------------------------------------===//

def Spec_DecoderOp : Spec_Op<"decoder", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a speculative decoder: target + proposer + verification rule";
  let description = [{
    Composes a target model function with a proposer and a verification rule.
    The proposer is either `#spec.mtp<[...]>` (heads that the
    `spec-fuse-mtp-heads` pass fuses into the target's forward) or
    `#spec.draft<@draft, gamma = N>` (an external draft model that
    `spec-pair-draft` places beside the target).

    The verifier checks that every symbol names a `func.func` of the right
    role (`spec.role`), that the target and the draft take token ids as their
    first argument and return logits as their first result, that heads take a
    hidden state, that heads are listed in depth order 1..K and are of one
    kind, and that the vocabulary sizes and tokenizer fingerprints of all
    configured models (`spec.config`) agree.

    `acceptance_rate`, when present, is the measured or expected probability
    that one proposal is accepted (in `[0, 1]`); `spec-choose-gamma` reads it.

    `tree`, when present, makes each round verify a tree of candidates
    (`#spec.tree`) in one forward instead of one chain: Medusa heads (no
    deeper than there are heads) or a draft (gamma deep: one draft forward
    per depth); not MTP modules. Greedy or sampling: every row's token
    is the rule's pick from the target's logits there (sampled rows draw
    independently), and the round walks down the candidates that match,
    so the committed tokens are the target's own picks.

    Example:

    ```mlir
    spec.decoder @decoder target(@target)
        proposer(#spec.draft<@draft, gamma = 4>) verify(#spec.greedy)
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       FlatSymbolRefAttr:$target,
                       Spec_ProposerAttr:$proposer,
                       Spec_VerificationRuleAttr:$rule,
                       OptionalAttr<F64Attr>:$acceptance_rate,
                       OptionalAttr<Spec_TreeAttr>:$tree);
  let assemblyFormat = [{
    $sym_name `target` `(` $target `)` `proposer` `(` $proposer `)`
    `verify` `(` $rule `)` (`tree` `(` qualified($tree)^ `)`)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of tokens proposed per step: gamma for a draft, the number of
    /// heads for MTP.
    int64_t getNumProposals();
  }];
}

//===----------------------------------------------------------------------===//
// Step operations
//===----------------------------------------------------------------------===//

def Spec_ProposeOp : Spec_Op<"propose", [Pure]> {
  let summary = "select proposal tokens from proposer logits";
  let description = [{
    Selects one token per row of `logits` (the last dimension is the
    vocabulary) and returns the proposal distribution `q` that rejection
    sampling needs: the softmax of the logits after the rule's temperature,
    top-k and top-p. Under `#spec.greedy` the token is the argmax and `q` is
    one-hot. Sampling rules draw with a counter-based generator keyed by `key`,
    so a seeded run is reproducible; `key` is required for them.

    Example:

    ```mlir
    %tokens, %q = spec.propose %head_logits rule(#spec.greedy)
        : tensor<3x259xf32> -> tensor<3xi64>, tensor<3x259xf32>
    ```
  }];
  let arguments = (ins Spec_Logits:$logits, Optional<I64>:$key,
                       Spec_VerificationRuleAttr:$rule);
  let results = (outs Spec_TokenIds:$tokens, Spec_Logits:$probs);
  let assemblyFormat = [{
    $logits (`key` `(` $key^ `)`)? `rule` `(` $rule `)` attr-dict
    `:` type($logits) `->` type($tokens) `,` type($probs)
  }];
  let hasVerifier = 1;
}

def Spec_VerifyOp : Spec_Op<"verify", [
    DeclareOpInterfaceMethods<CallOpInterface>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run the target forward over the proposals";
  let description = [{
    Calls the target (a function with role `target`) on the last accepted
    token followed by the proposals, in one forward pass, and returns its
    results: one row of target logits per input position (and, for a target
    with fused MTP heads, the heads' logits for the next step), plus whatever
    else the target returns, such as updated caches. Operand and result types
    must match the target's signature.

    Example:

    ```mlir
    %logits, %cache1 = spec.verify @target(%candidates, %cache0)
        : (tensor<5xi64>, !spec.kv_cache<2x4x512x32xf32>)
        -> (tensor<5x259xf32>, !spec.kv_cache<2x4x512x32xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$inputs,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)
  }];
}

def Spec_AcceptOp : Spec_Op<"accept", [
    AttrSizedOperandSegments,
    Pure,
    TypesMatchWith<"the next token has the proposals' element type",
                   "proposals", "next",
                   "::llvm::cast<::mlir::ShapedType>($_self).getElementType()">
  ]> {
  let summary = "accept a prefix of the proposals and pick the next token";
  let description = [{
    Compares `gamma` proposals with the `gamma + 1` rows of target logits
    returned by `spec.verify` and returns how many proposals are accepted
    (`count`, in `[0, gamma]`) and the token that follows them (`next`): the
    target's correction at the first rejected position, or the bonus token
    drawn from the last row when every proposal is accepted.

    `#spec.greedy` accepts while a proposal equals the target's argmax.
    `#spec.rejection<...>` needs the proposal distribution (`probs`, from
    `spec.propose`) and a generator `key`, and is lossless: the tokens it
    produces are distributed exactly as the target's samples.

    Example:

    ```mlir
    %n, %next = spec.accept %proposals, %logits rule(#spec.greedy)
        : tensor<4xi64>, tensor<5x259xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnySignlessInteger]>:$proposals,
                       Spec_Logits:$target_logits,
                       Optional<Spec_Logits>:$probs,
                       Optional<I64>:$key,
                       Spec_VerificationRuleAttr:$rule);
  let results = (outs Index:$count, AnySignlessInteger:$next);
  let assemblyFormat = [{
    $proposals `,` $target_logits
    (`probs` `(` $probs^ `:` type($probs) `)`)?
    (`key` `(` $key^ `)`)?
    `rule` `(` $rule `)` attr-dict
    `:` type($proposals) `,` type($target_logits)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// KV caches
//===----------------------------------------------------------------------===//

def Spec_CacheAllocOp : Spec_Op<"cache.alloc", [Pure]> {
  let summary = "an empty KV cache of fixed capacity";
  let description = [{
    Creates a cache with length and committed length 0. Its buffers are
    allocated once, at the capacity in the type.

    Example: `%c = spec.cache.alloc : !spec.kv_cache<2x4x512x32xf32>`
  }];
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def Spec_CacheLengthOp : Spec_Op<"cache.length", [Pure]> {
  let summary = "the number of positions a cache holds";
  let description = [{
    Returns the length of the cache: committed plus speculative positions,
    that is, the positions attention reads.

    Example: `%n = spec.cache.length %c : !spec.kv_cache<2x4x512x32xf32>`
  }];
  let arguments = (ins Spec_KVCacheType:$cache);
  let results = (outs Index:$length);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache))";
}

def Spec_CacheAppendOp : Spec_Op<"cache.append", [
    Pure, AllTypesMatch<["cache", "result"]>,
    AllTypesMatch<["keys", "values"]>]> {
  let summary = "write keys and values for new positions";
  let description = [{
    Writes `n` new positions at the end of the cache (at its current length)
    and returns the cache with its length increased by `n`. The new positions
    are speculative until `spec.cache.commit`. `keys` and `values` have shape
    `layers x kv_heads x n x head_dim` with the cache's element type; writing
    past the capacity is a runtime error.

    Example:

    ```mlir
    %c1 = spec.cache.append %c0, %k, %v
        : !spec.kv_cache<2x4x512x32xf32>, tensor<2x4x?x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache,
                       RankedTensorOf<[AnyFloat]>:$keys,
                       RankedTensorOf<[AnyFloat]>:$values);
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = [{
    $cache `,` $keys `,` $values attr-dict `:` qualified(type($cache)) `,` type($keys)
  }];
  let hasVerifier = 1;
}

def Spec_CacheViewOp : Spec_Op<"cache.view", [
    Pure, AllTypesMatch<["keys", "values"]>]> {
  let summary = "the keys and values of the positions a cache holds";
  let description = [{
    Returns the keys and values of positions `[0, length)`, shaped
    `layers x kv_heads x length x head_dim`. The length dimension may be
    static only when the length is known.

    Example:

    ```mlir
    %k, %v = spec.cache.view %c
        : !spec.kv_cache<2x4x512x32xf32> -> tensor<2x4x?x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache);
  let results = (outs RankedTensorOf<[AnyFloat]>:$keys,
                      RankedTensorOf<[AnyFloat]>:$values);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache)) `->` type($keys)";
  let hasVerifier = 1;
}

def Spec_CacheCommitOp : Spec_Op<"cache.commit", [
    Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "keep the first `count` speculative positions, drop the rest";
  let description = [{
    After verification accepted `count` of the positions appended since the
    last commit, keeps those, drops the others and makes the result's
    committed length equal to its length. O(1): only the length changes.
    `count` larger than the number of speculative positions is a runtime
    error.

    Example:

    ```mlir
    %c2 = spec.cache.commit %c1, %n : !spec.kv_cache<2x4x512x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache, Index:$count);
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = "$cache `,` $count attr-dict `:` qualified(type($cache))";
  let hasVerifier = 1;
}

def Spec_CacheRollbackOp : Spec_Op<"cache.rollback", [
    Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "drop every speculative position";
  let description = [{
    Returns the cache with its length reset to its committed length. O(1).

    Example: `%c1 = spec.cache.rollback %c0 : !spec.kv_cache<2x4x512x32xf32>`
  }];
  let arguments = (ins Spec_KVCacheType:$cache);
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache))";
}

def Spec_CacheMoveOp : Spec_Op<"cache.move", [
    Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "move cached positions of every layer into place";
  let description = [{
    For i = 0, 1, ... in order, copies the keys and values of every layer at
    position `from[i]` to position `to + i`. After a forward that verified a
    tree of candidates, the accepted path's rows (wherever the tree put
    them) move next to the cache's prefix, as if the path had been the only
    candidate; the rest is dropped by the caller's length, like any rollback.
    Each `from[i]` must be at least `to + i`, so that no row is overwritten
    before it moves.

    Example:

    ```mlir
    %c1 = spec.cache.move %c0 from %rows to %next
        : !spec.kv_cache<2x4x512x32xf32>, tensor<?xindex>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache, 1DTensorOf<[Index]>:$from,
                       Index:$to);
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = [{
    $cache `from` $from `to` $to attr-dict `:` qualified(type($cache)) `,`
    type($from)
  }];
}

//===----------------------------------------------------------------------===//
// In-place cache access inside model functions
//===----------------------------------------------------------------------===//

def Spec_CacheWriteOp : Spec_Op<"cache.write", [
    Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "write one layer's new keys or values at a position";
  let description = [{
    The form `spec-kv-cache-inplace` gives a model function: instead of
    returning `present = Concat(past, new)`, the function writes the new
    positions of layer `layer` into the preallocated cache at `position` (the
    number of positions already cached, which the caller passes) and returns
    the cache. `new` is `batch x kv_heads x n x head_dim` for batch 1. The
    cache's length is carried explicitly by the caller, so keeping a prefix
    after verification, or dropping rejected positions, only changes that
    length. Writing past the capacity is a runtime error.

    Example:

    ```mlir
    %c1 = spec.cache.write %c0 keys layer 0 at %pos, %k
        : !spec.kv_cache<4x2x512x32xf32>, tensor<1x2x?x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache, Spec_CachePart:$part,
                       I64Attr:$layer, Index:$position,
                       RankedTensorOf<[AnyFloat]>:$new_entries);
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = [{
    $cache $part `layer` $layer `at` $position `,` $new_entries attr-dict
    `:` qualified(type($cache)) `,` type($new_entries)
  }];
  let hasVerifier = 1;
}

def Spec_CacheReadOp : Spec_Op<"cache.read", [Pure]> {
  let summary = "one layer's keys or values for the first `length` positions";
  let description = [{
    Returns `1 x kv_heads x length x head_dim`: what attention reads after
    `spec.cache.write`, in place of the concatenation of past and new
    entries.

    Example:

    ```mlir
    %keys = spec.cache.read %c1 keys layer 0 length %total
        : !spec.kv_cache<4x2x512x32xf32> -> tensor<1x2x?x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache, Spec_CachePart:$part,
                       I64Attr:$layer, Index:$length);
  let results = (outs RankedTensorOf<[AnyFloat]>:$entries);
  let assemblyFormat = [{
    $cache $part `layer` $layer `length` $length attr-dict
    `:` qualified(type($cache)) `->` type($entries)
  }];
  let hasVerifier = 1;
}

def Spec_CacheWriteSlotsOp : Spec_Op<"cache.write_slots", [
    Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "write one layer's new keys or values of a batch of slots";
  let description = [{
    The batched form of `spec.cache.write`, on a cache of slots: row `b` of
    `new` (`batch x kv_heads x n x head_dim`) goes to slot `first_slot + b`
    at positions `[past_lengths[b], past_lengths[b] + n)`, so every sequence
    of the batch appends at its own length. Rows a sequence padded its
    forward with land past its length, where the next write overwrites
    them. Writing past a slot's capacity, or to a slot the cache does not
    have, is a runtime error.

    Example:

    ```mlir
    %c1 = spec.cache.write_slots %c0 keys layer 0 slots %first
        lengths %lengths, %k
        : !spec.kv_cache<4x8x2x512x32xf32>, tensor<?xi64>, tensor<?x2x?x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache, Spec_CachePart:$part,
                       I64Attr:$layer, Index:$first_slot,
                       1DTensorOf<[I64]>:$past_lengths,
                       RankedTensorOf<[AnyFloat]>:$new_entries);
  let results = (outs Spec_KVCacheType:$result);
  let assemblyFormat = [{
    $cache $part `layer` $layer `slots` $first_slot `lengths` $past_lengths
    `,` $new_entries attr-dict `:` qualified(type($cache)) `,`
    type($past_lengths) `,` type($new_entries)
  }];
  let hasVerifier = 1;
}

def Spec_CacheReadSlotsOp : Spec_Op<"cache.read_slots", [Pure]> {
  let summary = "one layer's keys or values of a batch of slots";
  let description = [{
    Returns `count x kv_heads x length x head_dim`: the first `length`
    positions of slots `[first_slot, first_slot + count)`, a view of the
    cache (no copy). Each sequence's attention must mask the positions past
    its own length (`spec-kv-cache-inplace` rewrites the causal mask so).

    Example:

    ```mlir
    %keys = spec.cache.read_slots %c1 keys layer 0 slots %first count %b
        length %total : !spec.kv_cache<4x8x2x512x32xf32> -> tensor<?x2x?x32xf32>
    ```
  }];
  let arguments = (ins Spec_KVCacheType:$cache, Spec_CachePart:$part,
                       I64Attr:$layer, Index:$first_slot, Index:$count,
                       Index:$length);
  let results = (outs RankedTensorOf<[AnyFloat]>:$entries);
  let assemblyFormat = [{
    $cache $part `layer` $layer `slots` $first_slot `count` $count
    `length` $length attr-dict `:` qualified(type($cache)) `->`
    type($entries)
  }];
  let hasVerifier = 1;
}

#endif // SPECULA_DIALECT_SPEC_SPECOPS_TD
