//===- SpecTypes.td - spec dialect types -------------------*- tablegen -*-===//

#ifndef SPECULA_DIALECT_SPEC_SPECTYPES_TD
#define SPECULA_DIALECT_SPEC_SPECTYPES_TD

include "dialects/spec/SpecBase.td"

def Spec_KVCacheType : TypeDef<Spec_Dialect, "KVCache"> {
  let mnemonic = "kv_cache";
  let summary = "a preallocated key/value cache with a length";
  let description = [{
    The keys and values of one model, all layers, in two buffers of shape
    `layers x kv_heads x capacity x head_dim`. A cache value also carries its
    length (the positions `[0, length)` that attention reads) and its committed
    length (the prefix that verification has accepted). Entries past the
    committed length are speculative: `spec.cache.commit` keeps a prefix of
    them and `spec.cache.rollback` drops them, both in O(1), without moving
    data.

    Caches have value semantics in the IR; bufferization makes every update an
    in-place write into the preallocated buffers.

    Example: `!spec.kv_cache<2x4x512x32xf32>` (2 layers, 4 KV heads, 512
    positions, head dimension 32).

    A cache of several sequence slots, which batched forwards read and write
    (`spec-kv-cache-inplace` with `slots`, `spec.cache.write_slots`,
    `spec.cache.read_slots`), has five dimensions, `layers x slots x kv_heads
    x capacity x head_dim`: every slot its own `capacity` positions.

    Example: `!spec.kv_cache<2x8x4x512x32xf32>` (8 slots).
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getNumLayers() const { return getShape()[0]; }
    /// Whether the cache holds several sequences (five dimensions).
    bool hasSlots() const { return getShape().size() == 5; }
    int64_t getNumSlots() const { return hasSlots() ? getShape()[1] : 1; }
    int64_t getNumKVHeads() const { return getShape().end()[-3]; }
    int64_t getCapacity() const { return getShape().end()[-2]; }
    int64_t getHeadDim() const { return getShape().back(); }
  }];
}

#endif // SPECULA_DIALECT_SPEC_SPECTYPES_TD
