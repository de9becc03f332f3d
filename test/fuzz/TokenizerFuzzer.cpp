//===- TokenizerFuzzer.cpp - libFuzzer target: tokenizer.json -------------===//
//
// The first byte picks what the rest is:
//   0: a tokenizer.json: loaded; when it loads, a fixed text is encoded and
//      its ids decoded. Any file may be refused; none may crash.
//   1: text for a built-in byte-level BPE tokenizer (every byte in the
//      vocabulary, the Llama-3 split pattern, added tokens with lstrip and
//      rstrip): decoding its ids must give back the text exactly (after
//      ill-formed UTF-8 is repaired), or the fuzzer aborts.
//   2: text for a built-in SentencePiece-style one (Prepend and Replace
//      normalizers, byte fallback, fused unknowns, NFKC): must not crash.
//
//===----------------------------------------------------------------------===//

#include "Components.h"
#include "Text.h"
#include "specrt/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

using specrt::Tokenizer;
using Json = nlohmann::json;

static std::unique_ptr<Tokenizer> byteLevel, sentencePiece;

static std::unique_ptr<Tokenizer> make(const Json &json) {
  std::string error;
  auto tokenizer = Tokenizer::parse(json.dump(), "", error);
  if (!tokenizer) {
    std::fprintf(stderr, "built-in tokenizer: %s\n", error.c_str());
    std::abort();
  }
  return tokenizer;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b)
    vocab[specrt::tok::byteLevelChar(static_cast<unsigned char>(b))] = b;
  Json merges = {"Ġ t", "h e", "i n", "Ġt he", "e r", "Ġ a", "o n", "Ġ Ġ", "ĠĠ ĠĠ"};
  for (const Json &merge : merges) {
    std::string m = merge;
    std::string joined = m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1);
    if (!vocab.contains(joined))
      vocab[joined] = static_cast<int>(vocab.size());
  }
  int next = static_cast<int>(vocab.size());
  byteLevel = make({
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", true}}},
      {"added_tokens",
       {{{"id", next}, {"content", "<|eot|>"}, {"special", true}},
        {{"id", next + 1}, {"content", "<sep>"}, {"special", false}, {"normalized", false}}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern",
            {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                       "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
           {"behavior", "Isolated"}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
  });

  Json spVocab = {{"<unk>", 0}, {"<s>", 1}, {"▁", 2}, {"a", 3}, {"▁a", 4}, {"b", 5}, {"ab", 6}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    spVocab[name] = 7 + b;
  }
  sentencePiece = make({
      {"model",
       {{"type", "BPE"}, {"vocab", spVocab}, {"merges", {"▁ a", "a b"}}, {"unk_token", "<unk>"},
        {"byte_fallback", true}, {"fuse_unk", true}}},
      {"added_tokens", {{{"id", 1}, {"content", "<s>"}, {"special", true}, {"lstrip", true}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "NFKC"}},
          {{"type", "Prepend"}, {"prepend", "▁"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view input(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::string text, error;
  switch (data[0] % 3) {
  case 0: {
    auto tokenizer = Tokenizer::parse(input, "", error);
    if (tokenizer) {
      std::vector<int32_t> ids =
          tokenizer->encode("Hello, world! 123 \xE4\xBD\xA0\xE5\xA5\xBD  <s>\n\xFF", true);
      tokenizer->decode(ids, false, text, error);
      tokenizer->decode(ids, true, text, error);
    }
    break;
  }
  case 1: {
    std::vector<int32_t> ids = byteLevel->encode(input, false);
    if (!byteLevel->decode(ids, false, text, error) || text != specrt::toValidUtf8(input)) {
      std::fprintf(stderr, "the byte-level round trip changed the text\n");
      std::abort();
    }
    break;
  }
  default: {
    std::vector<int32_t> ids = sentencePiece->encode(input, true);
    sentencePiece->decode(ids, true, text, error);
    break;
  }
  }
  return 0;
}
