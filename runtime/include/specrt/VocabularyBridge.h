//===- VocabularyBridge.h - tokens of two vocabularies that agree -*- C++ -*-===//
//
// Part of the Specula runtime. A draft with another tokenizer than its
// target's proposes in its own tokens; the bridge says which of them the
// target has, spelled alike, and the draft's context follows the committed
// text in the draft's own tokens (docs/cross-tokenizer.md).
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_VOCABULARYBRIDGE_H
#define SPECRT_VOCABULARYBRIDGE_H

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace specrt {

class Tokenizer;

/// A vocabulary as the bytes each token stands for. Special tokens spell
/// nothing; BOS and EOS correspond by role.
struct Vocabulary {
  std::vector<std::string> spellings;
  /// Whether spellings[id] is what token id stands for (false: special).
  std::vector<char> spelled;
  int32_t bos = -1, eos = -1;

  /// `size` ids of which 0-255 are the bytes (the example models').
  static Vocabulary byteLevel(size_t size, int32_t bos, int32_t eos);
  /// `size` ids (the model's, at least the tokenizer's) spelled by
  /// `tokenizer`.
  static Vocabulary of(const Tokenizer &tokenizer, size_t size, int32_t bos, int32_t eos);
};

/// Each draft token's target token with the same bytes, and how many have
/// one.
struct VocabularyBridge {
  /// toTarget[draft id]: the target id, -1 where the target has none.
  std::vector<int32_t> toTarget;
  size_t mapped = 0;

  static VocabularyBridge build(const Vocabulary &draft, const Vocabulary &target);
};

/// The ids of a text in one tokenizer.
using Encoder = std::function<std::vector<int32_t>(std::string_view)>;

/// A sequence's committed text in the draft's tokens, kept up to date as
/// the target commits bytes: the tail is tokenized again from a token a few
/// back, since a token may merge across the old end (" x" + "y" -> " xy").
class DraftContext {
public:
  DraftContext(Encoder encode, const Vocabulary &draft, size_t window = 4)
      : encode(std::move(encode)), vocabulary(&draft), window(window) {}

  /// Appends `bytes` to the text; returns how many of the previous ids the
  /// new tokenization keeps (the draft's cache is valid up to there). A
  /// UTF-8 character not yet whole at the end waits for its other bytes.
  size_t append(std::string_view bytes);
  const std::vector<int32_t> &ids() const { return tokens; }
  /// The byte offset in text() where token i ends.
  size_t endOf(size_t i) const { return ends[i]; }
  const std::string &text() const { return committed; }

private:
  Encoder encode;
  const Vocabulary *vocabulary;
  size_t window;
  std::string committed;
  std::vector<int32_t> tokens;
  /// ends[i]: the byte offset in `committed` where tokens[i] ends.
  std::vector<size_t> ends;
  /// Whether the tokens spell the text they were made of (so `ends` hold).
  bool spelledExactly = true;
};

} // namespace specrt

#endif // SPECRT_VOCABULARYBRIDGE_H
