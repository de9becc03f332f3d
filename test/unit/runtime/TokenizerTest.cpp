//===- TokenizerTest.cpp - the runtime's tokenizer.json internals ---------===//
//
// The pieces whose exact behaviour the reference comparison
// (test/tools/spec-tokenize/reference.test) only reaches by chance: UTF-8
// repair, JavaScript's trims, Oniguruma's shorthands, BPE's tie-break, byte
// fallback and fused unknowns.
//
//===----------------------------------------------------------------------===//

#include "Text.h"
#include "specrt/Tokenizer.h"

#include <gtest/gtest.h>

using namespace specrt;
using namespace specrt::tok;

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

std::string repeat(const std::string &s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

TEST(TokenizerText, RepairsUtf8AsTheWhatwgDecoder) {
  EXPECT_EQ(toValidUtf8("plain"), "plain");
  EXPECT_EQ(toValidUtf8("\xE4\xBD\xA0"), "\xE4\xBD\xA0");
  EXPECT_EQ(toValidUtf8("a\x80z"), "a" + kFFFD + "z");
  // A truncated sequence is one maximal subpart: one U+FFFD.
  EXPECT_EQ(toValidUtf8("\xE4\xBDz"), kFFFD + "z");
  EXPECT_EQ(toValidUtf8("\xF0\x9F\x99"), kFFFD);
  // Surrogates, overlongs and code points past U+10FFFF: one per byte.
  EXPECT_EQ(toValidUtf8("\xED\xA0\x80"), repeat(kFFFD, 3));
  EXPECT_EQ(toValidUtf8("\xC0\xAF"), repeat(kFFFD, 2));
  EXPECT_EQ(toValidUtf8("\xF4\x90\x80\x80"), repeat(kFFFD, 4));
  EXPECT_EQ(toValidUtf8("\xFF"), kFFFD);
  EXPECT_FALSE(isValidUtf8("\xC3"));
  EXPECT_TRUE(isValidUtf8("\xF4\x8F\xBF\xBF"));
}

TEST(TokenizerText, TrimsAsJavaScript) {
  // U+3000 and U+FEFF are JavaScript whitespace; U+0085 is not.
  EXPECT_EQ(trimStart("\xE3\x80\x80\xEF\xBB\xBF x "), "x ");
  EXPECT_EQ(trimEnd(" x\t\xE2\x80\xA8"), " x");
  EXPECT_EQ(trimEnd("x\xC2\x85"), "x\xC2\x85");
}

std::vector<std::string> matches(const char *pattern, std::string_view text) {
  Regex regex;
  std::string error;
  EXPECT_TRUE(regex.compile(pattern, error)) << error;
  std::vector<std::string> out;
  regex.forEachMatch(text, [&](size_t begin, size_t end) {
    out.emplace_back(text.substr(begin, end - begin));
  });
  return out;
}

TEST(TokenizerText, ReadsPatternsAsOniguruma) {
  // \s is White_Space, which includes U+0085 (PCRE2's own \s does not).
  EXPECT_EQ(matches("\\s+", "a\xC2\x85 b"), (std::vector<std::string>{"\xC2\x85 "}));
  // \w: letters, marks, decimal digits, connector punctuation.
  EXPECT_EQ(matches("\\w+", "e\xCC\x81_1 x-y"),
            (std::vector<std::string>{"e\xCC\x81_1", "x", "y"}));
  // \h is a hexadecimal digit, not horizontal space.
  EXPECT_EQ(matches("\\h+", "beef cafe"), (std::vector<std::string>{"beef", "cafe"}));
  EXPECT_EQ(matches("[\\s\\d]+", "ab 12c"), (std::vector<std::string>{" 12"}));
  // An empty match moves the search one code point on, as matchAll does.
  EXPECT_EQ(matches("x*", "\xE4\xBD\xA0x").size(), 3u);
  Regex regex;
  std::string error;
  EXPECT_FALSE(regex.compile("[\\W]", error));
  EXPECT_NE(error.find("inside a character class"), std::string::npos);
}

std::unique_ptr<Tokenizer> tokenizer(const std::string &model) {
  std::string error;
  auto t = Tokenizer::parse(R"({"model": )" + model + "}", "", error);
  EXPECT_TRUE(t) << error;
  return t;
}

TEST(TokenizerBPE, MergesLowestRankThenLeftmost) {
  auto t = tokenizer(R"({"type": "BPE", "vocab": {"a": 0, "aa": 1, "b": 2, "ab": 3},
                         "merges": ["a b", "a a"]})");
  // "aaa": the leftmost pair merges first.
  EXPECT_EQ(t->encode("aaa"), (std::vector<int32_t>{1, 0}));
  // "aab": "a b" (rank 0) wins over the earlier "a a" (rank 1).
  EXPECT_EQ(t->encode("aab"), (std::vector<int32_t>{0, 3}));
  // The cache gives the same answer the second time.
  EXPECT_EQ(t->encode("aab"), (std::vector<int32_t>{0, 3}));
}

TEST(TokenizerBPE, FallsBackToBytesThenFusesUnknowns) {
  auto t = tokenizer(R"({"type": "BPE", "unk_token": "<unk>", "byte_fallback": true,
                         "fuse_unk": true, "merges": [],
                         "vocab": {"<unk>": 0, "a": 1, "<0xC3>": 2, "<0xA9>": 3}})");
  // "é" is C3 A9: both byte tokens exist.
  EXPECT_EQ(t->encode("a\xC3\xA9"), (std::vector<int32_t>{1, 2, 3}));
  // "ü" (C3 BC) lacks <0xBC>: unknown; a run of unknowns is one <unk>.
  EXPECT_EQ(t->encode("\xC3\xBC\xC3\xBC" "a" "\xC3\xBC"), (std::vector<int32_t>{0, 1, 0}));
  std::string text, error;
  ASSERT_TRUE(t->decode({1, 2, 3}, false, text, error));
  EXPECT_EQ(text, "a <0xC3> <0xA9>"); // no decoder: pieces joined by spaces
}

TEST(TokenizerBPE, RefusesWhatItCannotRead) {
  std::string error;
  EXPECT_FALSE(Tokenizer::parse(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})",
                                "", error));
  EXPECT_EQ(error, "model.vocab[\"a\"]: expected a token id");
  EXPECT_FALSE(Tokenizer::parse(R"({"model": {"type": "BPE", "vocab": {}, "merges": [],
                                   "dropout": 0.1}})", "", error));
  EXPECT_EQ(error, "model.dropout: BPE dropout is not supported");
  EXPECT_FALSE(Tokenizer::parse("[1, 2]", "", error));
  EXPECT_EQ(error, "$: expected an object");
}

} // namespace
