//===- Components.h - tokenizer.json's normalizers, pre-tokenizers, decoders -*- C++ -*-===//
//
// Each component of a tokenizer.json pipeline, built from its JSON object.
// The semantics follow Hugging Face's tokenizers (the Rust crate the files
// are written for) as its JavaScript port @huggingface/tokenizers implements
// them; a component or option that the two read differently, or that is not
// implemented, is refused at load time with its JSON path.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TOKENIZER_COMPONENTS_H
#define SPECRT_TOKENIZER_COMPONENTS_H

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace specrt::tok {

using Json = nlohmann::json;

/// A refusal at load time: "PATH: MESSAGE".
struct LoadError : std::runtime_error {
  LoadError(const std::string &path, const std::string &message)
      : std::runtime_error(path + ": " + message) {}
};

/// Member `key` of object `json` (at `path`): `otherwise` when absent or
/// null; LoadError when of another type.
bool boolOr(const Json &json, const char *key, bool otherwise, const std::string &path);
std::string stringOr(const Json &json, const char *key, const std::string &otherwise,
                     const std::string &path);

struct Normalizer {
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
};

struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  /// Appends the pre-tokens of `piece` to `out`; `section` is the index of
  /// the text section (between added tokens) the piece comes from.
  virtual void split(std::string_view piece, size_t section,
                     std::vector<std::string> &out) const = 0;
  /// Applies split to every piece.
  void splitAll(std::vector<std::string> &pieces, size_t section) const;
};

struct Decoder {
  virtual ~Decoder() = default;
  /// Rewrites the token strings in place (possibly fusing them).
  virtual void decodeChain(std::vector<std::string> &tokens) const = 0;
  /// Rewrites one vocabulary piece into the bytes it stands for wherever it
  /// appears: decodeChain's rules for a token in the middle of a text, with
  /// no UTF-8 repair and no first-token or end trimming.
  virtual void spell(std::string &piece) const { (void)piece; }
};

/// What a component needs to know about the tokenizer around it.
struct ComponentContext {
  /// The contents of every added token (the ByteLevel decoder passes them
  /// through untouched).
  const std::unordered_set<std::string> *addedContents = nullptr;
};

/// Builders; each returns null for a JSON null and throws LoadError.
std::unique_ptr<Normalizer> buildNormalizer(const Json &json, const std::string &path);
std::unique_ptr<PreTokenizer> buildPreTokenizer(const Json &json, const std::string &path);
std::unique_ptr<Decoder> buildDecoder(const Json &json, const std::string &path,
                                      const ComponentContext &context);

/// The byte-to-character table of byte-level BPE (GPT-2's bytes_to_unicode):
/// the UTF-8 encoding of the character byte `b` stands for.
const std::string &byteLevelChar(unsigned char b);

} // namespace specrt::tok

#endif // SPECRT_TOKENIZER_COMPONENTS_H
