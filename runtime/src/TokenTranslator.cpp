//===- TokenTranslator.cpp - a cross-tokenizer draft's tokens -------------===//

#include "TokenTranslator.h"

#include "Model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

using namespace specrt;

/// A vocabulary and its encoder: the tokenizer's, or bytes as ids.
static std::pair<Vocabulary, Encoder> side(const Tokenizer *tokenizer,
                                           int64_t size, int64_t bos,
                                           int64_t eos) {
  auto b = static_cast<int32_t>(bos), e = static_cast<int32_t>(eos);
  if (tokenizer)
    return {Vocabulary::of(*tokenizer, static_cast<size_t>(size), b, e),
            [tokenizer](std::string_view text) { return tokenizer->encode(text); }};
  return {Vocabulary::byteLevel(static_cast<size_t>(size), b, e),
          [](std::string_view text) {
            return std::vector<int32_t>(reinterpret_cast<const unsigned char *>(text.data()),
                                        reinterpret_cast<const unsigned char *>(text.data()) +
                                            text.size());
          }};
}

std::unique_ptr<TokenTranslator> TokenTranslator::create(const specrt_model &model) {
  const Manifest &m = model.manifest;
  auto translator = std::make_unique<TokenTranslator>();
  std::tie(translator->target, translator->encodeTarget) =
      side(model.tokenizer.get(), m.vocabSize, m.bosTokenId, m.eosTokenId);
  translator->targetReadsBytes = !model.tokenizer;
  std::tie(translator->draft, translator->encodeDraft) =
      side(model.draftTokenizer.get(), m.draftVocabSize, m.draftBosTokenId,
           m.draftEosTokenId);
  return translator;
}

std::string TokenTranslator::spellTarget(const int64_t *tokens, size_t count) const {
  std::string text;
  for (size_t i = 0; i < count; ++i)
    if (tokens[i] >= 0 && static_cast<size_t>(tokens[i]) < target.spellings.size() &&
        target.spelled[tokens[i]])
      text += target.spellings[tokens[i]];
  return text;
}

std::vector<int32_t> TokenTranslator::translation(const std::vector<int64_t> &proposed,
                                                  std::string_view pending) const {
  std::string text;
  bool ended = false;
  for (size_t i = 0; i < proposed.size() && !ended; ++i) {
    int64_t id = proposed[i];
    ended = id == draft.eos;
    if (!ended && id >= 0 && static_cast<size_t>(id) < draft.spellings.size() &&
        draft.spelled[id])
      text += draft.spellings[id];
  }
  // Proposals that do not spell on from the pending bytes (none could) are
  // verified as they are, and rejected as any wrong proposal.
  if (std::string_view(text).substr(0, pending.size()) == pending)
    text.erase(0, pending.size());
  std::vector<int32_t> ids = encodeTarget(text);
  if (ended && target.eos >= 0)
    ids.push_back(target.eos);
  return ids;
}

bool TokenTranslator::covers(const std::vector<int64_t> &proposed,
                             std::string_view pending, size_t count) const {
  size_t bytes = 0;
  for (int64_t id : proposed) {
    if (id == draft.eos)
      return true;
    if (id >= 0 && static_cast<size_t>(id) < draft.spellings.size() && draft.spelled[id])
      bytes += draft.spellings[id].size();
  }
  // A target token spells at least one byte.
  if (bytes < pending.size() + count)
    return false;
  return targetReadsBytes || translation(proposed, pending).size() >= count;
}

void TokenTranslator::translate(const std::vector<int64_t> &proposed,
                                std::string_view pending, int64_t *out,
                                size_t count) const {
  std::vector<int32_t> ids = translation(proposed, pending);
  int64_t last = ids.empty() ? std::max<int64_t>(target.eos, 0) : ids.front();
  for (size_t i = 0; i < count; ++i) {
    if (i < ids.size())
      last = ids[i];
    out[i] = last;
  }
}

void TokenTranslator::healedContext(const DraftContext &text,
                                    std::vector<int64_t> &context,
                                    std::string &pending) const {
  const std::vector<int32_t> &ids = text.ids();
  size_t kept = ids.empty() ? 0 : ids.size() - 1;
  context.assign(1, draft.bos);
  context.insert(context.end(), ids.begin(), ids.begin() + kept);
  pending = text.text().substr(kept ? text.endOf(kept - 1) : 0);
}

bool TokenTranslator::healingBias(std::string_view pending, float *bias) const {
  size_t size = draft.spellings.size(), allowed = 0;
  if (pending.empty())
    return false;
  for (size_t id = 0; id < size; ++id) {
    std::string_view spelling = draft.spellings[id];
    bool spellsOn = draft.spelled[id] &&
                    spelling.substr(0, pending.size()) == pending;
    bias[id] = spellsOn ? 0.0f : -std::numeric_limits<float>::infinity();
    allowed += spellsOn;
  }
  if (!allowed)
    std::fill(bias, bias + size, 0.0f);
  return true;
}

int64_t TokenTranslator::chooseByBytes(const float *logits,
                                       std::string_view pending) const {
  size_t size = draft.spellings.size();
  float top = -std::numeric_limits<float>::infinity();
  for (size_t id = 0; id < size; ++id)
    top = std::max(top, logits[id]);
  // Groups 0-255: the next byte; 256: no byte after the pending ones (the
  // pending token itself, special tokens).
  std::array<float, 257> mass{};
  std::array<int64_t, 257> best;
  best.fill(-1);
  for (size_t id = 0; id < size; ++id) {
    if (!(logits[id] > -std::numeric_limits<float>::infinity()))
      continue;
    std::string_view spelling =
        draft.spelled[id] ? std::string_view(draft.spellings[id]) : std::string_view();
    size_t group = spelling.size() > pending.size()
                       ? static_cast<unsigned char>(spelling[pending.size()])
                       : 256;
    mass[group] += std::exp(logits[id] - top);
    if (best[group] < 0 || logits[id] > logits[best[group]])
      best[group] = static_cast<int64_t>(id);
  }
  size_t chosen = std::max_element(mass.begin(), mass.end()) - mass.begin();
  // No finite logit (a model that returned NaN): any token, still a token.
  return std::max<int64_t>(best[chosen], 0);
}

std::unique_ptr<DraftContext> TokenTranslator::newContext() const {
  return std::make_unique<DraftContext>(encodeDraft, draft);
}
