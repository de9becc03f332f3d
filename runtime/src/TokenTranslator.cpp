//===- TokenTranslator.cpp - a cross-tokenizer draft's tokens -------------===//

#include "TokenTranslator.h"

#include "Model.h"

#include <algorithm>
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

std::unique_ptr<DraftContext> TokenTranslator::newContext() const {
  return std::make_unique<DraftContext>(encodeDraft, draft);
}
