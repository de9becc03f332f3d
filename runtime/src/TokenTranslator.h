//===- TokenTranslator.h - a cross-tokenizer draft's tokens ------*- C++ -*-===//
//
// A draft with another tokenizer than its target's proposes in its own
// tokens. Between batched rounds the runtime spells them and tokenizes the
// text again in the target's tokens, which the target verifies (sampled, it
// draws each proposal as one target token with its distribution instead);
// and it keeps each sequence's committed text in the draft's tokens
// (DraftContext). The
// tokenizers live here, in the runtime, which is why these rounds run from
// the runtime's batch and not inside one compiled loop
// (docs/cross-tokenizer.md).
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TOKENTRANSLATOR_H
#define SPECRT_TOKENTRANSLATOR_H

#include "specrt/VocabularyBridge.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct specrt_model;

namespace specrt {

class TokenTranslator {
public:
  /// For an artifact with a cross-tokenizer draft (its tokenizers open).
  static std::unique_ptr<TokenTranslator> create(const specrt_model &model);
  /// Between two vocabularies and their encoders; `targetReadsBytes` when
  /// the target's ids are bytes.
  static std::unique_ptr<TokenTranslator>
  create(Vocabulary target, Encoder encodeTarget, Vocabulary draft,
         Encoder encodeDraft, bool targetReadsBytes);

  /// The text of target tokens (special tokens spell nothing).
  std::string spellTarget(const int64_t *tokens, size_t count) const;
  /// The target's tokens of the text the draft's `proposed` tokens spell
  /// after `pending` (committed bytes the draft's context left out, which
  /// its first proposals spell again), up to the draft's EOS (which becomes
  /// the target's).
  std::vector<int32_t> translation(const std::vector<int64_t> &proposed,
                                   std::string_view pending) const;
  /// Whether `proposed` translates into at least `count` target tokens (or
  /// reaches the draft's EOS): by their bytes where they are too few, else
  /// by their translation.
  bool covers(const std::vector<int64_t> &proposed, std::string_view pending,
              size_t count) const;
  /// The first `count` of them into `out`; a short translation is padded
  /// with its last token, which verification treats as any other proposal.
  void translate(const std::vector<int64_t> &proposed, std::string_view pending,
                 int64_t *out, size_t count) const;
  /// The draft's context for a sequence's next proposals: its BOS and its
  /// committed text's tokens but the last, whose bytes and any not yet
  /// tokenized are `pending` (token healing: the draft's first proposal
  /// spells on from them, as it would have tokenized the text).
  void healedContext(const DraftContext &text, std::vector<int64_t> &context,
                     std::string &pending) const;
  /// The bias of the first proposal after `pending` (draftVocab()
  /// entries): 0 for the tokens that spell on from it, -inf for the others
  /// (0 for all where none does); false, and nothing written, when nothing
  /// is pending. (Also allowing tokens that spell only a part of it, to
  /// heal several tokens, gave fewer tokens per target forward here.)
  bool healingBias(std::string_view pending, float *bias) const;
  /// The draft's proposal from its (biased) logits after `pending` bytes:
  /// of the tokens that spell on from them, the most likely one among those
  /// whose next byte is the most likely next byte (the probabilities summed
  /// over the tokens that begin with each byte). The target verifies bytes,
  /// or tokens that begin with them, so this is the choice it agrees with
  /// most, where the greedy token may be one of many that share its mass.
  int64_t chooseByBytes(const float *logits, std::string_view pending) const;
  /// The bias of a sampled proposal (draftVocab() entries): 0 for the
  /// draft's tokens the target has (spelled alike, or its EOS), -inf for
  /// the others. Sampled, the draft proposes from its distribution over
  /// those shared tokens alone (token-level intersection, Timor et al.
  /// 2025): each proposal is then one target token, drawn from a
  /// distribution the target's rejection sampling can weigh.
  void sharedBias(float *bias) const;
  /// Whether any draft token is shared (else sampled rounds propose
  /// nothing the target could accept).
  bool sharesTokens() const { return shared > 0; }
  /// Draws a sampled proposal from the draft's logits (biased by
  /// sharedBias) at `temperature` with `uniform` in [0, 1): returns the
  /// draft's token and writes its target token into `targetToken` and the
  /// distribution it was drawn from, in the target's vocabulary, into `q`
  /// (targetVocab() entries).
  int64_t drawShared(const float *logits, double temperature, double uniform,
                     int64_t &targetToken, float *q) const;
  /// Where a sampled draft's proposals to a target that reads bytes stand
  /// in a round: the bytes of the draft token being drawn so far (first
  /// the healed context's pending bytes), and how many proposals there are.
  struct ByteWalk {
    std::string token;
    size_t proposed = 0;
  };
  /// One draft step's proposals to a target that reads bytes, from the
  /// draft's logits at `temperature`: the draft's next token is drawn a
  /// byte at a time, each byte (a target token) from the draft's mass over
  /// the tokens that spell on from the bytes before it, and each
  /// distribution goes into `q` (count x targetVocab(), from walk.proposed
  /// on) as the target's rejection sampling needs. Before each byte after
  /// the first, whether the token ends there is drawn too (its own mass
  /// against that of the longer ones). Returns the token to feed the
  /// draft next, or -1 once `count` proposals are drawn (or EOS).
  /// `uniform` gives the draws.
  int64_t walkBytes(const float *logits, double temperature, ByteWalk &walk,
                    size_t count, const std::function<double()> &uniform,
                    int64_t *proposed, float *q, bool greedy = false) const;
  bool targetIsBytes() const { return targetReadsBytes; }
  size_t draftVocab() const { return draft.spellings.size(); }
  size_t targetVocab() const { return target.spellings.size(); }
  /// A new sequence's context in the draft's tokens.
  std::unique_ptr<DraftContext> newContext() const;
  int64_t draftBos() const { return draft.bos; }
  int64_t draftEos() const { return draft.eos; }

private:
  Vocabulary target, draft;
  Encoder encodeTarget, encodeDraft;
  /// Whether the target's tokens are bytes (no tokenizer.json).
  bool targetReadsBytes = false;
  /// Each draft token's target token spelled alike (-1: none; BOS is not
  /// proposed), and how many there are.
  std::vector<int32_t> toTarget;
  size_t shared = 0;
  /// The draft's spelled tokens sorted by their bytes (walkBytes' ranges).
  std::vector<int32_t> bySpelling;
  /// Which draft tokens each sampled proposer draws: the shared ones, and
  /// (walkBytes) the spelled ones and EOS when the target has one.
  std::vector<char> sharedMask, spelledMask;
};

} // namespace specrt

#endif // SPECRT_TOKENTRANSLATOR_H
