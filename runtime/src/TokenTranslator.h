//===- TokenTranslator.h - a cross-tokenizer draft's tokens ------*- C++ -*-===//
//
// A draft with another tokenizer than its target's proposes in its own
// tokens. Between batched rounds the runtime spells them and tokenizes the
// text again in the target's tokens, which the target verifies; and it keeps
// each sequence's committed text in the draft's tokens (DraftContext). The
// tokenizers live here, in the runtime, which is why these rounds run from
// the runtime's batch and not inside one compiled loop
// (docs/cross-tokenizer.md).
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TOKENTRANSLATOR_H
#define SPECRT_TOKENTRANSLATOR_H

#include "specrt/VocabularyBridge.h"

#include <cstdint>
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

  /// The text of target tokens (special tokens spell nothing).
  std::string spellTarget(const int64_t *tokens, size_t count) const;
  /// The target's tokens of the text the draft's `proposed` tokens spell
  /// after `pending` (committed bytes the draft's context left out, which
  /// its first proposals spell again), up to the draft's EOS (which becomes
  /// the target's).
  std::vector<int32_t> translation(const std::vector<int64_t> &proposed,
                                   std::string_view pending) const;
  /// Whether `proposed` translates into at least `count` target tokens (or
  /// reaches the draft's EOS): by their bytes where they are too few, or
  /// the target reads bytes, else by their translation.
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
  size_t draftVocab() const { return draft.spellings.size(); }
  /// A new sequence's context in the draft's tokens.
  std::unique_ptr<DraftContext> newContext() const;
  int64_t draftBos() const { return draft.bos; }

private:
  Vocabulary target, draft;
  Encoder encodeTarget, encodeDraft;
  /// Whether the target's tokens are bytes (no tokenizer.json).
  bool targetReadsBytes = false;
};

} // namespace specrt

#endif // SPECRT_TOKENTRANSLATOR_H
