//===- BPE.h - the byte-pair-encoding model of tokenizer.json ---*- C++ -*-===//
//
// Merges are applied lowest rank first, leftmost first among equal ranks
// (the order of the `tokenizers` crate and its JavaScript port), on
// interned symbols; results per pre-token are cached.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TOKENIZER_BPE_H
#define SPECRT_TOKENIZER_BPE_H

#include "Components.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace specrt::tok {

class BPEModel {
public:
  /// Reads tokenizer.json's `model` object; throws LoadError.
  explicit BPEModel(const Json &model, const std::string &path);

  /// Makes `content` token `id` (added tokens override the vocabulary).
  void addToken(const std::string &content, int32_t id);

  /// Appends the ids of the pre-tokens `words` to `ids`.
  void encode(const std::vector<std::string> &words, std::vector<int32_t> &ids) const;

  /// The id of token `content`, or -1.
  int32_t idOf(std::string_view content) const;
  /// The content of token `id`, or null.
  const std::string *tokenOf(int32_t id) const;
  /// One past the largest id.
  size_t size() const { return idToToken.size(); }
  /// What the model appends to each word's last symbol (empty: nothing).
  const std::string &endOfWordSuffix() const { return wordSuffix; }

private:
  void encodeWord(const std::string &word, std::vector<int32_t> &ids) const;
  /// Appends the ids of a merged piece: its symbol's token, an added
  /// token's, its bytes' (byte fallback) or the unknown token's.
  void appendPiece(uint32_t symbol, std::string_view text,
                   std::vector<int32_t> &ids) const;
  uint32_t symbolOf(std::string_view text) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> tokenToId;
  std::vector<std::string> idToToken;

  // Merge symbols: every string a merge reads or makes, interned.
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> symbols;
  std::vector<int32_t> symbolToken; // symbol -> token id, or -1
  struct Merge {
    uint32_t rank, result;
  };
  std::unordered_map<uint64_t, Merge> merges;

  std::string unkToken;
  int32_t unkId = -1;
  bool fuseUnk = false, byteFallback = false, ignoreMerges = false;
  std::string wordSuffix;
  int32_t byteTokens[256];

  mutable std::mutex cacheMutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;
};

} // namespace specrt::tok

#endif // SPECRT_TOKENIZER_BPE_H
