//===- Text.h - UTF-8 text and regular expressions for tokenizers -*- C++ -*-===//
//
// The text model the tokenizer works in: valid UTF-8 strings, code points read
// from them, and regular expressions with Oniguruma's meaning (the engine the
// `tokenizers` crate compiles tokenizer.json patterns with) run by PCRE2.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_TOKENIZER_TEXT_H
#define SPECRT_TOKENIZER_TEXT_H

#include "specrt/Tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace specrt::tok {

/// The next code point of valid UTF-8 `s` at `i`; advances `i`.
char32_t nextCodePoint(std::string_view s, size_t &i);
/// Appends `c` to `out` as UTF-8.
void appendUtf8(std::string &out, char32_t c);
/// The length in bytes of the UTF-8 sequence that starts with `lead`.
size_t utf8Length(unsigned char lead);

// specrt::toValidUtf8 (Tokenizer.h) repairs ill-formed UTF-8 as the WHATWG
// Encoding Standard's decoder (and so JavaScript's TextDecoder) does: one
// U+FFFD per maximal subpart.

/// Whether `bytes` is well-formed UTF-8.
bool isValidUtf8(std::string_view bytes);

/// JavaScript's String.prototype.trimStart / trimEnd (WhiteSpace and
/// LineTerminator), which added tokens' lstrip/rstrip follow.
std::string_view trimStart(std::string_view s);
std::string_view trimEnd(std::string_view s);

/// A compiled pattern. Oniguruma's shorthands are rewritten to the Unicode
/// properties they mean there (`\s` is White_Space, which PCRE2's `\s` is
/// not quite: it lacks U+0085; `\w` is Alphabetic, marks, decimal digits and
/// connector punctuation), then the pattern is compiled with PCRE2's UTF and
/// UCP modes and JIT.
class Regex {
public:
  Regex() = default;
  Regex(Regex &&other) noexcept;
  Regex &operator=(Regex &&other) noexcept;
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;
  ~Regex();

  /// Compiles an Oniguruma `pattern`; on failure returns false with `error`.
  bool compile(std::string_view pattern, std::string &error);
  /// Compiles `text` as a literal string.
  bool compileLiteral(std::string_view text, std::string &error);
  /// The number of capturing groups.
  uint32_t captureCount() const;

  /// Calls `onMatch(begin, end)` for every match in `text` (valid UTF-8),
  /// left to right, as JavaScript's matchAll does: after an empty match the
  /// search resumes one code point further.
  template <typename F> void forEachMatch(std::string_view text, F &&onMatch) const {
    size_t at = 0, begin, end;
    while (at <= text.size() && find(text, at, begin, end)) {
      onMatch(begin, end);
      at = end > begin ? end
                       : (begin < text.size()
                              ? begin + utf8Length(static_cast<unsigned char>(text[begin]))
                              : text.size() + 1);
    }
  }
  /// `text` with every match replaced by `content`.
  std::string replaceAll(std::string_view text, std::string_view content) const;

private:
  bool find(std::string_view text, size_t from, size_t &begin, size_t &end) const;

  void *code = nullptr;      // pcre2_code_8
  void *matchData = nullptr; // pcre2_match_data_8
};

} // namespace specrt::tok

#endif // SPECRT_TOKENIZER_TEXT_H
