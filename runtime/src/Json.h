//===- Json.h - the small JSON reader the manifest needs ---------*- C++ -*-===//
//
// Objects, arrays, strings (with \uXXXX escapes for the BMP), numbers,
// booleans and null. The runtime has no dependencies, so it carries its own.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_JSON_H
#define SPECRT_JSON_H

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace specrt {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  /// The member `key` of an object, or null when absent or not an object.
  const JsonValue *get(const std::string &key) const;
};

/// Parses `text`; on failure returns false with `error` naming the line and
/// column and what was expected.
bool parseJson(const std::string &text, JsonValue &value, std::string &error);

} // namespace specrt

#endif // SPECRT_JSON_H
