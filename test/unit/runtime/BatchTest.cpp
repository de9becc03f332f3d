//===- BatchTest.cpp - specrt_batch_*: sequences sharing rounds -----------===//
//
// The example target compiled with batched rounds over 4 slots (specc
// --max-batch 4, the test artifact target-batch.spec). Sixteen sequences
// join at random steps into whatever slot is free and leave when done, as
// a server's requests would; each one's tokens must equal what
// specrt_generate gives its prompt alone (the target-only greedy loop of
// the same artifact).
//
//===----------------------------------------------------------------------===//

#include "specrt/specrt.h"

#include "gtest/gtest.h"

#include <map>
#include <random>
#include <vector>

namespace {
constexpr const char *kArtifact = SPECULA_TEST_ARTIFACTS "/target-batch.spec";
constexpr int64_t kNewTokens = 24;

class BatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(specrt_open(kArtifact, nullptr, &model), SPECRT_OK)
        << specrt_last_error();
  }
  void TearDown() override { specrt_close(model); }

  /// What specrt_generate gives `prompt` alone (it stops early at EOS).
  std::vector<int64_t> alone(const std::vector<int64_t> &prompt) {
    specrt_generate_options options;
    specrt_generate_options_init(&options);
    options.max_new_tokens = kNewTokens;
    specrt_result result;
    EXPECT_EQ(specrt_generate(model, prompt.data(), prompt.size(), &options,
                              &result),
              SPECRT_OK)
        << specrt_last_error();
    std::vector<int64_t> tokens(result.tokens,
                                result.tokens + result.num_tokens);
    specrt_result_free(&result);
    return tokens;
  }

  specrt_model *model = nullptr;
};
} // namespace

TEST_F(BatchTest, EverySequenceGetsItsTokensAlone) {
  specrt_batch *batch = nullptr;
  ASSERT_EQ(specrt_batch_open(model, &batch), SPECRT_OK) << specrt_last_error();
  ASSERT_EQ(specrt_batch_slots(batch), 4u);
  std::mt19937 random(3);
  std::uniform_int_distribution<int64_t> byte(32, 126), size(1, 12),
      arrivals(0, 2);
  std::vector<std::vector<int64_t>> prompts(16);
  for (auto &prompt : prompts) {
    prompt.push_back(256); // BOS, as spec-run gives
    for (int64_t i = 0, n = size(random); i < n; ++i)
      prompt.push_back(byte(random));
  }
  std::map<int64_t, int64_t> sequenceOf; // slot -> sequence
  std::vector<std::vector<int64_t>> outputs(prompts.size());
  size_t next = 0, done = 0;
  std::vector<int64_t> slots(4), tokens(4);
  while (done < prompts.size()) {
    // A few arrivals per step while slots are free.
    for (int64_t n = arrivals(random); n > 0 && next < prompts.size() &&
                                       specrt_batch_active(batch) < 4;
         --n, ++next) {
      int64_t slot = -1, first = -1;
      ASSERT_EQ(specrt_batch_add(batch, prompts[next].data(),
                                 prompts[next].size(), &slot, &first),
                SPECRT_OK)
          << specrt_last_error();
      sequenceOf[slot] = static_cast<int64_t>(next);
      outputs[next].push_back(first);
    }
    size_t count = 0;
    ASSERT_EQ(specrt_batch_step(batch, slots.data(), tokens.data(), &count),
              SPECRT_OK)
        << specrt_last_error();
    ASSERT_EQ(count, specrt_batch_active(batch));
    for (size_t i = 0; i < count; ++i) {
      std::vector<int64_t> &output = outputs[sequenceOf.at(slots[i])];
      output.push_back(tokens[i]);
      if (static_cast<int64_t>(output.size()) == kNewTokens) {
        ASSERT_EQ(specrt_batch_remove(batch, slots[i]), SPECRT_OK);
        sequenceOf.erase(slots[i]);
        ++done;
      }
    }
  }
  specrt_batch_close(batch);
  for (size_t s = 0; s < prompts.size(); ++s) {
    std::vector<int64_t> expected = alone(prompts[s]);
    ASSERT_FALSE(expected.empty());
    std::vector<int64_t> got(outputs[s].begin(),
                             outputs[s].begin() + expected.size());
    EXPECT_EQ(got, expected) << "sequence " << s << " (prompt of "
                             << prompts[s].size()
                             << " tokens) differs from its tokens alone";
  }
}

TEST_F(BatchTest, RefusesWhatDoesNotFit) {
  specrt_batch *batch = nullptr;
  ASSERT_EQ(specrt_batch_open(model, &batch), SPECRT_OK);
  int64_t slot = -1, first = -1;
  const int64_t prompt[] = {256, 'a'};
  EXPECT_EQ(specrt_batch_add(batch, prompt, 0, &slot, &first),
            SPECRT_ERROR_INVALID_ARGUMENT);
  const int64_t outside[] = {256, 100000};
  EXPECT_EQ(specrt_batch_add(batch, outside, 2, &slot, &first),
            SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(specrt_last_error()).find("outside the vocabulary"),
            std::string::npos);
  std::vector<int64_t> longPrompt(128, 'a');
  EXPECT_EQ(specrt_batch_add(batch, longPrompt.data(), longPrompt.size(),
                             &slot, &first),
            SPECRT_ERROR_INVALID_ARGUMENT);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(specrt_batch_add(batch, prompt, 2, &slot, &first), SPECRT_OK)
        << specrt_last_error();
  EXPECT_EQ(specrt_batch_add(batch, prompt, 2, &slot, &first),
            SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(specrt_last_error()).find("all 4 slots"),
            std::string::npos);
  EXPECT_EQ(specrt_batch_remove(batch, 7), SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(specrt_batch_remove(batch, 2), SPECRT_OK);
  EXPECT_EQ(specrt_batch_remove(batch, 2), SPECRT_ERROR_INVALID_ARGUMENT);
  specrt_batch_close(batch);
}

TEST(BatchOpen, RefusesAnArtifactWithoutRounds) {
  specrt_model *model = nullptr;
  ASSERT_EQ(specrt_open(SPECULA_TEST_ARTIFACTS "/draft-gamma2.spec", nullptr,
                        &model),
            SPECRT_OK);
  specrt_batch *batch = nullptr;
  EXPECT_EQ(specrt_batch_open(model, &batch), SPECRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(specrt_last_error()).find("--max-batch"),
            std::string::npos);
  specrt_close(model);
}
