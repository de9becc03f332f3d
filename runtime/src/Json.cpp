//===- Json.cpp - the small JSON reader the manifest needs ----------------===//

#include "Json.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>

using namespace specrt;

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

namespace {
class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parseDocument(JsonValue &value) {
    if (!parseValue(value, 0))
      return false;
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the JSON value");
    return true;
  }

  std::string error;

private:
  // Deeper nesting than any manifest has is refused rather than recursed.
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string &message) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error = "line " + std::to_string(line) + ", column " +
            std::to_string(column) + ": " + message;
    return false;
  }

  void skipSpace() {
    while (pos < text.size() && std::strchr(" \t\r\n", text[pos]))
      ++pos;
  }

  bool consume(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool parseValue(JsonValue &value, int depth) {
    if (depth > kMaxDepth)
      return fail("nested too deeply");
    skipSpace();
    if (pos >= text.size())
      return fail("unexpected end of input");
    char c = text[pos];
    if (c == '{')
      return parseObject(value, depth);
    if (c == '[')
      return parseArray(value, depth);
    if (c == '"') {
      value.kind = JsonValue::Kind::String;
      return parseString(value.string);
    }
    if (consume("true") || consume("false")) {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = c == 't';
      return true;
    }
    if (consume("null")) {
      value.kind = JsonValue::Kind::Null;
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(value);
    return fail(std::string("unexpected character '") + c + "'");
  }

  /// RFC 8259's grammar exactly: no hexadecimal, leading zeros, '+', inf
  /// or nan (which strtod would take).
  bool parseNumber(JsonValue &value) {
    size_t begin = pos;
    auto digits = [&] {
      size_t start = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos > start;
    };
    if (text[pos] == '-')
      ++pos;
    if (pos < text.size() && text[pos] == '0')
      ++pos;
    else if (!digits())
      return fail("malformed number");
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("malformed number: no digits after '.'");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("malformed number: no exponent digits");
    }
    if (pos < text.size() &&
        (std::isalnum(static_cast<unsigned char>(text[pos])) ||
         text[pos] == '.'))
      return fail("malformed number");
    value.kind = JsonValue::Kind::Number;
    // from_chars: locale-independent, unlike strtod.
    auto [end, ec] = std::from_chars(text.data() + begin, text.data() + pos,
                                     value.number);
    if (ec != std::errc() || end != text.data() + pos)
      return fail("number out of range");
    return true;
  }

  bool parseObject(JsonValue &value, int depth) {
    value.kind = JsonValue::Kind::Object;
    ++pos;
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      std::string key;
      size_t keyStart = pos;
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a member name in quotes");
      if (!parseString(key))
        return false;
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':' after a member name");
      ++pos;
      if (value.object.count(key)) {
        pos = keyStart;
        return fail("duplicate member '" + key + "'");
      }
      if (!parseValue(value.object[key], depth + 1))
        return false;
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(JsonValue &value, int depth) {
    value.kind = JsonValue::Kind::Array;
    ++pos;
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      value.array.emplace_back();
      if (!parseValue(value.array.back(), depth + 1))
        return false;
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool parseString(std::string &out) {
    ++pos; // the opening quote
    while (pos < text.size()) {
      char c = text[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos >= text.size())
        break;
      char e = text[pos++];
      switch (e) {
      case '"': case '\\': case '/': out.push_back(e); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        if (pos + 4 > text.size())
          return fail("truncated \\u escape");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = text[pos++];
          code <<= 4;
          if (h >= '0' && h <= '9') code |= h - '0';
          else if (h >= 'a' && h <= 'f') code |= h - 'a' + 10;
          else if (h >= 'A' && h <= 'F') code |= h - 'A' + 10;
          else return fail("malformed \\u escape");
        }
        // UTF-8 of a BMP code point (surrogate pairs are not needed here).
        if (code == 0)
          return fail("a NUL character (\\u0000) in a string");
        if (code >= 0xd800 && code <= 0xdfff)
          return fail("a surrogate escape in a string (not supported)");
        if (code < 0x80) {
          out.push_back(static_cast<char>(code));
        } else if (code < 0x800) {
          out.push_back(static_cast<char>(0xc0 | (code >> 6)));
          out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
        } else {
          out.push_back(static_cast<char>(0xe0 | (code >> 12)));
          out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
          out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
        }
        break;
      }
      default:
        return fail(std::string("unknown escape '\\") + e + "'");
      }
    }
    return fail("unterminated string");
  }

  const std::string &text;
  size_t pos = 0;
};
} // namespace

bool specrt::parseJson(const std::string &text, JsonValue &value,
                       std::string &error) {
  Parser parser(text);
  value = JsonValue();
  if (parser.parseDocument(value))
    return true;
  error = parser.error;
  return false;
}
