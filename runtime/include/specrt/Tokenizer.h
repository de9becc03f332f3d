//===- Tokenizer.h - Hugging Face tokenizer.json, in C++ ---------*- C++ -*-===//
//
// Part of the Specula runtime. Reads the tokenizer.json files that Hugging
// Face models ship (a BPE model with its normalizers, pre-tokenizers, added
// tokens, post-processor and decoders) and encodes and decodes text as the
// `tokenizers` library does; docs/tokenizers.md says what is supported and
// how it is checked against the reference.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TOKENIZER_H
#define SPECRT_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specrt {

class Tokenizer {
public:
  /// Loads `path` (a tokenizer.json) and, when present beside it,
  /// tokenizer_config.json. On failure returns null with `error` naming the
  /// file and the JSON path of what is wrong or unsupported.
  static std::unique_ptr<Tokenizer> load(const std::string &path, std::string &error);
  /// The same from the files' contents (`config` may be empty).
  static std::unique_ptr<Tokenizer> parse(std::string_view tokenizerJson,
                                          std::string_view configJson, std::string &error);
  ~Tokenizer();

  /// The canonical form of a tokenizer.json's text, which its fingerprint
  /// (SHA-256, the contract's tokenizer_sha256) is taken of: the parsed JSON
  /// printed with sorted keys, no whitespace and unescaped UTF-8. False with
  /// `error` when `json` is not JSON.
  static bool canonicalJson(std::string_view json, std::string &canonical,
                            std::string &error);

  /// The ids of `text` (bytes; ill-formed UTF-8 reads as U+FFFD). With
  /// `addSpecialTokens` the post-processor adds its special tokens (BOS...).
  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens = false) const;

  /// The text of `ids`; false with `error` for an id outside the vocabulary.
  bool decode(const std::vector<int32_t> &ids, bool skipSpecialTokens, std::string &text,
              std::string &error) const;

  /// The vocabulary's spelling of token `id` (its piece), or null.
  const std::string *piece(int32_t id) const;
  /// The id of the token spelled `content` in the vocabulary, or -1.
  int32_t idOf(std::string_view content) const;
  /// One past the largest token id.
  size_t vocabSize() const;
  /// Whether `id` is an added token marked special.
  bool isSpecial(int32_t id) const;
  /// The bytes token `id` stands for wherever it appears in a text (its
  /// piece through the decoders, without UTF-8 repair or the trimming some
  /// decoders do at a text's start); false for a special token or an id
  /// outside the vocabulary.
  bool spell(int32_t id, std::string &bytes) const;

private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// `bytes` with each ill-formed UTF-8 subsequence replaced by U+FFFD (one
/// per maximal subpart, as the WHATWG decoder and the tokenizer do).
std::string toValidUtf8(std::string_view bytes);

} // namespace specrt

#endif // SPECRT_TOKENIZER_H
