//===- TextStream.cpp - the text tokens add, as they arrive ---------------===//

#include "specrt/TextStream.h"

#include <algorithm>

using namespace specrt;

/// Tokens of the prompt decoded with the first generated ones, as context.
static constexpr size_t kContextTokens = 5;

bool specrt::endsUnfinished(const std::string &s) {
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0)
    return true;
  size_t i = s.size(), continuation = 0;
  while (i > 0 && continuation < 4 &&
         (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++continuation;
  }
  if (i == 0)
    return false;
  unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  return need > continuation;
}

TextStream::TextStream(const specrt_model *model,
                       const std::vector<int64_t> &prompt,
                       std::vector<std::string> stops)
    : model_(model), tokens_(prompt), promptTokens_(prompt.size()),
      prefixOffset_(prompt.size() > kContextTokens
                        ? prompt.size() - kContextTokens
                        : 0),
      readOffset_(prompt.size()) {
  for (std::string &stop : stops)
    if (!stop.empty())
      stops_.push_back(std::move(stop));
}

std::string TextStream::decode(size_t from, size_t to) const {
  std::string out((to - from) * 8 + 16, '\0');
  size_t length = 0;
  specrt_detokenize(model_, tokens_.data() + from, to - from, out.data(),
                    out.size(), &length);
  if (length > out.size()) {
    out.resize(length);
    specrt_detokenize(model_, tokens_.data() + from, to - from, out.data(),
                      out.size(), &length);
  }
  out.resize(length);
  return out;
}

std::string TextStream::advance(bool final) {
  std::string before = decode(prefixOffset_, readOffset_);
  std::string now = decode(prefixOffset_, tokens_.size());
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0 ||
      (!final && endsUnfinished(now)))
    return {};
  prefixOffset_ = readOffset_;
  readOffset_ = tokens_.size();
  return now.substr(before.size());
}

std::string TextStream::push(int64_t token) {
  if (stopped_)
    return {};
  tokens_.push_back(token);
  return release(advance(false), false);
}

std::string TextStream::finish() {
  if (stopped_)
    return {};
  return release(advance(true), true);
}

std::string TextStream::release(std::string added, bool final) {
  held_ += added;
  size_t first = std::string::npos;
  for (const std::string &stop : stops_)
    first = std::min(first, held_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that a stop string begins with.
  size_t hold = 0;
  if (!final)
    for (const std::string &stop : stops_)
      for (size_t n = std::min(stop.size() - 1, held_.size()); n > hold; --n)
        if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
          hold = n;
          break;
        }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}
