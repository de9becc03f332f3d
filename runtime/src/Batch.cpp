//===- Batch.cpp - specrt_batch_*: batched rounds over slots --------------===//
//
// The batch owns the caches of sequence slots in host memory (the target's
// and, with a draft, the draft's) and each slot's tokens; the artifact's
// entries update the caches in place. A round runs once per run of
// consecutive slots that take the same kind of step, so a free slot
// between sequences costs nothing. With a prefill chunk, prompts enter the
// cache a chunk per step after the step's rounds, so that a long prompt
// delays the others' tokens by one chunk's forward per step, not by its
// whole prefill.
//
//===----------------------------------------------------------------------===//

#include "Model.h"
#include "TokenTranslator.h"

#include "specrt/artifact_format.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace specrt;

extern "C" bool specrt_on_token(int64_t token);

namespace {
/// A cache of slots: zeroed floats, 64-byte aligned for the compiled code.
struct SlotCacheBuffer {
  float *data = nullptr;
  ~SlotCacheBuffer() { std::free(data); }
  bool allocate(const std::vector<int64_t> &shape) {
    size_t elements = 1;
    for (int64_t size : shape)
      elements *= static_cast<size_t>(size);
    size_t bytes = (elements * sizeof(float) + 63) / 64 * 64;
    data = static_cast<float *>(std::aligned_alloc(64, bytes));
    if (data)
      std::memset(data, 0, bytes);
    return data != nullptr;
  }
};

/// One sequence slot.
struct Slot {
  bool active = false;
  /// The prompt and the generated tokens; all but the last are in the
  /// target's cache once the prompt's prefill is done.
  std::vector<int64_t> tokens;
  /// Positions the draft's (or the MTP module's) cache holds of them.
  int64_t draftLength = 0;
  /// While the prompt's prefill is under way (a chunk per step): positions
  /// of it the target's cache holds, and when the sequence came, so that
  /// the oldest prompts fill first.
  bool prefilling = false;
  int64_t prefilled = 0;
  uint64_t arrival = 0;
  /// The key of its draws when the artifact samples, and the target
  /// forwards since its prompt (the prefill counting one), which key its
  /// rounds as specrt_generate's loop keys them.
  uint64_t seed = 0;
  int64_t forwards = 0;
  /// With heads, what they proposed after its last token: its next
  /// speculative round verifies them. With an MTP module, its proposal
  /// once its cache holds the sequence's length, and the target's hidden
  /// states at the positions it has not read, draftLength .. length - 1,
  /// by row. Sampled, the distributions the proposals were drawn from
  /// (proposals x vocabulary).
  std::vector<int64_t> proposals;
  std::vector<float> distribution, hidden;
  /// With a cross-tokenizer draft: the committed text in the draft's
  /// tokens, how many of `tokens` it holds, and what the draft's cache
  /// holds by position (its BOS, then draft tokens).
  std::unique_ptr<DraftContext> draftText;
  size_t spelled = 0;
  std::vector<int64_t> draftCached;

  int64_t length() const { return static_cast<int64_t>(tokens.size()) - 1; }
};

/// What each slot does in a step.
enum class StepKind { None, Plain, Speculative };

/// Measured seconds per step by the number of sequences it advanced, plain
/// and speculative, and the tokens a speculative step gives a sequence:
/// the speculation length with the higher expected rate. A step's cost is
/// the least of its kind's last few: on a shared machine a step only ever
/// takes longer than its cost, when the thread is descheduled. Each kind
/// is measured once before it is trusted, and the losing one again every
/// `kRefresh` steps (4x as many when one is 25% ahead), as load and text
/// change.
class StepCosts {
public:
  explicit StepCosts(size_t slots)
      : plain(slots + 1), speculative(slots + 1), decided(slots + 1) {}

  bool speculate(size_t sequences) {
    const Recent &p = plain[sequences], &s = speculative[sequences];
    if (!p.count || !s.count)
      return p.count != 0;
    double ratio = tokensPerSequence * p.least() / s.least();
    bool better = ratio > 1.0;
    uint64_t refresh = ratio > 1.25 || ratio < 0.8 ? 4 * kRefresh : kRefresh;
    return ++decided[sequences] % refresh == 0 ? !better : better;
  }

  void record(bool speculated, size_t sequences, double seconds,
              double tokens) {
    (speculated ? speculative : plain)[sequences].add(seconds);
    if (!speculated)
      return;
    // An exponentially weighted mean, the first sample taken whole.
    double sample = tokens / static_cast<double>(sequences);
    tokensPerSequence = speculatedSteps++
                            ? tokensPerSequence +
                                  0.125 * (sample - tokensPerSequence)
                            : sample;
  }

private:
  static constexpr uint64_t kRefresh = 16;
  /// The last samples of one kind of step.
  struct Recent {
    std::array<double, 8> samples{};
    uint64_t count = 0;
    void add(double sample) { samples[count++ % samples.size()] = sample; }
    double least() const {
      size_t n = std::min<uint64_t>(count, samples.size());
      return *std::min_element(samples.begin(), samples.begin() + n);
    }
  };
  std::vector<Recent> plain, speculative;
  double tokensPerSequence = 0;
  uint64_t speculatedSteps = 0;
  std::vector<uint64_t> decided;
};
} // namespace

struct specrt_batch {
  specrt_model *model = nullptr;
  SlotCacheBuffer cache, draftCache;
  std::vector<Slot> slots;
  /// Positions each slot holds (the smaller of the two caches').
  int64_t capacity = 0;
  /// Tokens the draft or the heads propose per sequence in a speculative
  /// step (0: no proposer in the rounds).
  int64_t proposals = 0;
  /// Whether the heads fused into the target propose (no draft cache), or
  /// an MTP module does (its cache in draftCache).
  bool heads = false, module = false;
  /// With a cross-tokenizer draft: what translates its tokens, and the
  /// positions its cache holds per slot.
  std::unique_ptr<TokenTranslator> translator;
  int64_t draftCapacity = 0;
  /// Whether the artifact samples (decoder.verify "rejection-sampling").
  bool sampling = false;
  size_t vocabulary() const {
    return static_cast<size_t>(model->manifest.vocabSize);
  }
  specrt_speculation speculation = SPECRT_SPECULATE_ADAPTIVE;
  /// Prompt tokens prefilled per step (0: a whole prompt when it joins).
  int64_t prefillChunk = 0;
  uint64_t arrivals = 0;
  StepCosts costs;
  specrt_batch_stats stats{};

  explicit specrt_batch(size_t count) : slots(count), costs(count) {}
};

specrt_status specrt_batch_open(specrt_model *model, specrt_batch **batch) {
  if (!model || !batch)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT, "model and batch must be set");
  const Manifest &m = model->manifest;
  if (m.maxBatch == 0)
    return fail(SPECRT_ERROR_UNSUPPORTED,
                "the artifact has no batched rounds; compile it with specc "
                "--max-batch");
  auto opened = std::make_unique<specrt_batch>(m.maxBatch);
  bool drafts =
      m.batchProposer == "draft" || m.crossTokenizer() || m.mtpModule();
  if (!opened->cache.allocate(m.batchCacheShape) ||
      (drafts && !opened->draftCache.allocate(m.batchDraftCacheShape)))
    return fail(SPECRT_ERROR_OUT_OF_MEMORY,
                "cannot allocate the batch's caches of " +
                    std::to_string(m.maxBatch) + " slots");
  opened->model = model;
  opened->capacity = m.batchCacheShape[4];
  // A cross-tokenizer draft's positions are its own tokens': checked per
  // round, not against the target's.
  if (drafts && !m.crossTokenizer())
    opened->capacity = std::min(opened->capacity, m.batchDraftCacheShape[4]);
  if (!m.specRoundEntry.empty() || m.crossTokenizer())
    opened->proposals = m.proposals;
  if (m.crossTokenizer()) {
    opened->translator = TokenTranslator::create(*model);
    opened->draftCapacity = m.batchDraftCacheShape[4];
  }
  opened->heads = m.batchProposer == "heads";
  opened->module = m.mtpModule();
  opened->sampling = m.verify != "greedy";
  *batch = opened.release();
  return SPECRT_OK;
}

void specrt_batch_close(specrt_batch *batch) { delete batch; }

size_t specrt_batch_slots(const specrt_batch *batch) {
  return batch->slots.size();
}

size_t specrt_batch_active(const specrt_batch *batch) {
  return std::count_if(batch->slots.begin(), batch->slots.end(),
                       [](const Slot &slot) { return slot.active; });
}

size_t specrt_batch_step_capacity(const specrt_batch *batch) {
  return batch->slots.size() * static_cast<size_t>(batch->proposals + 1);
}

specrt_status specrt_batch_set_speculation(specrt_batch *batch,
                                           specrt_speculation speculation) {
  if (!batch || speculation < SPECRT_SPECULATE_ADAPTIVE ||
      speculation > SPECRT_SPECULATE_ALWAYS)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "the batch must be set and the speculation one of "
                "adaptive, never, always");
  batch->speculation = speculation;
  return SPECRT_OK;
}

specrt_status specrt_batch_set_prefill_chunk(specrt_batch *batch,
                                            size_t tokens) {
  if (!batch)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT, "the batch must be set");
  if (tokens > static_cast<size_t>(batch->capacity))
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "a prefill chunk of " + std::to_string(tokens) +
                    " tokens is longer than the context (" +
                    std::to_string(batch->capacity) + " tokens)");
  batch->prefillChunk = static_cast<int64_t>(tokens);
  return SPECRT_OK;
}

void specrt_batch_get_stats(const specrt_batch *batch,
                            specrt_batch_stats *stats) {
  *stats = batch->stats;
}

/// Feeds the draft of the sequence in slot `index` its tokens at positions
/// [draftLength, draftLength + count).
static specrt_status feedDraft(specrt_batch *batch, Slot &slot, int64_t index,
                               int64_t count) {
  std::string error;
  int64_t ignored = 0;
  if (specrt_status status = batch->model->device->prefill(
          SlotCache::Draft, batch->draftCache.data, index, slot.draftLength,
          slot.tokens.data() + slot.draftLength, static_cast<size_t>(count),
          0, ignored, nullptr, nullptr, nullptr, error))
    return fail(status, error);
  slot.draftLength += count;
  batch->stats.draft_catch_up += count;
  return SPECRT_OK;
}

/// Feeds the MTP module of the sequence in slot `index` the target's hidden
/// states it has not read (`count` rows from draftLength), each with the
/// token after it, and keeps its proposal after them. Sampled, it draws
/// with the key of the sequence's last target forward + 1, as the decode
/// loop draws after its prefill and each round.
static specrt_status feedModule(specrt_batch *batch, Slot &slot,
                                int64_t index, int64_t count) {
  auto rows = static_cast<size_t>(count);
  if (slot.hidden.empty() || slot.hidden.size() % rows != 0)
    return fail(SPECRT_ERROR_FORMAT,
                "the MTP module lacks the target's hidden states of " +
                    std::to_string(count) + " positions");
  uint64_t key =
      slot.seed +
      static_cast<uint64_t>(std::max<int64_t>(slot.forwards - 1, 0)) *
          SPECRT_KEYS_PER_ROUND +
      1;
  slot.proposals.assign(1, 0);
  slot.distribution.assign(batch->sampling ? batch->vocabulary() : 0, 0.0f);
  std::string error;
  if (specrt_status status = batch->model->device->modulePrefill(
          batch->draftCache.data, index, slot.draftLength, slot.hidden.data(),
          static_cast<int64_t>(slot.hidden.size() / rows),
          slot.tokens.data() + slot.draftLength + 1, rows,
          static_cast<int64_t>(key), slot.proposals[0],
          slot.distribution.data(), error))
    return fail(status, error);
  slot.draftLength += count;
  slot.hidden.clear();
  batch->stats.draft_catch_up += count;
  return SPECRT_OK;
}

/// Feeds the draft (or the MTP module) of the sequence in slot `index` the
/// prompt chunk of `count` positions the target's prefill just read, when
/// it holds all before them: its cache then follows the prompt chunk by
/// chunk, and the sequence's first speculative round has nothing of the
/// prompt to catch up (which would hold the other sequences back by a
/// whole prompt's forward of the proposer). Not when steps never
/// speculate, and not for a cross-tokenizer draft, which reads its own
/// tokens. A module's row reads the token after it: the prompt's next, or
/// after the last chunk the first generated token.
static specrt_status prefillProposer(specrt_batch *batch, Slot &slot,
                                     int64_t index, int64_t start,
                                     int64_t count) {
  bool drafts = batch->model->manifest.batchProposer == "draft";
  if ((!drafts && !batch->module) || slot.draftLength != start ||
      batch->speculation == SPECRT_SPECULATE_NEVER)
    return SPECRT_OK;
  return drafts ? feedDraft(batch, slot, index, count)
                : feedModule(batch, slot, index, count);
}

/// Prefills the next `count` prompt tokens of the sequence in `slot`; when
/// that completes the prompt, the sequence gets its first token, `first`.
static specrt_status prefill(specrt_batch *batch, Slot &slot, int64_t index,
                             int64_t count, int64_t *first) {
  std::string error;
  int64_t token = 0;
  slot.proposals.resize(batch->heads ? batch->proposals : 0);
  slot.distribution.resize(batch->heads && batch->sampling
                               ? batch->proposals * batch->vocabulary()
                               : 0);
  std::vector<float> hidden;
  if (specrt_status status = batch->model->device->prefill(
          SlotCache::Target, batch->cache.data, index, slot.prefilled,
          slot.tokens.data() + slot.prefilled, count,
          static_cast<int64_t>(slot.seed), token, slot.proposals.data(),
          batch->module ? &hidden : nullptr, slot.distribution.data(), error))
    return fail(status, error);
  slot.hidden.insert(slot.hidden.end(), hidden.begin(), hidden.end());
  ++batch->stats.prefill_forwards;
  batch->stats.prefill_tokens += count;
  int64_t start = slot.prefilled;
  slot.prefilled += count;
  if (slot.prefilled == static_cast<int64_t>(slot.tokens.size())) {
    if (token < 0 || token >= batch->model->manifest.vocabSize)
      return fail(SPECRT_ERROR_FORMAT,
                  "the prefill returned token " + std::to_string(token));
    slot.prefilling = false;
    slot.forwards = 1;
    slot.tokens.push_back(token);
    *first = token;
  }
  return prefillProposer(batch, slot, index, start, count);
}

specrt_status specrt_batch_add(specrt_batch *batch, const int64_t *prompt,
                               size_t length, int64_t *slot,
                               int64_t *first_token) {
  return specrt_batch_add_seeded(batch, prompt, length, 0, slot, first_token);
}

specrt_status specrt_batch_add_seeded(specrt_batch *batch,
                                      const int64_t *prompt, size_t length,
                                      uint64_t seed, int64_t *slot,
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
  auto free = std::find_if(batch->slots.begin(), batch->slots.end(),
                           [](const Slot &s) { return !s.active; });
  if (free == batch->slots.end())
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "all " + std::to_string(batch->slots.size()) +
                    " slots hold a sequence");
  int64_t index = free - batch->slots.begin();
  // The draft's cache is filled when a speculative step first needs it.
  *free = Slot{true, {prompt, prompt + length}, 0, true, 0,
               batch->arrivals++, seed, 0, {}};
  *slot = index;
  *first_token = -1;
  if (batch->prefillChunk)
    return SPECRT_OK;
  specrt_status status = prefill(batch, *free, index, length, first_token);
  if (status != SPECRT_OK)
    *free = Slot{};
  return status;
}

/// Prefills at most the batch's chunk of prompt tokens, oldest prompts
/// first (all that wait if the chunk was set back to 0); a sequence whose
/// prompt completes gets its first token among the step's outputs.
static specrt_status prefillChunk(specrt_batch *batch, int64_t *slots,
                                  int64_t *tokens, size_t *count) {
  int64_t budget = batch->prefillChunk ? batch->prefillChunk : INT64_MAX;
  while (budget > 0) {
    auto oldest = batch->slots.end();
    for (auto s = batch->slots.begin(); s != batch->slots.end(); ++s)
      if (s->active && s->prefilling &&
          (oldest == batch->slots.end() || s->arrival < oldest->arrival))
        oldest = s;
    if (oldest == batch->slots.end())
      break;
    int64_t index = oldest - batch->slots.begin(), first = -1;
    int64_t chunk = std::min<int64_t>(
        budget, static_cast<int64_t>(oldest->tokens.size()) - oldest->prefilled);
    if (specrt_status status = prefill(batch, *oldest, index, chunk, &first))
      return status;
    budget -= chunk;
    if (first >= 0) {
      slots[*count] = index;
      tokens[*count] = first;
      ++*count;
    }
  }
  return SPECRT_OK;
}

/// What the sequence in `slot` does in a step that speculates or not: no
/// step when inactive or its context is full; a plain one when it has no
/// room for the proposals.
static StepKind stepKind(const specrt_batch *batch, size_t slot,
                         bool speculate) {
  const Slot &s = batch->slots[slot];
  if (!s.active || s.prefilling || s.length() >= batch->capacity)
    return StepKind::None;
  return speculate && s.length() + batch->proposals < batch->capacity
             ? StepKind::Speculative
             : StepKind::Plain;
}

namespace {
/// Nanoseconds since the last lap (or since it was made).
class Stopwatch {
public:
  uint64_t lap() {
    auto now = std::chrono::steady_clock::now();
    auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - last);
    last = now;
    return static_cast<uint64_t>(elapsed.count());
  }

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};

/// One step's work over runs of slots, and its output arrays.
class StepRunner {
public:
  StepRunner(specrt_batch *batch, int64_t *slots, int64_t *tokens,
             size_t *count)
      : batch(batch), slots(slots), tokens(tokens), count(count) {}

  specrt_status run(StepKind kind, size_t first, size_t end);
  /// Whether a run of slots took a speculative round.
  bool speculated = false;
  /// Time the draft spent catching up (a cost of the sequences' past
  /// plain steps and prompts, not of this step's length).
  std::chrono::duration<double> catchingUp{0};
  /// Nanoseconds a cross-tokenizer round's drafting spent choosing
  /// proposals and checking what they cover.
  uint64_t choosing = 0;

private:
  specrt_status plain(size_t first, size_t end);
  specrt_status speculative(size_t first, size_t end);
  specrt_status translated(size_t first, size_t end);
  /// A round's proposals in the target's tokens and (sampled) the
  /// distributions they were drawn from (proposals x target vocabulary per
  /// sequence), with each sequence's length and round key.
  struct TokenProposals {
    std::vector<int64_t> lengths, keys, proposed;
    std::vector<float> q;
  };
  specrt_status tokenwise(size_t first, size_t end);
  specrt_status draftStep(size_t first, size_t end,
                          const std::vector<int64_t> &lengths,
                          const std::vector<int64_t> &fed,
                          const std::vector<float> &bias,
                          std::vector<float> &logits);
  specrt_status draftStep(size_t first, size_t end,
                          const std::vector<std::vector<int64_t>> &contexts,
                          const std::vector<float> &bias,
                          std::vector<float> &logits);
  specrt_status drawShared(size_t first, size_t end,
                           std::vector<std::vector<int64_t>> &contexts,
                           TokenProposals &drawn);
  specrt_status drawBytes(size_t first, size_t end,
                          std::vector<std::vector<int64_t>> &contexts,
                          const std::vector<std::string> &pending,
                          TokenProposals &drawn);
  specrt_status catchUpProposer(size_t slot);
  void followText(size_t slot, std::vector<int64_t> &context,
                  std::string &pending, bool healed = true);
  specrt_status draftProposals(size_t first, size_t end,
                               const std::vector<std::vector<int64_t>> &contexts,
                               const std::vector<std::string> &pending,
                               std::vector<std::vector<int64_t>> &proposed);
  specrt_status catchUpText(size_t slot, const std::vector<int64_t> &context);
  /// The most draft rounds a cross-tokenizer round runs: a draft token may
  /// spell less than a target token.
  int64_t maxDraftSteps() const { return 2 * batch->proposals; }
  specrt_status commitVerified(size_t first, size_t end,
                               const std::vector<int64_t> &picks,
                               const std::vector<int64_t> &counts);
  specrt_status commit(size_t slot, const int64_t *picked, int64_t picks);
  void keepProposals(size_t first, size_t end,
                     const std::vector<int64_t> &proposals,
                     const std::vector<float> &distributions);

  specrt_batch *batch;
  int64_t *slots, *tokens;
  size_t *count;
  std::string error;
};
} // namespace

specrt_status StepRunner::run(StepKind kind, size_t first, size_t end) {
  ++batch->stats.target_forwards;
  batch->stats.sequence_steps += end - first;
  speculated |= kind == StepKind::Speculative;
  if (kind == StepKind::Plain)
    return plain(first, end);
  if (!batch->translator)
    return speculative(first, end);
  // To a byte-level target, and sampled to any, the draft's proposals are
  // drawn as target tokens; greedy to a tokenizer's, translated.
  if (batch->translator->targetIsBytes() || batch->sampling)
    return tokenwise(first, end);
  return translated(first, end);
}

/// Appends `picks` tokens to the sequence in `slot` and to the output.
specrt_status StepRunner::commit(size_t slot, const int64_t *picked,
                                 int64_t picks) {
  int64_t vocab = batch->model->manifest.vocabSize;
  for (int64_t i = 0; i < picks; ++i) {
    if (picked[i] < 0 || picked[i] >= vocab)
      return fail(SPECRT_ERROR_FORMAT,
                  "the round returned token " + std::to_string(picked[i]));
    batch->slots[slot].tokens.push_back(picked[i]);
    slots[*count] = static_cast<int64_t>(slot);
    tokens[*count] = picked[i];
    ++*count;
  }
  batch->stats.tokens += picks;
  return SPECRT_OK;
}

specrt_status StepRunner::plain(size_t first, size_t end) {
  size_t n = end - first;
  std::vector<int64_t> lengths(n), lasts(n), keys(n), next(n);
  for (size_t i = 0; i < n; ++i) {
    Slot &s = batch->slots[first + i];
    lengths[i] = s.length();
    lasts[i] = s.tokens.back();
    // A plain step draws at its seed + position, as specrt_generate's
    // target-only steps do.
    keys[i] = static_cast<int64_t>(s.seed);
    ++s.forwards;
  }
  SlotRun run{static_cast<int64_t>(first), n, lengths.data(), nullptr,
              lasts.data(), keys.data(), nullptr};
  std::vector<int64_t> proposals(batch->heads ? n * batch->proposals : 0);
  std::vector<float> hidden, q(batch->heads && batch->sampling
                                   ? proposals.size() * batch->vocabulary()
                                   : 0);
  RoundOutput out{next.data(), nullptr, nullptr, proposals.data()};
  out.hidden = batch->module ? &hidden : nullptr;
  out.distributions = q.data();
  if (specrt_status status =
          batch->model->device->round(batch->cache.data, run, out, error))
    return fail(status, error);
  keepProposals(first, end, proposals, q);
  // The module reads these rows when it next catches up.
  size_t width = hidden.size() / std::max<size_t>(n, 1);
  for (size_t i = 0; i < n && batch->module; ++i)
    batch->slots[first + i].hidden.insert(
        batch->slots[first + i].hidden.end(), hidden.begin() + i * width,
        hidden.begin() + (i + 1) * width);
  for (size_t i = 0; i < n; ++i)
    if (specrt_status status = commit(first + i, &next[i], 1))
      return status;
  return SPECRT_OK;
}

/// With heads or an MTP module, each sequence of slots [first, end) keeps
/// what they proposed for its next round (sampled, with the distributions
/// they were drawn from).
void StepRunner::keepProposals(size_t first, size_t end,
                               const std::vector<int64_t> &proposals,
                               const std::vector<float> &distributions) {
  if (proposals.empty())
    return;
  auto width = static_cast<size_t>(batch->proposals);
  size_t span = distributions.size() / (end - first);
  for (size_t i = 0; i < end - first; ++i) {
    Slot &s = batch->slots[first + i];
    s.proposals.assign(proposals.begin() + i * width,
                       proposals.begin() + (i + 1) * width);
    s.distribution.assign(distributions.begin() + i * span,
                          distributions.begin() + (i + 1) * span);
  }
}

/// Brings the proposer of `slot` up to where a speculative round starts,
/// feeding it what plain rounds left behind: a draft's cache to the
/// sequence's length - 1 (its first forward feeds the last two tokens), an
/// MTP module's to its length (its proposal then follows the last token).
specrt_status StepRunner::catchUpProposer(size_t slot) {
  Slot &s = batch->slots[slot];
  int64_t missing = s.length() - (batch->module ? 0 : 1) - s.draftLength;
  if (batch->heads || missing <= 0)
    return SPECRT_OK;
  auto start = std::chrono::steady_clock::now();
  auto index = static_cast<int64_t>(slot);
  specrt_status status = batch->module ? feedModule(batch, s, index, missing)
                                       : feedDraft(batch, s, index, missing);
  catchingUp += std::chrono::steady_clock::now() - start;
  return status;
}

specrt_status StepRunner::speculative(size_t first, size_t end) {
  size_t n = end - first;
  int64_t width = batch->proposals + 1;
  std::vector<int64_t> lengths(n), previous(n), lasts(n), keys(n), counts(n),
      picks(n * width), proposed, next;
  std::vector<float> q;
  for (size_t i = 0; i < n; ++i) {
    if (specrt_status status = catchUpProposer(first + i))
      return status;
    Slot &s = batch->slots[first + i];
    lengths[i] = s.length();
    previous[i] = s.tokens[s.length() - 1];
    lasts[i] = s.tokens.back();
    proposed.insert(proposed.end(), s.proposals.begin(), s.proposals.end());
    q.insert(q.end(), s.distribution.begin(), s.distribution.end());
    // The round key specrt_generate's loop gives the round after as many
    // target forwards (wrapping, as its 64-bit keys do).
    keys[i] = static_cast<int64_t>(
        s.seed + static_cast<uint64_t>(s.forwards++) * SPECRT_KEYS_PER_ROUND);
  }
  next.resize(proposed.size());
  std::vector<float> nextQ(batch->sampling ? q.size() : 0);
  SlotRun run{static_cast<int64_t>(first), n, lengths.data(),
              previous.data(), lasts.data(), keys.data(), proposed.data()};
  run.distributions = q.data();
  RoundOutput out{nullptr, picks.data(), counts.data(), next.data()};
  out.distributions = nextQ.data();
  if (specrt_status status = batch->model->device->specRound(
          batch->cache.data, batch->draftCache.data, run, out, error))
    return fail(status, error);
  keepProposals(first, end, next, nextQ);
  for (size_t i = 0; i < n; ++i) {
    Slot &s = batch->slots[first + i];
    int64_t count = std::clamp<int64_t>(counts[i], 1, width);
    if (batch->module) {
      // The module read the round's rows up to the new length.
      s.draftLength = lengths[i] + count;
      continue;
    }
    // The draft cached positions up to length + proposals - 1 of which all
    // that the sequence keeps are its tokens.
    s.draftLength =
        std::min(lengths[i] + count, lengths[i] + batch->proposals);
  }
  return commitVerified(first, end, picks, counts);
}

/// Commits what a speculative round verified for slots [first, end):
/// sequence i's picks[i * (proposals + 1) ..], counts[i] of them.
specrt_status StepRunner::commitVerified(size_t first, size_t end,
                                         const std::vector<int64_t> &picks,
                                         const std::vector<int64_t> &counts) {
  int64_t width = batch->proposals + 1;
  for (size_t i = 0; i < end - first; ++i) {
    if (counts[i] < 1 || counts[i] > width)
      return fail(SPECRT_ERROR_FORMAT,
                  "the speculative round committed " +
                      std::to_string(counts[i]) + " tokens");
    batch->stats.proposed += batch->proposals;
    batch->stats.accepted += counts[i] - 1;
    if (specrt_status status =
            commit(first + i, &picks[i * width], counts[i]))
      return status;
  }
  return SPECRT_OK;
}

/// The draft's context for the sequence in `slot` (healed: its BOS and its
/// text's tokens but the last) and the bytes after it, `pending`: the
/// tokens committed since the last round spelled and the text's tail
/// tokenized again with them.
void StepRunner::followText(size_t slot, std::vector<int64_t> &context,
                            std::string &pending, bool healed) {
  Slot &s = batch->slots[slot];
  const TokenTranslator &translator = *batch->translator;
  if (!s.draftText)
    s.draftText = translator.newContext();
  s.draftText->append(translator.spellTarget(s.tokens.data() + s.spelled,
                                             s.tokens.size() - s.spelled));
  s.spelled = s.tokens.size();
  if (healed) {
    translator.healedContext(*s.draftText, context, pending);
    return;
  }
  const std::vector<int32_t> &ids = s.draftText->ids();
  context.assign(1, translator.draftBos());
  context.insert(context.end(), ids.begin(), ids.end());
}

/// The draft's proposals after each context (the contexts' last tokens fed
/// first; the first proposal spelling on from the pending bytes; each
/// chosen by the bytes it spells) into `proposed`, after each cache is brought to hold all of its context
/// but the last token. It drafts until every sequence's proposals
/// translate into the round's proposals in the target's tokens, or
/// maxDraftSteps().
specrt_status StepRunner::draftProposals(
    size_t first, size_t end, const std::vector<std::vector<int64_t>> &contexts,
    const std::vector<std::string> &pending,
    std::vector<std::vector<int64_t>> &proposed) {
  size_t n = end - first, vocab = batch->translator->draftVocab();
  std::vector<int64_t> lengths(n), tokens(n);
  std::vector<float> logits(n * vocab);
  for (size_t i = 0; i < n; ++i) {
    if (specrt_status status = catchUpText(first + i, contexts[i]))
      return status;
    lengths[i] = static_cast<int64_t>(contexts[i].size()) - 1;
    tokens[i] = contexts[i].back();
  }
  // The first round heals each context's last token; the others are free.
  std::vector<float> healing(n * vocab, 0.0f), unbiased(n * vocab, 0.0f);
  for (size_t i = 0; i < n; ++i)
    batch->translator->healingBias(pending[i], &healing[i * vocab]);
  // Choosing by bytes, and whether the proposals cover the round, are
  // translation's time (`choosing`), not the draft's.
  auto covered = [&] {
    Stopwatch check;
    for (size_t i = 0; i < n; ++i)
      if (!batch->translator->covers(proposed[i], pending[i],
                                     static_cast<size_t>(batch->proposals))) {
        choosing += check.lap();
        return false;
      }
    choosing += check.lap();
    return true;
  };
  proposed.assign(n, {});
  for (int64_t step = 0; step < maxDraftSteps() && !covered(); ++step) {
    if (specrt_status status = draftStep(first, end, lengths, tokens,
                                         step == 0 ? healing : unbiased, logits))
      return status;
    Stopwatch choice;
    for (size_t i = 0; i < n; ++i) {
      int64_t token = batch->translator->chooseByBytes(
          &logits[i * vocab],
          step == 0 ? std::string_view(pending[i]) : std::string_view());
      proposed[i].push_back(token);
      ++lengths[i];
      tokens[i] = token;
    }
    choosing += choice.lap();
  }
  // The cache now holds each context and all proposals but the last.
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> &cached = batch->slots[first + i].draftCached;
    cached = contexts[i];
    if (!proposed[i].empty())
      cached.insert(cached.end(), proposed[i].begin(), proposed[i].end() - 1);
  }
  return SPECRT_OK;
}

/// Brings the draft's cache of `slot` to hold all of `context` but its last
/// token: kept as far as it holds what the context starts with, the rest
/// prefilled. Unlike catchUpProposer's, this happens every round (the healed
/// last token changes), so it counts in the round's cost.
specrt_status StepRunner::catchUpText(size_t slot,
                                      const std::vector<int64_t> &context) {
  std::vector<int64_t> &cached = batch->slots[slot].draftCached;
  size_t valid = 0, need = context.size() - 1;
  while (valid < std::min(cached.size(), need) && cached[valid] == context[valid])
    ++valid;
  if (valid == need)
    return SPECRT_OK;
  int64_t ignored = 0;
  if (specrt_status status = batch->model->device->prefill(
          SlotCache::Draft, batch->draftCache.data, static_cast<int64_t>(slot),
          static_cast<int64_t>(valid), context.data() + valid, need - valid, 0,
          ignored, nullptr, nullptr, nullptr, error))
    return fail(status, error);
  batch->stats.draft_catch_up += need - valid;
  return SPECRT_OK;
}

/// A speculative round with a cross-tokenizer draft: it proposes in its own
/// tokens after each sequence's text, the proposals are spelled and
/// tokenized in the target's tokens, and the target verifies those. A run
/// in which a sequence's draft context would outgrow the draft's cache
/// takes a plain round instead.
specrt_status StepRunner::translated(size_t first, size_t end) {
  size_t n = end - first;
  int64_t gamma = batch->proposals, width = gamma + 1;
  Stopwatch watch;
  std::vector<std::vector<int64_t>> contexts(n);
  std::vector<std::string> pending(n);
  for (size_t i = 0; i < n; ++i)
    followText(first + i, contexts[i], pending[i]);
  for (const std::vector<int64_t> &context : contexts)
    if (static_cast<int64_t>(context.size()) - 1 + maxDraftSteps() >
        batch->draftCapacity)
      return plain(first, end);
  batch->stats.translate_ns += watch.lap();
  std::vector<std::vector<int64_t>> proposed;
  choosing = 0;
  if (specrt_status status =
          draftProposals(first, end, contexts, pending, proposed))
    return status;
  uint64_t drafting = watch.lap();
  batch->stats.propose_ns += drafting - std::min(drafting, choosing);
  batch->stats.translate_ns += std::min(drafting, choosing);
  std::vector<int64_t> verified(n * gamma), lengths(n), lasts(n), keys(n, 0),
      picks(n * width), counts(n);
  for (size_t i = 0; i < n; ++i) {
    Slot &s = batch->slots[first + i];
    batch->translator->translate(proposed[i], pending[i], &verified[i * gamma],
                                 gamma);
    lengths[i] = s.length();
    lasts[i] = s.tokens.back();
    ++s.forwards;
  }
  batch->stats.translate_ns += watch.lap();
  SlotRun run{static_cast<int64_t>(first), n, lengths.data(), nullptr,
              lasts.data(), keys.data(), verified.data()};
  RoundOutput out{nullptr, picks.data(), counts.data(), nullptr};
  if (specrt_status status =
          batch->model->device->verify(batch->cache.data, run, out, error))
    return fail(status, error);
  batch->stats.verify_ns += watch.lap();
  return commitVerified(first, end, picks, counts);
}

/// A uniform draw in [0, 1) for `key` and `counter`: the compiled code's
/// (spec-lower-steps), so that a sequence's draws are keyed alike wherever
/// they are made.
static double uniformDraw(uint64_t key, uint64_t counter) {
  uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

/// A speculative round with a cross-tokenizer draft whose proposals are
/// drawn as target tokens, each with the distribution it was drawn from:
/// sampled, the target verifies them by rejection sampling against those
/// distributions, so that what it commits is distributed as its own
/// samples; greedy, by its picks. A target that reads bytes gets the bytes
/// of the draft's tokens, drawn (greedy: chosen) a byte at a time
/// (drawBytes); another, sampled, the draft's tokens it shares
/// (drawShared).
specrt_status StepRunner::tokenwise(size_t first, size_t end) {
  size_t n = end - first, targetVocab = batch->translator->targetVocab();
  int64_t gamma = batch->proposals, width = gamma + 1;
  bool bytes = batch->translator->targetIsBytes();
  Stopwatch watch;
  std::vector<std::vector<int64_t>> contexts(n);
  std::vector<std::string> pending(n);
  for (size_t i = 0; i < n; ++i)
    followText(first + i, contexts[i], pending[i], /*healed=*/bytes);
  // Drawing bytes, a step may end the healed token without a proposal.
  for (const std::vector<int64_t> &context : contexts)
    if ((!bytes && !batch->translator->sharesTokens()) ||
        static_cast<int64_t>(context.size()) + gamma > batch->draftCapacity)
      return plain(first, end);
  TokenProposals drawn{
      std::vector<int64_t>(n), std::vector<int64_t>(n),
      std::vector<int64_t>(n * gamma),
      std::vector<float>(batch->sampling ? n * gamma * targetVocab : 0)};
  std::vector<int64_t> lasts(n), picks(n * width), counts(n);
  for (size_t i = 0; i < n; ++i) {
    Slot &s = batch->slots[first + i];
    drawn.lengths[i] = s.length();
    lasts[i] = s.tokens.back();
    // The round key, as a same-vocabulary draft's round takes it.
    drawn.keys[i] = static_cast<int64_t>(
        s.seed + static_cast<uint64_t>(s.forwards++) * SPECRT_KEYS_PER_ROUND);
  }
  batch->stats.translate_ns += watch.lap();
  for (size_t i = 0; i < n; ++i)
    if (specrt_status status = catchUpText(first + i, contexts[i]))
      return status;
  choosing = 0;
  if (specrt_status status = bytes ? drawBytes(first, end, contexts, pending, drawn)
                                   : drawShared(first, end, contexts, drawn))
    return status;
  // Each context now ends in the token the draft would read next; its
  // cache holds the rest.
  for (size_t i = 0; i < n; ++i)
    batch->slots[first + i].draftCached.assign(contexts[i].begin(),
                                               contexts[i].end() - 1);
  uint64_t drafting = watch.lap();
  batch->stats.propose_ns += drafting - std::min(drafting, choosing);
  batch->stats.translate_ns += std::min(drafting, choosing);
  SlotRun run{static_cast<int64_t>(first), n, drawn.lengths.data(), nullptr,
              lasts.data(), drawn.keys.data(), drawn.proposed.data()};
  run.distributions = batch->sampling ? drawn.q.data() : nullptr;
  RoundOutput out{nullptr, picks.data(), counts.data(), nullptr};
  if (specrt_status status =
          batch->model->device->verify(batch->cache.data, run, out, error))
    return fail(status, error);
  batch->stats.verify_ns += watch.lap();
  return commitVerified(first, end, picks, counts);
}

/// One draft round over slots [first, end) feeding `fed` at `lengths` (each
/// sequence's draft position), its logits into `logits`, `bias` added.
specrt_status StepRunner::draftStep(size_t first, size_t end,
                                    const std::vector<int64_t> &lengths,
                                    const std::vector<int64_t> &fed,
                                    const std::vector<float> &bias,
                                    std::vector<float> &logits) {
  SlotRun run{static_cast<int64_t>(first), end - first, lengths.data(),
              nullptr, fed.data(), nullptr, nullptr, bias.data()};
  RoundOutput out{nullptr, nullptr, nullptr, nullptr, logits.data()};
  if (specrt_status status = batch->model->device->draftRound(
          batch->draftCache.data, run, out, error))
    return fail(status, error);
  return SPECRT_OK;
}

/// draftStep after each of `contexts`, feeding its last token (the cache
/// holds the rest).
specrt_status StepRunner::draftStep(
    size_t first, size_t end, const std::vector<std::vector<int64_t>> &contexts,
    const std::vector<float> &bias, std::vector<float> &logits) {
  std::vector<int64_t> lengths(contexts.size()), fed(contexts.size());
  for (size_t i = 0; i < contexts.size(); ++i) {
    lengths[i] = static_cast<int64_t>(contexts[i].size()) - 1;
    fed[i] = contexts[i].back();
  }
  return draftStep(first, end, lengths, fed, bias, logits);
}

/// Token-level intersection (Timor et al. 2025): gamma draft steps, each
/// proposal drawn from the draft's distribution over the tokens both
/// vocabularies share, each context extended by the proposal its draft
/// reads next.
specrt_status StepRunner::drawShared(
    size_t first, size_t end, std::vector<std::vector<int64_t>> &contexts,
    TokenProposals &drawn) {
  const TokenTranslator &translator = *batch->translator;
  size_t n = end - first, draftVocab = translator.draftVocab(),
         targetVocab = translator.targetVocab();
  int64_t gamma = batch->proposals;
  std::vector<float> bias(n * draftVocab), logits(n * draftVocab);
  for (size_t i = 0; i < n; ++i)
    translator.sharedBias(&bias[i * draftVocab]);
  double temperature = batch->model->manifest.temperature;
  for (int64_t step = 0; step < gamma; ++step) {
    if (specrt_status status = draftStep(first, end, contexts, bias, logits))
      return status;
    Stopwatch draw;
    for (size_t i = 0; i < n; ++i) {
      // Keyed as a same-vocabulary draft's draw at this position.
      double u = uniformDraw(static_cast<uint64_t>(drawn.keys[i] +
                                                   drawn.lengths[i] + step),
                             0);
      size_t k = i * gamma + step;
      contexts[i].push_back(translator.drawShared(
          &logits[i * draftVocab], temperature, u, drawn.proposed[k],
          &drawn.q[k * targetVocab]));
    }
    choosing += draw.lap();
  }
  return SPECRT_OK;
}

/// To a target that reads bytes: each sequence's draft tokens drawn a byte
/// at a time (TokenTranslator::walkBytes) from its healed context until it
/// has gamma bytes, a draft step for each token it finishes, each context
/// extended by the tokens its draft reads.
specrt_status StepRunner::drawBytes(
    size_t first, size_t end, std::vector<std::vector<int64_t>> &contexts,
    const std::vector<std::string> &pending, TokenProposals &drawn) {
  const TokenTranslator &translator = *batch->translator;
  size_t n = end - first, draftVocab = translator.draftVocab(),
         targetVocab = translator.targetVocab();
  auto gamma = static_cast<size_t>(batch->proposals);
  std::vector<TokenTranslator::ByteWalk> walks(n);
  std::vector<uint64_t> draws(n, 0);
  for (size_t i = 0; i < n; ++i)
    walks[i].token = pending[i];
  std::vector<float> bias(n * draftVocab, 0.0f), logits(n * draftVocab);
  // Greedy, the bytes are chosen by the draft's own masses.
  double temperature =
      batch->sampling ? batch->model->manifest.temperature : 1.0;
  auto unfinished = [&] {
    return std::any_of(walks.begin(), walks.end(),
                       [&](const auto &walk) { return walk.proposed < gamma; });
  };
  for (size_t step = 0; step <= gamma && unfinished(); ++step) {
    if (specrt_status status = draftStep(first, end, contexts, bias, logits))
      return status;
    Stopwatch draw;
    for (size_t i = 0; i < n; ++i) {
      // A finished sequence's cache takes any token (EOS); the next round
      // prefills again from where it differs. (Every step after the first
      // proposes a byte at least, so γ + 1 steps finish every walk.)
      int64_t next = -1;
      if (walks[i].proposed < gamma) {
        auto key = static_cast<uint64_t>(drawn.keys[i] + drawn.lengths[i]);
        next = translator.walkBytes(
            &logits[i * draftVocab], temperature, walks[i], gamma,
            [&] { return uniformDraw(key, draws[i]++); },
            &drawn.proposed[i * gamma],
            batch->sampling ? &drawn.q[i * gamma * targetVocab] : nullptr,
            !batch->sampling);
      }
      contexts[i].push_back(
          next >= 0 ? next : std::max<int64_t>(translator.draftEos(), 0));
    }
    choosing += draw.lap();
  }
  return SPECRT_OK;
}

/// Whether this step speculates, by the batch's policy.
static bool shouldSpeculate(specrt_batch *batch, size_t sequences) {
  if (!batch->proposals || batch->speculation == SPECRT_SPECULATE_NEVER)
    return false;
  return batch->speculation == SPECRT_SPECULATE_ALWAYS ||
         batch->costs.speculate(sequences);
}

/// The step's rounds over the `sequences` whose prompts are in the cache.
static specrt_status advance(specrt_batch *batch, size_t sequences,
                             int64_t *slots, int64_t *tokens, size_t *count) {
  size_t total = batch->slots.size();
  bool speculate = shouldSpeculate(batch, sequences);
  auto start = std::chrono::steady_clock::now();
  StepRunner runner(batch, slots, tokens, count);
  for (size_t first = 0; first < total;) {
    StepKind kind = stepKind(batch, first, speculate);
    size_t end = first + 1;
    while (end < total && stepKind(batch, end, speculate) == kind)
      ++end;
    if (kind != StepKind::None)
      if (specrt_status status = runner.run(kind, first, end))
        return status;
    first = end;
  }
  std::chrono::duration<double> seconds =
      std::chrono::steady_clock::now() - start - runner.catchingUp;
  batch->costs.record(runner.speculated, sequences, seconds.count(),
                      static_cast<double>(*count));
  ++batch->stats.steps;
  batch->stats.speculative_steps += runner.speculated;
  batch->stats.last_speculation = runner.speculated ? batch->proposals : 0;
  return SPECRT_OK;
}

specrt_status specrt_batch_step(specrt_batch *batch, int64_t *slots,
                                int64_t *tokens, size_t *count) {
  if (!batch || !slots || !tokens || !count)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "batch, slots, tokens and count must be set");
  *count = 0;
  size_t total = batch->slots.size(), sequences = 0;
  for (size_t slot = 0; slot < total; ++slot)
    sequences += stepKind(batch, slot, false) != StepKind::None;
  if (sequences)
    if (specrt_status status = advance(batch, sequences, slots, tokens, count))
      return status;
  return prefillChunk(batch, slots, tokens, count);
}

specrt_status specrt_batch_remove(specrt_batch *batch, int64_t slot) {
  if (!batch || slot < 0 ||
      slot >= static_cast<int64_t>(batch->slots.size()) ||
      !batch->slots[slot].active)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "slot " + std::to_string(slot) + " holds no sequence");
  batch->slots[slot] = Slot{};
  return SPECRT_OK;
}

specrt_status specrt::decodeInRounds(specrt_model *model, const int64_t *prompt,
                                     size_t promptLength, int64_t maxNewTokens,
                                     uint64_t seed,
                                     const std::vector<int64_t> &stopTokens,
                                     DecodeOutput &output) {
  specrt_batch *opened = nullptr;
  if (specrt_status status = specrt_batch_open(model, &opened))
    return status;
  std::unique_ptr<specrt_batch, void (*)(specrt_batch *)> batch(
      opened, specrt_batch_close);
  specrt_batch_set_speculation(opened, SPECRT_SPECULATE_ALWAYS);
  int64_t slot = -1, token = -1;
  if (specrt_status status = specrt_batch_add_seeded(
          opened, prompt, promptLength, seed, &slot, &token))
    return status;
  output.sequence.assign(prompt, prompt + promptLength);
  output.targetForwards = 1;
  output.acceptedHistogram.assign(opened->proposals + 1, 0);
  auto ends = [&](int64_t t) {
    return t == model->manifest.eosTokenId ||
           std::find(stopTokens.begin(), stopTokens.end(), t) != stopTokens.end();
  };
  std::vector<int64_t> slots(specrt_batch_step_capacity(opened)),
      tokens(slots.size());
  size_t count = 1;
  tokens[0] = token;
  for (int64_t generated = 0; count > 0;) {
    bool stop = false;
    for (size_t i = 0; i < count && !stop; ++i) {
      output.sequence.push_back(tokens[i]);
      stop = specrt_on_token(tokens[i]) || ends(tokens[i]) ||
             ++generated >= maxNewTokens;
    }
    if (stop)
      break;
    if (specrt_status status =
            specrt_batch_step(opened, slots.data(), tokens.data(), &count))
      return status;
    const specrt_batch_stats &stats = opened->stats;
    output.proposeNanoseconds =
        static_cast<int64_t>(stats.propose_ns + stats.translate_ns);
    output.verifyNanoseconds = static_cast<int64_t>(stats.verify_ns);
    output.translateNanoseconds = static_cast<int64_t>(stats.translate_ns);
    if (count > 0) {
      ++output.targetForwards;
      ++output.acceptedHistogram[std::min<size_t>(count, output.acceptedHistogram.size()) - 1];
    }
  }
  return SPECRT_OK;
}
