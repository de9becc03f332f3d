//===- CrossTokenizerTest.cpp - a draft with another tokenizer ------------===//
//
// The example target (bytes) paired with the BPE draft (models/
// draft_bpe.onnx, 381 merges; specc --cross-tokenizer, the test artifact
// cross-batch.spec, 4 slots). Twenty prompts of source text join a batch
// whose steps all speculate, a few at a time; each one's 128 tokens must be
// the target's alone (specrt_generate with the target-only loop), and the
// draft's translated proposals must be accepted often enough to show that
// they are the text the draft means.
//
//===----------------------------------------------------------------------===//

#include "specrt/specrt.h"

#include "gtest/gtest.h"

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {
constexpr const char *kArtifact = SPECULA_TEST_ARTIFACTS "/cross-batch.spec";
constexpr int64_t kNewTokens = 128;
constexpr int64_t kBos = 256;

class CrossTokenizerTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(specrt_open(kArtifact, nullptr, &model), SPECRT_OK)
        << specrt_last_error();
  }
  void TearDown() override { specrt_close(model); }

  /// The target's own tokens for `prompt`.
  std::vector<int64_t> alone(const std::vector<int64_t> &prompt) {
    specrt_generate_options options;
    specrt_generate_options_init(&options);
    options.max_new_tokens = kNewTokens;
    options.speculative = 0;
    specrt_result result;
    EXPECT_EQ(specrt_generate(model, prompt.data(), prompt.size(), &options,
                              &result),
              SPECRT_OK)
        << specrt_last_error();
    std::vector<int64_t> tokens(result.tokens, result.tokens + result.num_tokens);
    specrt_result_free(&result);
    return tokens;
  }

  /// Runs `prompts` through a batch that always speculates, two joining
  /// per step while slots are free; each one's first kNewTokens tokens.
  std::vector<std::vector<int64_t>> run(const std::vector<std::vector<int64_t>> &prompts,
                                        specrt_batch_stats &stats) {
    specrt_batch *batch = nullptr;
    EXPECT_EQ(specrt_batch_open(model, &batch), SPECRT_OK) << specrt_last_error();
    EXPECT_EQ(specrt_batch_set_speculation(batch, SPECRT_SPECULATE_ALWAYS), SPECRT_OK);
    std::map<int64_t, size_t> sequenceOf;
    std::vector<std::vector<int64_t>> outputs(prompts.size());
    size_t next = 0, done = 0;
    std::vector<int64_t> slots(64), tokens(64);
    while (done < prompts.size()) {
      for (int n = 0; n < 2 && next < prompts.size() &&
                      specrt_batch_active(batch) < specrt_batch_slots(batch);
           ++n, ++next) {
        int64_t slot = -1, first = -1;
        EXPECT_EQ(specrt_batch_add(batch, prompts[next].data(), prompts[next].size(),
                                   &slot, &first),
                  SPECRT_OK)
            << specrt_last_error();
        sequenceOf[slot] = next;
        outputs[next].push_back(first);
      }
      size_t count = 0;
      EXPECT_EQ(specrt_batch_step(batch, slots.data(), tokens.data(), &count), SPECRT_OK)
          << specrt_last_error();
      for (size_t i = 0; i < count; ++i) {
        auto sequence = sequenceOf.find(slots[i]);
        if (sequence == sequenceOf.end())
          continue;
        std::vector<int64_t> &output = outputs[sequence->second];
        output.push_back(tokens[i]);
        if (static_cast<int64_t>(output.size()) == kNewTokens) {
          EXPECT_EQ(specrt_batch_remove(batch, slots[i]), SPECRT_OK);
          sequenceOf.erase(sequence);
          ++done;
        }
      }
    }
    specrt_batch_get_stats(batch, &stats);
    specrt_batch_close(batch);
    return outputs;
  }

  specrt_model *model = nullptr;
};

/// BOS and `length` bytes of `text` from `offset`.
std::vector<int64_t> promptOf(const std::string &text, size_t offset, size_t length) {
  std::vector<int64_t> prompt{kBos};
  for (size_t i = offset; i < offset + length && i < text.size(); ++i)
    prompt.push_back(static_cast<unsigned char>(text[i]));
  return prompt;
}
} // namespace

TEST_F(CrossTokenizerTest, GreedyTokensAreTheTargetsAlone) {
  std::ifstream file(SPECULA_CORPUS_FILE, std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(file), {}};
  ASSERT_GT(text.size(), 20000u) << SPECULA_CORPUS_FILE;
  std::vector<std::vector<int64_t>> prompts;
  for (size_t i = 0; i < 18; ++i)
    prompts.push_back(promptOf(text, 1000 + i * 997, 64));
  // Text whose bytes and the draft's tokens part differently: multi-byte
  // characters, and a word the target's next byte extends.
  std::string unicode = "s = 'h\xC3\xA9llo w\xC3\xB6rld \xE4\xBD\xA0\xE5\xA5\xBD' # caf";
  prompts.push_back(promptOf(unicode, 0, unicode.size()));
  prompts.push_back({kBos});
  specrt_batch_stats stats{};
  std::vector<std::vector<int64_t>> outputs = run(prompts, stats);
  for (size_t s = 0; s < prompts.size(); ++s) {
    std::vector<int64_t> expected = alone(prompts[s]);
    ASSERT_FALSE(expected.empty());
    std::vector<int64_t> got(outputs[s].begin(),
                             outputs[s].begin() + std::min(outputs[s].size(), expected.size()));
    EXPECT_EQ(got, expected) << "sequence " << s << " differs from the target alone";
  }
  // Every step speculated, and the translated proposals were the text the
  // target writes often enough: a translation that lost its way (wrong
  // bytes, a shifted context) is accepted at chance.
  EXPECT_EQ(stats.speculative_steps, stats.steps);
  EXPECT_GT(stats.accepted * 4, stats.proposed)
      << stats.accepted << " of " << stats.proposed << " proposals accepted";
  EXPECT_GT(stats.draft_catch_up, 0u);
}
