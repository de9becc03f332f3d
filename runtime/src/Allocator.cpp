//===- Allocator.cpp - the buffers compiled code allocates ----------------===//
//
// Artifacts are lowered with MLIR's generic allocation functions
// (_mlir_memref_to_llvm_alloc / _aligned_alloc / _free), which the runtime
// provides here. A forward allocates the same few hundred activation buffers
// every time; with malloc, the large ones are fresh mmaps whose pages the
// kernel faults in and zeroes on each forward. Here freed blocks are kept in
// per-size-class free lists and handed out again.
//
// A forward of the example target allocates and frees about 100 buffers:
// finding a free list is an index into an array (no search), so the pool
// costs a lock and a few loads per call.
//
// Where blocks come from is the device's choice (Allocator.h): the C library,
// or CUDA managed memory, which both the host code and the kernels read.
// Each block records its source, so a block is always returned to it.
//
//===----------------------------------------------------------------------===//

#include "Allocator.h"

#include "specrt/specrt.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace {
/// Every block starts with a header that records its size class and its
/// index, the header's own size (which is at least the alignment) and its
/// source.
constexpr uint64_t kMinHeader = 64;
/// Freed blocks beyond this many bytes go back to their source.
constexpr uint64_t kMaxCachedBytes = uint64_t(1) << 30;

/// Size classes: multiples of 64 bytes up to 4 KiB (64 classes), then four
/// per power of two (at most 25% unused), so that buffers whose sizes grow
/// with the sequence length are reused.
constexpr unsigned kSmallClasses = 64;
constexpr unsigned kNumClasses = kSmallClasses + 4 * (64 - 12);

struct SizeClass {
  uint64_t bytes;
  unsigned index;
};

SizeClass sizeClass(uint64_t size) {
  if (size <= 4096) {
    uint64_t bytes = (size + 63) & ~uint64_t(63);
    return {bytes, static_cast<unsigned>(bytes / 64 - 1)};
  }
  unsigned log = 63 - __builtin_clzll(size); // 2^log <= size, log >= 12
  uint64_t step = (uint64_t(1) << log) / 4;
  uint64_t quarters = (size + step - 1) / step; // 4..8
  if (quarters == 8) {
    ++log;
    quarters = 4;
  }
  // 2^log * quarters / 4 bytes.
  return {(uint64_t(1) << (log - 2)) * quarters,
          kSmallClasses + 4 * (log - 12) + unsigned(quarters - 4)};
}

void *hostAllocate(uint64_t alignment, uint64_t size) {
  return std::aligned_alloc(alignment, size);
}
void hostRelease(void *base) { std::free(base); }

/// Free blocks of one source and header size, by size class.
struct FreeLists {
  const specrt::BlockSource *source;
  uint64_t header;
  std::array<std::vector<void *>, kNumClasses> byClass;
};

/// What the header before a block holds.
struct BlockHeader {
  const specrt::BlockSource *source;
  uint64_t index;
  uint64_t header;
  uint64_t bytes;
};
static_assert(sizeof(BlockHeader) <= kMinHeader);

BlockHeader &headerOf(void *block) {
  return static_cast<BlockHeader *>(block)[-1];
}

struct Pool {
  std::mutex mutex;
  /// One per (source, header) seen: few (the host, a device; headers
  /// larger than 64 bytes only for over-aligned buffers).
  std::vector<std::unique_ptr<FreeLists>> lists;
  FreeLists *last = nullptr;
  uint64_t cachedBytes = 0;
  const specrt::BlockSource *current = &specrt::hostBlockSource();
  bool deferring = false;
  std::vector<void *> deferred;

  FreeLists &listsFor(const specrt::BlockSource *source, uint64_t header) {
    if (last && last->source == source && last->header == header)
      return *last;
    for (auto &l : lists)
      if (l->source == source && l->header == header)
        return *(last = l.get());
    lists.push_back(std::make_unique<FreeLists>());
    last = lists.back().get();
    last->source = source;
    last->header = header;
    return *last;
  }
};

/// Puts a freed block in its free list, or back to its source when the
/// cache is full. Called with the pool locked; returns the block to release
/// outside the lock, if any.
void *cacheBlock(Pool &p, void *block) {
  const BlockHeader &h = headerOf(block);
  uint64_t bytes = h.bytes + h.header;
  if (p.cachedBytes + bytes > kMaxCachedBytes)
    return block;
  p.listsFor(h.source, h.header).byClass[h.index].push_back(block);
  p.cachedBytes += bytes;
  return nullptr;
}

void releaseBlock(void *block) {
  const BlockHeader &h = headerOf(block);
  h.source->release(static_cast<char *>(block) - h.header);
}

Pool &pool() {
  // Never destroyed: compiled code may free during static destruction.
  static Pool *instance = new Pool;
  return *instance;
}

void *allocate(uint64_t alignment, uint64_t size) {
  if (size > (uint64_t(1) << 62))
    return nullptr; // beyond the largest class
  uint64_t header = alignment > kMinHeader ? alignment : kMinHeader;
  SizeClass cls = sizeClass(size ? size : 1);
  Pool &p = pool();
  const specrt::BlockSource *source;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    source = p.current;
    std::vector<void *> &free = p.listsFor(source, header).byClass[cls.index];
    if (!free.empty()) {
      void *block = free.back();
      free.pop_back();
      p.cachedBytes -= cls.bytes + header;
      return block;
    }
  }
  // Headers are powers of two >= 64, so the block stays aligned.
  char *base =
      static_cast<char *>(source->allocate(header, header + cls.bytes));
  if (!base)
    return nullptr;
  char *block = base + header;
  headerOf(block) = {source, cls.index, header, cls.bytes};
  return block;
}
} // namespace

const specrt::BlockSource &specrt::hostBlockSource() {
  static const BlockSource host{"host", hostAllocate, hostRelease};
  return host;
}

void specrt::useBlockSource(const BlockSource &source) {
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.current = &source;
}

void specrt::releaseCachedBlocks(const BlockSource &source) {
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (auto &l : p.lists) {
    if (l->source != &source)
      continue;
    for (std::vector<void *> &free : l->byClass) {
      for (void *block : free) {
        p.cachedBytes -= headerOf(block).bytes + l->header;
        releaseBlock(block);
      }
      free.clear();
    }
  }
}

void specrt::deferFreedBlocks(bool defer) {
  Pool &p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.deferring = defer;
  }
  if (!defer)
    reuseDeferredBlocks();
}

void specrt::reuseDeferredBlocks() {
  Pool &p = pool();
  std::vector<void *> released;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    for (void *block : p.deferred)
      if (void *overflow = cacheBlock(p, block))
        released.push_back(overflow);
    p.deferred.clear();
  }
  for (void *block : released)
    releaseBlock(block);
}

extern "C" {

SPECRT_API void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  return allocate(kMinHeader, size);
}

SPECRT_API void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                    uint64_t size) {
  // Alignments are powers of two; a header of that size keeps the block
  // aligned.
  return allocate(alignment, size);
}

SPECRT_API void _mlir_memref_to_llvm_free(void *block) {
  if (!block)
    return;
  Pool &p = pool();
  void *overflow;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.deferring) {
      p.deferred.push_back(block);
      return;
    }
    overflow = cacheBlock(p, block);
  }
  if (overflow)
    releaseBlock(overflow);
}

} // extern "C"
