//===- Allocator.cpp - the buffers compiled code allocates ----------------===//
//
// Artifacts are lowered with MLIR's generic allocation functions
// (_mlir_memref_to_llvm_alloc / _aligned_alloc / _free), which the runtime
// provides here. A forward allocates the same few hundred activation buffers
// every time; with malloc, the large ones are fresh mmaps whose pages the
// kernel faults in and zeroes on each forward. Here freed blocks are kept in
// per-size-class free lists and handed out again.
//
// Where blocks come from is the device's choice (Allocator.h): the C library,
// or CUDA managed memory, which both the host code and the kernels read.
// Each block records its source, so a block is always returned to it.
//
//===----------------------------------------------------------------------===//

#include "Allocator.h"

#include "specrt/specrt.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <map>
#include <vector>

namespace {
/// Every block starts with a header that records its size class, the
/// header's own size (which is at least the alignment) and its source.
constexpr uint64_t kMinHeader = 64;
/// Freed blocks beyond this many bytes go back to their source.
constexpr uint64_t kMaxCachedBytes = uint64_t(1) << 30;

void *hostAllocate(uint64_t alignment, uint64_t size) {
  return std::aligned_alloc(alignment, size);
}
void hostRelease(void *base) { std::free(base); }

struct Pool {
  std::mutex mutex;
  /// Free blocks by source, size class and header.
  std::map<std::pair<const specrt::BlockSource *, uint64_t>,
           std::vector<void *>>
      free;
  uint64_t cachedBytes = 0;
  const specrt::BlockSource *current = &specrt::hostBlockSource();
  bool deferring = false;
  std::vector<void *> deferred;
};

/// Puts a freed block in its free list, or back to its source when the
/// cache is full. Called with the pool locked; returns the block to release
/// outside the lock, if any.
void *cacheBlock(Pool &p, void *block) {
  uint64_t cls = static_cast<uint64_t *>(block)[-1];
  uint64_t header = static_cast<uint64_t *>(block)[-2];
  auto *source = reinterpret_cast<const specrt::BlockSource **>(block)[-3];
  uint64_t key = cls + header;
  if (p.cachedBytes + key > kMaxCachedBytes)
    return block;
  p.free[{source, key}].push_back(block);
  p.cachedBytes += key;
  return nullptr;
}

void releaseBlock(void *block) {
  uint64_t header = static_cast<uint64_t *>(block)[-2];
  auto *source = reinterpret_cast<const specrt::BlockSource **>(block)[-3];
  source->release(static_cast<char *>(block) - header);
}

Pool &pool() {
  // Never destroyed: compiled code may free during static destruction.
  static Pool *instance = new Pool;
  return *instance;
}

/// Rounds a size up to its class: multiples of 64 bytes up to 4 KiB, then
/// quarters of powers of two (at most 25% unused), so that buffers whose
/// sizes grow with the sequence length are reused.
uint64_t sizeClass(uint64_t size) {
  if (size <= 4096)
    return (size + 63) & ~uint64_t(63);
  uint64_t power = uint64_t(1) << (63 - __builtin_clzll(size));
  uint64_t step = power / 4;
  return (size + step - 1) / step * step;
}

void *allocate(uint64_t alignment, uint64_t size) {
  uint64_t header = alignment > kMinHeader ? alignment : kMinHeader;
  uint64_t cls = sizeClass(size ? size : 1);
  uint64_t key = cls + header; // headers are powers of two >= 64
  Pool &p = pool();
  const specrt::BlockSource *source;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    source = p.current;
    auto it = p.free.find({source, key});
    if (it != p.free.end() && !it->second.empty()) {
      void *block = it->second.back();
      it->second.pop_back();
      p.cachedBytes -= key;
      return block;
    }
  }
  char *base = static_cast<char *>(source->allocate(header, key));
  if (!base)
    return nullptr;
  char *block = base + header;
  reinterpret_cast<uint64_t *>(block)[-1] = cls;
  reinterpret_cast<uint64_t *>(block)[-2] = header;
  reinterpret_cast<const specrt::BlockSource **>(block)[-3] = source;
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
  for (auto it = p.free.begin(); it != p.free.end();) {
    if (it->first.first != &source) {
      ++it;
      continue;
    }
    for (void *block : it->second) {
      p.cachedBytes -= it->first.second;
      releaseBlock(block);
    }
    it = p.free.erase(it);
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
