//===- Text.cpp - UTF-8 text and regular expressions for tokenizers -------===//

#include "Text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

using namespace specrt::tok;

size_t specrt::tok::utf8Length(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if (lead >= 0xF0)
    return 4;
  if (lead >= 0xE0)
    return 3;
  return lead >= 0xC0 ? 2 : 1;
}

char32_t specrt::tok::nextCodePoint(std::string_view s, size_t &i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  size_t n = utf8Length(b(0));
  char32_t c;
  switch (n) {
  case 1:
    c = b(0);
    break;
  case 2:
    c = (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
    break;
  case 3:
    c = (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
    break;
  default:
    c = (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 |
        (b(3) & 0x3F);
  }
  i += n;
  return c;
}

void specrt::tok::appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | c >> 6);
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | c >> 12);
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | c >> 18);
    out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// The WHATWG UTF-8 decoder (encoding.spec.whatwg.org, "UTF-8 decoder"),
// writing UTF-8 back out. It returns the number of bytes of `bytes` that form
// a valid prefix when `stopAtError` is set.
static size_t decodeUtf8(std::string_view bytes, std::string *out) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  size_t needed = 0, seen = 0, start = 0;
  unsigned char lower = 0x80, upper = 0xBF;
  for (size_t i = 0; i < bytes.size(); ++i) {
    unsigned char b = static_cast<unsigned char>(bytes[i]);
    if (needed == 0) {
      start = i;
      if (b <= 0x7F) {
        if (out)
          *out += static_cast<char>(b);
        continue;
      }
      if (b >= 0xC2 && b <= 0xDF) {
        needed = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0)
          lower = 0xA0;
        if (b == 0xED)
          upper = 0x9F;
        needed = 2;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0)
          lower = 0x90;
        if (b == 0xF4)
          upper = 0x8F;
        needed = 3;
      } else {
        if (!out)
          return i;
        *out += kReplacement;
      }
      continue;
    }
    if (b < lower || b > upper) {
      needed = seen = 0;
      lower = 0x80;
      upper = 0xBF;
      if (!out)
        return start;
      *out += kReplacement;
      --i; // the byte starts over
      continue;
    }
    lower = 0x80;
    upper = 0xBF;
    if (++seen == needed) {
      if (out)
        out->append(bytes.substr(start, needed + 1));
      needed = seen = 0;
    }
  }
  if (needed != 0) {
    if (!out)
      return start;
    *out += kReplacement;
  }
  return bytes.size();
}

std::string specrt::toValidUtf8(std::string_view bytes) {
  if (isValidUtf8(bytes))
    return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 8);
  decodeUtf8(bytes, &out);
  return out;
}

bool specrt::tok::isValidUtf8(std::string_view bytes) {
  return decodeUtf8(bytes, nullptr) == bytes.size();
}

static bool isJsSpace(char32_t c) {
  switch (c) {
  case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
  case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
  case 0x205F: case 0x3000: case 0xFEFF:
    return true;
  default:
    return c >= 0x2000 && c <= 0x200A;
  }
}

std::string_view specrt::tok::trimStart(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t next = i;
    if (!isJsSpace(nextCodePoint(s, next)))
      break;
    i = next;
  }
  return s.substr(i);
}

std::string_view specrt::tok::trimEnd(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && (static_cast<unsigned char>(s[begin]) & 0xC0) == 0x80)
      --begin;
    size_t at = begin;
    if (!isJsSpace(nextCodePoint(s, at)))
      break;
    end = begin;
  }
  return s.substr(0, end);
}

//===----------------------------------------------------------------------===//
// Regex
//===----------------------------------------------------------------------===//

Regex::Regex(Regex &&other) noexcept
    : code(other.code), matchData(other.matchData) {
  other.code = other.matchData = nullptr;
}

Regex &Regex::operator=(Regex &&other) noexcept {
  std::swap(code, other.code);
  std::swap(matchData, other.matchData);
  return *this;
}

Regex::~Regex() {
  pcre2_match_data_free(static_cast<pcre2_match_data *>(matchData));
  pcre2_code_free(static_cast<pcre2_code *>(code));
}

// Oniguruma's meaning of the shorthands that PCRE2 reads otherwise (or, for
// \h, as something else entirely).
static constexpr std::string_view kWordChars = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
static constexpr std::string_view kHexChars = "0-9A-Fa-f";

static bool translateOniguruma(std::string_view pattern, std::string &out,
                               std::string &error) {
  bool inClass = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char e = pattern[++i];
      switch (e) {
      case 's':
        out += "\\p{White_Space}";
        break;
      case 'S':
        out += "\\P{White_Space}";
        break;
      case 'w':
      case 'h':
      case 'W':
      case 'H': {
        bool negated = e == 'W' || e == 'H';
        if (inClass && negated) {
          error = std::string("'\\") + e + "' inside a character class is not supported";
          return false;
        }
        if (!inClass)
          out += negated ? "[^" : "[";
        out += e == 'w' || e == 'W' ? kWordChars : kHexChars;
        if (!inClass)
          out += ']';
        break;
      }
      default:
        out += '\\';
        out += e;
      }
      continue;
    }
    if (inClass) {
      if (c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
        size_t close = pattern.find(":]", i + 2);
        if (close == std::string_view::npos) {
          error = "unterminated POSIX class";
          return false;
        }
        out.append(pattern.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
      if (c == '[' || (c == '&' && i + 1 < pattern.size() && pattern[i + 1] == '&')) {
        error = "nested character classes and class intersections are not supported";
        return false;
      }
      if (c == ']')
        inClass = false;
      out += c;
      continue;
    }
    if (c == '[') {
      inClass = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^')
        out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']')
        out += pattern[++i];
      continue;
    }
    out += c;
  }
  return true;
}

static bool compileWith(std::string_view source, uint32_t options, void *&code,
                        void *&matchData, std::string &error) {
  pcre2_compile_context *context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code *compiled =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                    options | PCRE2_UTF, &errorCode, &errorOffset,
                    context);
  pcre2_compile_context_free(context);
  if (!compiled) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(errorCode, message, sizeof(message));
    error = std::string(reinterpret_cast<char *>(message)) + " at offset " +
            std::to_string(errorOffset);
    return false;
  }
  pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE); // falls back to the interpreter
  code = compiled;
  matchData = pcre2_match_data_create_from_pattern(compiled, nullptr);
  return true;
}

bool Regex::compile(std::string_view pattern, std::string &error) {
  std::string translated;
  if (!translateOniguruma(pattern, translated, error))
    return false;
  return compileWith(translated, PCRE2_UCP | PCRE2_MULTILINE, code, matchData, error);
}

bool Regex::compileLiteral(std::string_view text, std::string &error) {
  return compileWith(text, PCRE2_LITERAL, code, matchData, error);
}

uint32_t Regex::captureCount() const {
  uint32_t count = 0;
  pcre2_pattern_info(static_cast<pcre2_code *>(code), PCRE2_INFO_CAPTURECOUNT,
                     &count);
  return count;
}

bool Regex::find(std::string_view text, size_t from, size_t &begin,
                 size_t &end) const {
  auto *data = static_cast<pcre2_match_data *>(matchData);
  int rc = pcre2_match(static_cast<pcre2_code *>(code),
                       reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                       from, PCRE2_NO_UTF_CHECK, data, nullptr);
  if (rc < 0)
    return false; // no match, or a resource limit: both end the search
  PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(data);
  begin = ovector[0];
  end = ovector[1];
  return true;
}

std::string Regex::replaceAll(std::string_view text,
                              std::string_view content) const {
  std::string out;
  size_t last = 0;
  forEachMatch(text, [&](size_t begin, size_t end) {
    out.append(text.substr(last, begin - last));
    out.append(content);
    last = end;
  });
  out.append(text.substr(last));
  return out;
}
