//===- Components.cpp - tokenizer.json's normalizers, pre-tokenizers, decoders -===//

#include "Components.h"
#include "Text.h"

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include <array>
#include <cstdlib>

using namespace specrt::tok;

//===----------------------------------------------------------------------===//
// JSON access with paths
//===----------------------------------------------------------------------===//

static std::string typeOf(const Json &json, const std::string &path) {
  if (!json.is_object())
    throw LoadError(path, "expected an object");
  auto type = json.find("type");
  if (type == json.end() || !type->is_string())
    throw LoadError(path + ".type", "missing");
  return type->get<std::string>();
}

bool specrt::tok::boolOr(const Json &json, const char *key, bool otherwise,
                         const std::string &path) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null())
    return otherwise;
  if (!it->is_boolean())
    throw LoadError(path + "." + key, "expected true or false");
  return it->get<bool>();
}

std::string specrt::tok::stringOr(const Json &json, const char *key,
                                  const std::string &otherwise, const std::string &path) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null())
    return otherwise;
  if (!it->is_string())
    throw LoadError(path + "." + key, "expected a string");
  return it->get<std::string>();
}

static const Json &arrayAt(const Json &json, const char *key, const std::string &path) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_array())
    throw LoadError(path + "." + key, "expected an array");
  return *it;
}

static std::string unsupported(const std::string &kind, const std::string &type) {
  return "the " + kind + " '" + type + "' is not supported";
}

namespace {
/// A `pattern` member: {"String": literal} or {"Regex": Oniguruma pattern}.
struct Pattern {
  Regex regex;
  bool isLiteral = false;
  std::string literal;

  std::string replaceAll(std::string_view text, std::string_view content) const {
    if (!isLiteral)
      return regex.replaceAll(text, content);
    std::string out;
    size_t last = 0;
    for (size_t at = literal.empty() ? std::string_view::npos : text.find(literal);
         at != std::string_view::npos; at = text.find(literal, last)) {
      out.append(text.substr(last, at - last));
      out.append(content);
      last = at + literal.size();
    }
    out.append(text.substr(last));
    return out;
  }
};
} // namespace

static Pattern buildPattern(const Json &json, const std::string &path) {
  auto it = json.find("pattern");
  if (it == json.end() || !it->is_object())
    throw LoadError(path + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
  Pattern pattern;
  std::string error;
  if (auto s = it->find("String"); s != it->end() && s->is_string()) {
    pattern.isLiteral = true;
    pattern.literal = s->get<std::string>();
    if (!pattern.regex.compileLiteral(pattern.literal, error))
      throw LoadError(path + ".pattern.String", error);
    return pattern;
  }
  if (auto r = it->find("Regex"); r != it->end() && r->is_string()) {
    if (!pattern.regex.compile(r->get<std::string>(), error))
      throw LoadError(path + ".pattern.Regex", error);
    return pattern;
  }
  throw LoadError(path + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
}

//===----------------------------------------------------------------------===//
// Normalizers
//===----------------------------------------------------------------------===//

namespace {
struct SequenceNormalizer : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> steps;
  std::string normalize(std::string_view text) const override {
    std::string out(text);
    for (const auto &step : steps)
      out = step->normalize(out);
    return out;
  }
};

struct UnicodeNormalizer : Normalizer {
  int options;
  explicit UnicodeNormalizer(int options) : options(options) {}
  std::string normalize(std::string_view text) const override {
    bool ascii = true;
    for (char c : text)
      ascii &= static_cast<unsigned char>(c) < 0x80;
    if (ascii) // every normal form of ASCII text is itself
      return std::string(text);
    utf8proc_uint8_t *mapped = nullptr;
    utf8proc_ssize_t n = utf8proc_map(
        reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
        static_cast<utf8proc_ssize_t>(text.size()), &mapped,
        static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
    if (n < 0)
      return std::string(text); // unreachable for valid UTF-8
    std::string out(reinterpret_cast<char *>(mapped), static_cast<size_t>(n));
    std::free(mapped);
    return out;
  }
};

struct ReplaceNormalizer : Normalizer {
  Pattern pattern;
  std::string content;
  std::string normalize(std::string_view text) const override {
    return pattern.replaceAll(text, content);
  }
};

struct PrependNormalizer : Normalizer {
  std::string prefix;
  std::string normalize(std::string_view text) const override {
    std::string out = prefix;
    out += text;
    return out;
  }
};

struct StripNormalizer : Normalizer {
  bool left, right;
  std::string normalize(std::string_view text) const override {
    if (left)
      text = trimStart(text);
    if (right)
      text = trimEnd(text);
    return std::string(text);
  }
};

/// Per-code-point mappings (Lowercase: the simple lowercase mapping;
/// StripAccents: drop combining marks).
struct CodePointNormalizer : Normalizer {
  bool lowercase;
  explicit CodePointNormalizer(bool lowercase) : lowercase(lowercase) {}
  std::string normalize(std::string_view text) const override {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      char32_t c = nextCodePoint(text, i);
      if (lowercase) {
        appendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
        continue;
      }
      utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
      if (category != UTF8PROC_CATEGORY_MN && category != UTF8PROC_CATEGORY_MC &&
          category != UTF8PROC_CATEGORY_ME)
        appendUtf8(out, c);
    }
    return out;
  }
};
} // namespace

std::unique_ptr<Normalizer> specrt::tok::buildNormalizer(const Json &json,
                                                         const std::string &path) {
  if (json.is_null())
    return nullptr;
  std::string type = typeOf(json, path);
  if (type == "Sequence") {
    auto sequence = std::make_unique<SequenceNormalizer>();
    const Json &steps = arrayAt(json, "normalizers", path);
    for (size_t i = 0; i < steps.size(); ++i)
      if (auto step = buildNormalizer(steps[i], path + ".normalizers[" + std::to_string(i) + "]"))
        sequence->steps.push_back(std::move(step));
    return sequence;
  }
  if (type == "NFC")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_COMPOSE);
  if (type == "NFD")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_DECOMPOSE);
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  if (type == "Replace") {
    auto replace = std::make_unique<ReplaceNormalizer>();
    replace->pattern = buildPattern(json, path);
    replace->content = stringOr(json, "content", "", path);
    return replace;
  }
  if (type == "Prepend") {
    auto prepend = std::make_unique<PrependNormalizer>();
    prepend->prefix = stringOr(json, "prepend", "", path);
    return prepend;
  }
  if (type == "Strip") {
    auto strip = std::make_unique<StripNormalizer>();
    strip->left = boolOr(json, "strip_left", false, path);
    strip->right = boolOr(json, "strip_right", false, path);
    return strip;
  }
  if (type == "Lowercase")
    return std::make_unique<CodePointNormalizer>(true);
  if (type == "StripAccents")
    return std::make_unique<CodePointNormalizer>(false);
  throw LoadError(path + ".type", unsupported("normalizer", type));
}

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

void PreTokenizer::splitAll(std::vector<std::string> &pieces, size_t section) const {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (const std::string &piece : pieces)
    split(piece, section, out);
  pieces = std::move(out);
}

const std::string &specrt::tok::byteLevelChar(unsigned char b) {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    int extra = 0;
    for (int byte = 0; byte < 256; ++byte) {
      bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                       (byte >= 0xAE && byte <= 0xFF);
      appendUtf8(t[byte], printable ? byte : 256 + extra++);
    }
    return t;
  }();
  return table[b];
}

namespace {
struct SequencePreTokenizer : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  void split(std::string_view piece, size_t section,
             std::vector<std::string> &out) const override {
    std::vector<std::string> pieces{std::string(piece)};
    for (const auto &step : steps)
      step->splitAll(pieces, section);
    for (std::string &p : pieces)
      out.push_back(std::move(p));
  }
};

struct SplitPreTokenizer : PreTokenizer {
  Pattern pattern;
  bool invert = false, removed = false;
  void split(std::string_view piece, size_t,
             std::vector<std::string> &out) const override {
    size_t last = 0;
    pattern.regex.forEachMatch(piece, [&](size_t begin, size_t end) {
      if (invert) { // the matches are the pieces
        if (end > begin)
          out.emplace_back(piece.substr(begin, end - begin));
        return;
      }
      if (begin > last)
        out.emplace_back(piece.substr(last, begin - last));
      if (end > begin && !removed)
        out.emplace_back(piece.substr(begin, end - begin));
      last = end;
    });
    if (!invert && last < piece.size())
      out.emplace_back(piece.substr(last));
  }
};

struct ByteLevelPreTokenizer : PreTokenizer {
  bool addPrefixSpace = false;
  bool useRegex = true;
  Regex gpt2;
  static void append(std::string_view text, std::vector<std::string> &out) {
    std::string mapped;
    mapped.reserve(text.size() * 2);
    for (char c : text)
      mapped += byteLevelChar(static_cast<unsigned char>(c));
    out.push_back(std::move(mapped));
  }
  void split(std::string_view piece, size_t,
             std::vector<std::string> &out) const override {
    std::string prefixed;
    if (addPrefixSpace && (piece.empty() || piece[0] != ' ')) {
      prefixed.reserve(piece.size() + 1);
      prefixed += ' ';
      prefixed += piece;
      piece = prefixed;
    }
    if (!useRegex)
      return append(piece, out);
    gpt2.forEachMatch(piece, [&](size_t begin, size_t end) {
      append(piece.substr(begin, end - begin), out);
    });
  }
};

struct DigitsPreTokenizer : PreTokenizer {
  bool individual = false;
  void split(std::string_view piece, size_t,
             std::vector<std::string> &out) const override {
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    for (size_t i = 0; i < piece.size();) {
      size_t j = i + 1;
      if (digit(piece[i])) {
        if (!individual)
          while (j < piece.size() && digit(piece[j]))
            ++j;
      } else {
        while (j < piece.size() && !digit(piece[j]))
          ++j;
      }
      out.emplace_back(piece.substr(i, j - i));
      i = j;
    }
  }
};

struct MetaspacePreTokenizer : PreTokenizer {
  std::string replacement;
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  void split(std::string_view piece, size_t section,
             std::vector<std::string> &out) const override {
    std::string text;
    for (char c : piece) {
      if (c == ' ')
        text += replacement;
      else
        text += c;
    }
    bool starts = text.compare(0, replacement.size(), replacement) == 0;
    if (!starts && (prepend == Prepend::Always || (prepend == Prepend::First && section == 0)))
      text = replacement + text;
    out.push_back(std::move(text));
  }
};
} // namespace

std::unique_ptr<PreTokenizer> specrt::tok::buildPreTokenizer(const Json &json,
                                                             const std::string &path) {
  if (json.is_null())
    return nullptr;
  std::string type = typeOf(json, path);
  std::string error;
  if (type == "Sequence") {
    auto sequence = std::make_unique<SequencePreTokenizer>();
    const Json &steps = arrayAt(json, "pretokenizers", path);
    for (size_t i = 0; i < steps.size(); ++i)
      if (auto step = buildPreTokenizer(steps[i], path + ".pretokenizers[" + std::to_string(i) + "]"))
        sequence->steps.push_back(std::move(step));
    return sequence;
  }
  if (type == "Split") {
    auto split = std::make_unique<SplitPreTokenizer>();
    split->pattern = buildPattern(json, path);
    split->invert = boolOr(json, "invert", false, path);
    std::string behavior = stringOr(json, "behavior", "Isolated", path);
    if (behavior == "Removed") {
      // JavaScript's String.split would also return the capture groups.
      if (split->pattern.regex.captureCount() != 0)
        throw LoadError(path + ".pattern", "a 'Removed' split pattern with capture groups is not supported");
      if (split->pattern.isLiteral)
        throw LoadError(path + ".behavior", "'Removed' with a String pattern is not supported");
      split->removed = true;
    } else if (behavior != "Isolated") {
      throw LoadError(path + ".behavior", "the split behavior '" + behavior +
                                               "' is not supported (Isolated and Removed are)");
    }
    return split;
  }
  if (type == "ByteLevel") {
    auto byteLevel = std::make_unique<ByteLevelPreTokenizer>();
    byteLevel->addPrefixSpace = boolOr(json, "add_prefix_space", false, path);
    byteLevel->useRegex = boolOr(json, "use_regex", true, path);
    if (byteLevel->useRegex &&
        !byteLevel->gpt2.compile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
                                 error))
      throw LoadError(path, error);
    return byteLevel;
  }
  if (type == "Digits") {
    auto digits = std::make_unique<DigitsPreTokenizer>();
    digits->individual = boolOr(json, "individual_digits", false, path);
    return digits;
  }
  if (type == "Metaspace") {
    // The Rust crate splits on the replacement when `split` is true (its
    // default); the JavaScript port never does, so only split: false is taken.
    if (boolOr(json, "split", true, path))
      throw LoadError(path + ".split", "a Metaspace pre-tokenizer that splits is not supported (set \"split\": false)");
    auto metaspace = std::make_unique<MetaspacePreTokenizer>();
    metaspace->replacement = stringOr(json, "replacement", "\xE2\x96\x81", path);
    std::string scheme = stringOr(json, "prepend_scheme", "always", path);
    if (scheme == "first")
      metaspace->prepend = MetaspacePreTokenizer::Prepend::First;
    else if (scheme == "never")
      metaspace->prepend = MetaspacePreTokenizer::Prepend::Never;
    else if (scheme != "always")
      throw LoadError(path + ".prepend_scheme", "expected always, first or never");
    return metaspace;
  }
  throw LoadError(path + ".type", unsupported("pre-tokenizer", type));
}

//===----------------------------------------------------------------------===//
// Decoders
//===----------------------------------------------------------------------===//

namespace {
struct SequenceDecoder : Decoder {
  std::vector<std::unique_ptr<Decoder>> steps;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (const auto &step : steps)
      step->decodeChain(tokens);
  }
  void spell(std::string &piece) const override {
    for (const auto &step : steps)
      step->spell(piece);
  }
};

struct ByteLevelDecoder : Decoder {
  const std::unordered_set<std::string> *addedContents;
  std::array<int, 324> byteOf; // code point -> byte, -1 when none

  ByteLevelDecoder() {
    byteOf.fill(-1);
    for (int b = 0; b < 256; ++b) {
      size_t i = 0;
      byteOf[nextCodePoint(byteLevelChar(static_cast<unsigned char>(b)), i)] = b;
    }
  }
  std::string toBytes(const std::string &symbols) const {
    std::string bytes;
    for (size_t i = 0; i < symbols.size();) {
      char32_t c = nextCodePoint(symbols, i);
      // As the reference, a character outside the table decodes to a 0 byte.
      bytes += static_cast<char>(c < byteOf.size() && byteOf[c] >= 0 ? byteOf[c] : 0);
    }
    return bytes;
  }
  std::string toText(const std::string &symbols) const {
    return specrt::toValidUtf8(toBytes(symbols));
  }
  void spell(std::string &piece) const override {
    if (!addedContents || !addedContents->count(piece))
      piece = toBytes(piece);
  }
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    std::string run;
    bool inRun = false;
    for (std::string &token : tokens) {
      if (addedContents && addedContents->count(token)) {
        if (inRun)
          out.push_back(toText(run));
        run.clear();
        inRun = false;
        out.push_back(std::move(token));
      } else {
        run += token;
        inRun = true;
      }
    }
    if (inRun)
      out.push_back(toText(run));
    tokens = std::move(out);
  }
};

struct MetaspaceDecoder : Decoder {
  std::string replacement;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      spell(tokens[i]);
      if (i == 0 && !tokens[i].empty() && tokens[i][0] == ' ')
        tokens[i].erase(0, 1);
    }
  }
  void spell(std::string &piece) const override {
    std::string text;
    size_t last = 0;
    for (size_t at = piece.find(replacement); at != std::string::npos && !replacement.empty();
         at = piece.find(replacement, last)) {
      text.append(piece, last, at - last);
      text += ' ';
      last = at + replacement.size();
    }
    text.append(piece, last);
    piece = std::move(text);
  }
};

struct ReplaceDecoder : Decoder {
  Pattern pattern;
  std::string content;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens)
      spell(token);
  }
  void spell(std::string &piece) const override { piece = pattern.replaceAll(piece, content); }
};

struct ByteFallbackDecoder : Decoder {
  // "<0xAB>" -> 0xAB. Like the reference's parseInt, the hex digits are read
  // as far as they go ("<0x4G>" is 4).
  static int byteOf(const std::string &token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
      return -1;
    auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0'
             : c >= 'a' && c <= 'f' ? c - 'a' + 10
             : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    };
    int high = hex(token[3]), low = hex(token[4]);
    if (high < 0)
      return -1;
    return low < 0 ? high : high * 16 + low;
  }
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    for (std::string &token : tokens) {
      int b = byteOf(token);
      if (b >= 0) {
        bytes += static_cast<char>(b);
        continue;
      }
      if (!bytes.empty())
        out.push_back(specrt::toValidUtf8(bytes));
      bytes.clear();
      out.push_back(std::move(token));
    }
    if (!bytes.empty())
      out.push_back(specrt::toValidUtf8(bytes));
    tokens = std::move(out);
  }
  void spell(std::string &piece) const override {
    if (int b = byteOf(piece); b >= 0)
      piece.assign(1, static_cast<char>(b));
  }
};

struct FuseDecoder : Decoder {
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string all;
    for (const std::string &token : tokens)
      all += token;
    tokens.assign(1, std::move(all));
  }
};

struct StripDecoder : Decoder {
  std::string content; // one character
  size_t start = 0, stop = 0;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) {
      std::string_view view(token);
      for (size_t i = 0; i < start && view.compare(0, content.size(), content) == 0 &&
                         view.size() >= content.size();
           ++i)
        view.remove_prefix(content.size());
      for (size_t i = 0; i < stop && view.size() >= content.size() &&
                         view.compare(view.size() - content.size(), content.size(), content) == 0;
           ++i)
        view.remove_suffix(content.size());
      token = std::string(view);
    }
  }
};
} // namespace

static size_t countOr(const Json &json, const char *key, const std::string &path) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null())
    return 0;
  if (!it->is_number_unsigned())
    throw LoadError(path + "." + key, "expected a count");
  return it->get<size_t>();
}

std::unique_ptr<Decoder> specrt::tok::buildDecoder(const Json &json, const std::string &path,
                                                   const ComponentContext &context) {
  if (json.is_null())
    return nullptr;
  std::string type = typeOf(json, path);
  if (type == "Sequence") {
    auto sequence = std::make_unique<SequenceDecoder>();
    const Json &steps = arrayAt(json, "decoders", path);
    for (size_t i = 0; i < steps.size(); ++i)
      if (auto step = buildDecoder(steps[i], path + ".decoders[" + std::to_string(i) + "]", context))
        sequence->steps.push_back(std::move(step));
    return sequence;
  }
  if (type == "ByteLevel") {
    auto byteLevel = std::make_unique<ByteLevelDecoder>();
    byteLevel->addedContents = context.addedContents;
    return byteLevel;
  }
  if (type == "Metaspace") {
    if (stringOr(json, "prepend_scheme", "always", path) == "never")
      throw LoadError(path + ".prepend_scheme", "a Metaspace decoder with prepend_scheme 'never' is not supported");
    auto metaspace = std::make_unique<MetaspaceDecoder>();
    metaspace->replacement = stringOr(json, "replacement", "\xE2\x96\x81", path);
    return metaspace;
  }
  if (type == "Replace") {
    auto replace = std::make_unique<ReplaceDecoder>();
    replace->pattern = buildPattern(json, path);
    replace->content = stringOr(json, "content", "", path);
    return replace;
  }
  if (type == "ByteFallback")
    return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse")
    return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    auto strip = std::make_unique<StripDecoder>();
    strip->content = stringOr(json, "content", " ", path);
    size_t i = 0;
    if (strip->content.empty() ||
        (nextCodePoint(strip->content, i), i != strip->content.size()))
      throw LoadError(path + ".content", "expected one character");
    strip->start = countOr(json, "start", path);
    strip->stop = countOr(json, "stop", path);
    return strip;
  }
  throw LoadError(path + ".type", unsupported("decoder", type));
}
