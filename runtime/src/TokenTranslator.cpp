//===- TokenTranslator.cpp - a cross-tokenizer draft's tokens -------------===//

#include "TokenTranslator.h"

#include "Model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

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
  auto [target, encodeTarget] =
      side(model.tokenizer.get(), m.vocabSize, m.bosTokenId, m.eosTokenId);
  auto [draft, encodeDraft] = side(model.draftTokenizer.get(), m.draftVocabSize,
                                   m.draftBosTokenId, m.draftEosTokenId);
  return create(std::move(target), std::move(encodeTarget), std::move(draft),
                std::move(encodeDraft), !model.tokenizer);
}

std::unique_ptr<TokenTranslator>
TokenTranslator::create(Vocabulary target, Encoder encodeTarget,
                        Vocabulary draft, Encoder encodeDraft,
                        bool targetReadsBytes) {
  auto translator = std::make_unique<TokenTranslator>();
  VocabularyBridge bridge = VocabularyBridge::build(draft, target);
  translator->target = std::move(target);
  translator->encodeTarget = std::move(encodeTarget);
  translator->draft = std::move(draft);
  translator->encodeDraft = std::move(encodeDraft);
  translator->targetReadsBytes = targetReadsBytes;
  translator->toTarget = std::move(bridge.toTarget);
  int32_t bos = translator->draft.bos;
  if (bos >= 0 && static_cast<size_t>(bos) < translator->toTarget.size())
    translator->toTarget[bos] = -1;
  translator->shared = static_cast<size_t>(
      std::count_if(translator->toTarget.begin(), translator->toTarget.end(),
                    [](int32_t id) { return id >= 0; }));
  const Vocabulary &d = translator->draft;
  for (size_t id = 0; id < d.spellings.size(); ++id)
    if (d.spelled[id] && !d.spellings[id].empty())
      translator->bySpelling.push_back(static_cast<int32_t>(id));
  translator->sharedMask.resize(d.spellings.size());
  translator->spelledMask.resize(d.spellings.size());
  for (size_t id = 0; id < d.spellings.size(); ++id) {
    translator->sharedMask[id] = translator->toTarget[id] >= 0;
    translator->spelledMask[id] =
        d.spelled[id] || (static_cast<int32_t>(id) == d.eos &&
                          translator->target.eos >= 0);
  }
  std::stable_sort(translator->bySpelling.begin(), translator->bySpelling.end(),
                   [&](int32_t a, int32_t b) { return d.spellings[a] < d.spellings[b]; });
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
  return translation(proposed, pending).size() >= count;
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

void TokenTranslator::sharedBias(float *bias) const {
  for (size_t id = 0; id < sharedMask.size(); ++id)
    bias[id] = sharedMask[id] ? 0.0f : -std::numeric_limits<float>::infinity();
}

/// softmax(logits / temperature) (the largest logits alone at temperature
/// 0), 0 where `drawable` is 0 or a logit is not finite; unnormalized, into
/// `weights`. (In floats: the per-step cost of a sampled round is mostly
/// these exponentials.)
static void weightsOf(const float *logits, const std::vector<char> &drawable,
                      double temperature, std::vector<float> &weights) {
  size_t size = drawable.size();
  float top = -std::numeric_limits<float>::infinity();
  for (size_t id = 0; id < size; ++id)
    if (drawable[id] && std::isfinite(logits[id]))
      top = std::max(top, logits[id]);
  weights.assign(size, 0.0f);
  if (!std::isfinite(top))
    return;
  auto scale = static_cast<float>(temperature > 0.0 ? 1.0 / temperature : 0.0);
  for (size_t id = 0; id < size; ++id) {
    if (!drawable[id] || !std::isfinite(logits[id]))
      continue;
    weights[id] = scale > 0.0f ? std::exp((logits[id] - top) * scale)
                               : static_cast<float>(logits[id] == top);
  }
}

int64_t TokenTranslator::drawShared(const float *logits, double temperature,
                                    double uniform, int64_t &targetToken,
                                    float *q) const {
  size_t size = toTarget.size();
  std::vector<float> weights;
  weightsOf(logits, sharedMask, temperature, weights);
  double total = 0.0;
  for (double w : weights)
    total += w;
  // No finite shared logit: the first shared token, for sure.
  for (size_t id = 0; id < size && !(total > 0.0); ++id)
    if (toTarget[id] >= 0)
      total = weights[id] = 1.0;
  std::fill(q, q + target.spellings.size(), 0.0f);
  int64_t drawn = -1;
  double below = 0.0, threshold = uniform * total;
  for (size_t id = 0; id < size; ++id) {
    if (weights[id] == 0.0)
      continue;
    q[toTarget[id]] += static_cast<float>(weights[id] / total);
    below += weights[id];
    if (drawn < 0 && threshold < below)
      drawn = static_cast<int64_t>(id);
  }
  // Rounding can leave the threshold at the total: the last such token.
  for (size_t id = size; drawn < 0 && id-- > 0;)
    if (weights[id] > 0.0)
      drawn = static_cast<int64_t>(id);
  targetToken = drawn >= 0 ? toTarget[drawn] : 0;
  return std::max<int64_t>(drawn, 0);
}

int64_t TokenTranslator::walkBytes(const float *logits, double temperature,
                                   ByteWalk &walk, size_t count,
                                   const std::function<double()> &uniform,
                                   int64_t *proposed, float *q,
                                   bool greedy) const {
  size_t vocab = target.spellings.size();
  std::vector<float> p;
  weightsOf(logits, spelledMask, temperature, p);
  auto eos = static_cast<size_t>(std::max<int32_t>(target.eos, 0));
  while (walk.proposed < count) {
    const std::string &token = walk.token;
    // The mass of the tokens spelled `token` exactly (by the likeliest),
    // of those spelling on from it by their next byte, and EOS (only as a
    // whole token). Sorted by spelling, the tokens that begin with `token`
    // are one range, those spelled so exactly first.
    double ends = 0.0, endsBest = 0.0, total = 0.0;
    int64_t endsAs = -1;
    std::array<double, 257> next{};
    if (token.empty() && draft.eos >= 0)
      next[256] = p[draft.eos];
    auto prefix = [&](const auto &key) -> std::string_view {
      if constexpr (std::is_same_v<std::decay_t<decltype(key)>, int32_t>)
        return std::string_view(draft.spellings[key]).substr(0, token.size());
      else
        return key;
    };
    auto [from, to] = std::equal_range(
        bySpelling.begin(), bySpelling.end(), token,
        [&](const auto &a, const auto &b) { return prefix(a) < prefix(b); });
    for (auto it = from; it != to; ++it) {
      std::string_view spelling = draft.spellings[*it];
      double mass = p[*it];
      if (spelling.size() == token.size()) {
        ends += mass;
        if (mass > endsBest)
          endsBest = mass, endsAs = *it;
      } else {
        next[static_cast<unsigned char>(spelling[token.size()])] += mass;
      }
    }
    for (double m : next)
      total += m;
    // The token ends here (drawn), or nothing spells on: the draft reads it.
    // (Greedy: where its own mass is at least the longer ones'.)
    auto endsHere = [&] {
      return greedy ? ends >= total : uniform() * (ends + total) < ends;
    };
    if (!token.empty() && (total == 0.0 || endsHere())) {
      walk.token.clear();
      return endsAs >= 0 ? endsAs : std::max<int32_t>(draft.eos, 0);
    }
    // The byte: the likeliest (greedy), or drawn; 256 is EOS, which also
    // stands for nothing to draw from (no finite logit at all).
    size_t drawn = 256;
    if (total > 0.0 && greedy) {
      drawn = std::max_element(next.begin(), next.end()) - next.begin();
    } else if (total > 0.0) {
      double threshold = uniform() * total, below = 0.0;
      // Rounding can leave the threshold at the total: the last such byte.
      for (size_t b = next.size(); b-- > 0;)
        if (next[b] > 0.0) {
          drawn = b;
          break;
        }
      for (size_t b = 0; b < next.size(); ++b) {
        below += next[b];
        if (next[b] > 0.0 && threshold < below) {
          drawn = b;
          break;
        }
      }
    }
    // Each proposal's distribution (greedy walks report none): what it
    // was drawn from, and after EOS the EOS it repeats, surely.
    size_t described = drawn == 256 ? count : walk.proposed + 1;
    for (size_t k = walk.proposed; q && k < described; ++k) {
      float *row = q + k * vocab;
      std::fill(row, row + vocab, 0.0f);
      for (size_t b = 0; k == walk.proposed && total > 0.0 && b < next.size(); ++b)
        row[b < 256 ? b : eos] += static_cast<float>(next[b] / total);
      if (k > walk.proposed || total == 0.0)
        row[eos] = 1.0f;
    }
    if (drawn == 256) {
      // EOS ends the proposals; those after it repeat it.
      for (; walk.proposed < count; ++walk.proposed)
        proposed[walk.proposed] = static_cast<int64_t>(eos);
      return -1;
    }
    proposed[walk.proposed++] = static_cast<int64_t>(drawn);
    walk.token.push_back(static_cast<char>(drawn));
  }
  return -1;
}

std::unique_ptr<DraftContext> TokenTranslator::newContext() const {
  return std::make_unique<DraftContext>(encodeDraft, draft);
}
