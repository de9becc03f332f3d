//===- MemRefCopy.cpp - functions compiled code calls ---------------------===//
//
// MLIR lowers a `memref.copy` between buffers that are not both contiguous to
// a call of `memrefCopy` (upstream's C runner utilities provide it to the
// JIT). The runtime provides it to artifacts so that they need nothing from
// MLIR at run time, the clock that decode loops time their phases with, the
// hook each committed token goes through (streaming), and the report of
// failed run-time checks (spec-lower-checks).
//
//===----------------------------------------------------------------------===//

#include "specrt/specrt.h"

#include "Device.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// An unranked memref as MLIR passes it: the rank, and a pointer to
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

struct Strided {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

Strided view(const UnrankedMemRef &m) {
  auto *fields = static_cast<char **>(m.descriptor);
  auto *ints = reinterpret_cast<const int64_t *>(fields + 2);
  return {fields[1], ints[0], ints + 1, ints + 1 + m.rank};
}
} // namespace

extern "C" SPECRT_API void memrefCopy(int64_t elementSize,
                                      UnrankedMemRef *source,
                                      UnrankedMemRef *target) {
  int64_t rank = source->rank;
  Strided src = view(*source), dst = view(*target);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    count *= src.sizes[d];
  if (count == 0)
    return;
  // Walk the index space in row-major order, element by element; the
  // innermost dimension is copied as one block when both sides are dense
  // there.
  int64_t inner = rank ? src.sizes[rank - 1] : 1;
  bool denseInner = rank == 0 || (src.strides[rank - 1] == 1 &&
                                  dst.strides[rank - 1] == 1);
  // The index of the outer dimensions: on the stack for the ranks models
  // use (a call per copy; a heap allocation would cost more than most
  // copies).
  int64_t outer = rank > 0 ? rank - 1 : 0;
  int64_t stackIndex[8] = {};
  std::vector<int64_t> heapIndex(outer > 8 ? outer : 0, 0);
  int64_t *index = outer > 8 ? heapIndex.data() : stackIndex;
  for (int64_t row = 0; row < count / inner; ++row) {
    int64_t srcOffset = src.offset, dstOffset = dst.offset;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      srcOffset += index[d] * src.strides[d];
      dstOffset += index[d] * dst.strides[d];
    }
    if (denseInner) {
      std::memcpy(dst.aligned + dstOffset * elementSize,
                  src.aligned + srcOffset * elementSize, inner * elementSize);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(
            dst.aligned + (dstOffset + i * dst.strides[rank - 1]) * elementSize,
            src.aligned + (srcOffset + i * src.strides[rank - 1]) * elementSize,
            elementSize);
    }
    for (int64_t d = outer - 1; d >= 0; --d) {
      if (++index[d] < src.sizes[d])
        break;
      index[d] = 0;
    }
  }
}

extern "C" SPECRT_API int64_t specrt_clock_ns(void) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {
thread_local specrt::TokenStream *tokenStream = nullptr;
} // namespace

void specrt::setTokenStream(TokenStream *stream) { tokenStream = stream; }

/// Returns whether the decode loop should stop after this round: the
/// caller cancelled the run (specrt_generate_options.should_stop).
extern "C" SPECRT_API bool specrt_on_token(int64_t token) {
  specrt::TokenStream *stream = tokenStream;
  if (!stream || stream->cancelled)
    return stream != nullptr;
  if (!stream->stopped && stream->forwarded < stream->maxNew) {
    ++stream->forwarded;
    stream->stopped = token == stream->eos ||
                      std::find(stream->stops->begin(), stream->stops->end(),
                                token) != stream->stops->end();
    if (stream->callback)
      stream->callback(token, stream->user);
  }
  stream->cancelled = stream->shouldStop && stream->shouldStop(stream->user);
  return stream->cancelled;
}

namespace {
/// The first failed run-time check of the current run on this thread.
thread_local const char *checkFailure = nullptr;
} // namespace

extern "C" SPECRT_API void specrt_check(bool ok, const char *message) {
  if (!ok && !checkFailure)
    checkFailure = message;
}

const char *specrt::takeCheckFailure() {
  const char *message = checkFailure;
  checkFailure = nullptr;
  return message;
}
