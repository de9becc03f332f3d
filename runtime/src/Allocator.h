//===- Allocator.h - where the buffers of compiled code come from -*- C++ -*-===//

#ifndef SPECRT_ALLOCATOR_H
#define SPECRT_ALLOCATOR_H

#include <cstdint>

namespace specrt {

/// A source of memory blocks for the buffers compiled code allocates
/// (_mlir_memref_to_llvm_alloc). Blocks are cached and reused per source.
struct BlockSource {
  const char *name;
  /// `size` bytes aligned to `alignment` (a power of two, at least 64), or
  /// null.
  void *(*allocate)(uint64_t alignment, uint64_t size);
  void (*release)(void *base);
};

/// The C library's aligned_alloc and free: the default.
const BlockSource &hostBlockSource();

/// New blocks come from `source` from now on (freed blocks always go back to
/// the source they came from).
void useBlockSource(const BlockSource &source);

/// Returns the cached free blocks of `source` to it.
void releaseCachedBlocks(const BlockSource &source);

/// While deferring, freed blocks are not reused until
/// reuseDeferredBlocks(): kernels still queued on a stream may use a block
/// the host code has freed, so the CUDA device reuses blocks only after the
/// stream's next synchronization.
void deferFreedBlocks(bool defer);
void reuseDeferredBlocks();

} // namespace specrt

#endif // SPECRT_ALLOCATOR_H
