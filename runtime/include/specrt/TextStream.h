//===- TextStream.h - the text tokens add, as they arrive --------*- C++ -*-===//
//
// Part of the Specula runtime, a C++ helper over its C API for those who
// stream text (spec-run, spec-serve). Turns a generation's tokens into text
// piece by piece:
// decoded in a window of the last tokens (as vLLM does; a tokenizer's
// decoder may treat a token differently after another), held back while it
// ends in an incomplete UTF-8 character or U+FFFD (a byte-fallback
// character whose other bytes are still to come), and cut before the first
// stop string (OpenAI's `stop`), holding back what may be a stop string's
// beginning. The streamed pieces add up to the text a whole response has.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TEXTSTREAM_H
#define SPECRT_TEXTSTREAM_H

#include "specrt/specrt.h"

#include <cstdint>
#include <string>
#include <vector>

namespace specrt {

class TextStream {
public:
  TextStream(const specrt_model *model, const std::vector<int64_t> &prompt,
             std::vector<std::string> stops = {});

  /// Adds a generated token; returns the text that can be sent now.
  std::string push(int64_t token);
  /// At the end of generation: the text still held back.
  std::string finish();

  /// Whether a stop string matched (nothing more is released).
  bool stopped() const { return stopped_; }
  /// Generated tokens pushed, up to the one that completed a stop string.
  size_t tokens() const { return tokens_.size() - promptTokens_; }

private:
  std::string decode(size_t from, size_t to) const;
  /// The text of the tokens past the read offset, when it is complete.
  std::string advance(bool final);
  std::string release(std::string added, bool final);

  const specrt_model *model_;
  std::vector<std::string> stops_;
  std::vector<int64_t> tokens_; ///< the prompt, then the generated tokens
  size_t promptTokens_, prefixOffset_, readOffset_;
  std::string held_; ///< decoded, not yet released: a stop string may start
  bool stopped_ = false;
};

/// Whether `text` ends in an incomplete UTF-8 character or U+FFFD.
bool endsUnfinished(const std::string &text);

} // namespace specrt

#endif // SPECRT_TEXTSTREAM_H
