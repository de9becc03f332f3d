//===- Batch.cpp - specrt_batch_*: batched rounds over slots --------------===//
//
// The batch owns one cache of sequence slots in host memory and each slot's
// length and last token; the artifact's prefill and round entries update
// the cache in place. A round runs once per run of consecutive active
// slots, so a free slot between sequences costs nothing.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace specrt;

struct specrt_batch {
  specrt_model *model = nullptr;
  float *cache = nullptr;
  /// Per slot: whether a sequence holds it, its cached positions and the
  /// token it generated last (not yet cached).
  std::vector<char> active;
  std::vector<int64_t> length, last;
  /// Positions each slot holds.
  int64_t capacity = 0;

  ~specrt_batch() { std::free(cache); }
};

specrt_status specrt_batch_open(specrt_model *model, specrt_batch **batch) {
  if (!model || !batch)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT, "model and batch must be set");
  const Manifest &m = model->manifest;
  if (m.maxBatch == 0)
    return fail(SPECRT_ERROR_UNSUPPORTED,
                "the artifact has no batched rounds; compile it with specc "
                "--max-batch");
  size_t elements = 1;
  for (int64_t size : m.batchCacheShape)
    elements *= static_cast<size_t>(size);
  size_t bytes = (elements * sizeof(float) + 63) / 64 * 64;
  auto opened = std::make_unique<specrt_batch>();
  opened->cache = static_cast<float *>(std::aligned_alloc(64, bytes));
  if (!opened->cache)
    return fail(SPECRT_ERROR_OUT_OF_MEMORY,
                "cannot allocate the batch's cache of " +
                    std::to_string(bytes) + " bytes");
  std::memset(opened->cache, 0, bytes);
  opened->model = model;
  opened->active.assign(m.maxBatch, 0);
  opened->length.assign(m.maxBatch, 0);
  opened->last.assign(m.maxBatch, 0);
  opened->capacity = m.batchCacheShape[4];
  *batch = opened.release();
  return SPECRT_OK;
}

void specrt_batch_close(specrt_batch *batch) { delete batch; }

size_t specrt_batch_slots(const specrt_batch *batch) {
  return batch->active.size();
}

size_t specrt_batch_active(const specrt_batch *batch) {
  size_t count = 0;
  for (char active : batch->active)
    count += active != 0;
  return count;
}

specrt_status specrt_batch_add(specrt_batch *batch, const int64_t *prompt,
                               size_t length, int64_t *slot,
                               int64_t *first_token) {
  if (!batch || !prompt || !slot || !first_token)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "batch, prompt, slot and first_token must be set");
  if (length == 0 || static_cast<int64_t>(length) >= batch->capacity)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "the prompt has " + std::to_string(length) +
                    " tokens; a slot holds 1 to " +
                    std::to_string(batch->capacity - 1));
  int64_t vocab = batch->model->manifest.vocabSize;
  for (size_t i = 0; i < length; ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                  "prompt token " + std::to_string(i) + " is " +
                      std::to_string(prompt[i]) + ", outside the vocabulary");
  auto free = std::find(batch->active.begin(), batch->active.end(), 0);
  if (free == batch->active.end())
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "all " + std::to_string(batch->active.size()) +
                    " slots hold a sequence");
  int64_t index = free - batch->active.begin();
  std::string error;
  int64_t token = 0;
  if (specrt_status status = batch->model->device->prefill(
          batch->cache, index, prompt, length, token, error))
    return fail(status, error);
  if (token < 0 || token >= vocab)
    return fail(SPECRT_ERROR_FORMAT,
                "the prefill returned token " + std::to_string(token));
  batch->active[index] = 1;
  batch->length[index] = static_cast<int64_t>(length);
  batch->last[index] = token;
  *slot = index;
  *first_token = token;
  return SPECRT_OK;
}

/// Whether the sequence in `slot` takes part in a round: active, with room
/// for its last token.
static bool steps(const specrt_batch *batch, size_t slot) {
  return batch->active[slot] && batch->length[slot] < batch->capacity;
}

specrt_status specrt_batch_step(specrt_batch *batch, int64_t *slots,
                                int64_t *tokens, size_t *count) {
  if (!batch || !slots || !tokens || !count)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "batch, slots, tokens and count must be set");
  *count = 0;
  size_t total = batch->active.size();
  std::vector<int64_t> next(total);
  for (size_t first = 0; first < total;) {
    if (!steps(batch, first)) {
      ++first;
      continue;
    }
    size_t end = first;
    while (end < total && steps(batch, end))
      ++end;
    std::string error;
    if (specrt_status status = batch->model->device->round(
            batch->cache, static_cast<int64_t>(first), end - first,
            &batch->length[first], &batch->last[first], next.data(), error))
      return fail(status, error);
    int64_t vocab = batch->model->manifest.vocabSize;
    for (size_t s = first; s < end; ++s) {
      int64_t token = next[s - first];
      if (token < 0 || token >= vocab)
        return fail(SPECRT_ERROR_FORMAT,
                    "the round returned token " + std::to_string(token));
      batch->length[s] += 1;
      batch->last[s] = token;
      slots[*count] = static_cast<int64_t>(s);
      tokens[*count] = token;
      ++*count;
    }
    first = end;
  }
  return SPECRT_OK;
}

specrt_status specrt_batch_remove(specrt_batch *batch, int64_t slot) {
  if (!batch || slot < 0 || slot >= static_cast<int64_t>(batch->active.size()) ||
      !batch->active[slot])
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "slot " + std::to_string(slot) + " holds no sequence");
  batch->active[slot] = 0;
  return SPECRT_OK;
}
