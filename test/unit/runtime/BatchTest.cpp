//===- BatchTest.cpp - specrt_batch_*: sequences sharing rounds -----------===//
//
// The example target and draft compiled with batched rounds over 4 slots
// (specc --draft ... --gamma 3 --max-batch 4, the test artifact
// draft-batch.spec). Sixteen sequences join at random steps into whatever
// slot is free and leave when done, as a server's requests would; each
// one's tokens must equal what specrt_generate gives its prompt alone,
// whether the steps speculate always, never, or as the measured costs say,
// and whether prompts enter whole or a chunk per step; also with Medusa
// heads proposing (medusa-batch.spec). The draft decoder
// compiled to sample (draft-batch-sampled.spec) draws each sequence's
// tokens with its own seed: every step speculating, they are
// specrt_generate's for that seed, and with plain steps those of the
// target alone.
//
//===----------------------------------------------------------------------===//

#include "specrt/specrt.h"

#include "gtest/gtest.h"

#include <map>
#include <random>
#include <set>
#include <vector>

namespace {
constexpr const char *kArtifact = SPECULA_TEST_ARTIFACTS "/draft-batch.spec";
constexpr const char *kSampledArtifact =
    SPECULA_TEST_ARTIFACTS "/draft-batch-sampled.spec";
constexpr const char *kMedusaArtifact =
    SPECULA_TEST_ARTIFACTS "/medusa-batch.spec";
constexpr const char *kSampledMedusaArtifact =
    SPECULA_TEST_ARTIFACTS "/medusa-batch-sampled.spec";
constexpr const char *kMTPArtifact = SPECULA_TEST_ARTIFACTS "/mtp-batch.spec";
constexpr const char *kSampledMTPArtifact =
    SPECULA_TEST_ARTIFACTS "/mtp-batch-sampled.spec";
constexpr int64_t kNewTokens = 24;

class BatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(specrt_open(artifact(), nullptr, &model), SPECRT_OK)
        << specrt_last_error();
  }
  void TearDown() override { specrt_close(model); }
  virtual const char *artifact() const { return kArtifact; }
  /// Tokens a speculative round proposes per sequence (gamma, heads).
  virtual size_t proposals() const { return 3; }

  /// Sequence s's seed (greedy artifacts ignore it).
  static uint64_t seedOf(size_t sequence) { return 1000 + sequence; }

  /// What specrt_generate gives `prompt` alone with `seed` (it stops early
  /// at EOS), speculating or with the target alone.
  std::vector<int64_t> alone(const std::vector<int64_t> &prompt,
                             uint64_t seed = 0, bool speculative = true) {
    specrt_generate_options options;
    specrt_generate_options_init(&options);
    options.max_new_tokens = kNewTokens;
    options.seed = seed;
    options.speculative = speculative;
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

  std::vector<std::vector<int64_t>>
  runSixteen(specrt_speculation speculation,
             const std::vector<std::vector<int64_t>> &prompts,
             specrt_batch_stats &stats, size_t prefillChunk = 0);

  /// Checks that each of `outputs` begins with its prompt's tokens alone
  /// (with its seed, speculating or not).
  void expectTokensAlone(const std::vector<std::vector<int64_t>> &prompts,
                         const std::vector<std::vector<int64_t>> &outputs,
                         bool speculative = true);

  /// 16 sequences each get their tokens alone, whether steps speculate
  /// never, always or adaptively.
  void expectEverySequenceAlone();

  /// Sampled: 16 seeded sequences each get their tokens alone.
  void expectSeededSequencesAlone();

  /// A sequence alone in a batch whose steps all speculate takes as many
  /// steps to its first kNewTokens tokens as specrt_generate takes rounds:
  /// the rounds propose what the decode loop proposes (a worse proposal
  /// would still give the same tokens, in more steps).
  void expectRoundsOfTheDecodeLoop(const std::vector<int64_t> &prompt);

  /// Sixteen prompts of BOS and 1 to `longest` random printable bytes.
  static std::vector<std::vector<int64_t>> randomPrompts(int64_t longest);

  specrt_model *model = nullptr;
};
} // namespace

/// Runs 16 sequences of random prompts arriving at random steps through a
/// batch speculating as `speculation` says, prefilling prompts whole or
/// `prefillChunk` tokens per step; each one's first kNewTokens tokens (a
/// step's tokens after those are dropped, as a server would).
std::vector<std::vector<int64_t>>
BatchTest::runSixteen(specrt_speculation speculation,
                      const std::vector<std::vector<int64_t>> &prompts,
                      specrt_batch_stats &stats, size_t prefillChunk) {
  specrt_batch *batch = nullptr;
  EXPECT_EQ(specrt_batch_open(model, &batch), SPECRT_OK) << specrt_last_error();
  EXPECT_EQ(specrt_batch_slots(batch), 4u);
  EXPECT_EQ(specrt_batch_step_capacity(batch), 4 * (proposals() + 1));
  EXPECT_EQ(specrt_batch_set_speculation(batch, speculation), SPECRT_OK);
  EXPECT_EQ(specrt_batch_set_prefill_chunk(batch, prefillChunk), SPECRT_OK);
  std::mt19937 random(3);
  std::uniform_int_distribution<int64_t> arrivals(0, 2);
  std::map<int64_t, int64_t> sequenceOf; // slot -> sequence
  std::vector<std::vector<int64_t>> outputs(prompts.size());
  size_t next = 0, done = 0;
  std::vector<int64_t> slots(16), tokens(16);
  while (done < prompts.size()) {
    // A few arrivals per step while slots are free.
    for (int64_t n = arrivals(random); n > 0 && next < prompts.size() &&
                                       specrt_batch_active(batch) < 4;
         --n, ++next) {
      int64_t slot = -1, first = -1;
      EXPECT_EQ(specrt_batch_add_seeded(batch, prompts[next].data(),
                                        prompts[next].size(), seedOf(next),
                                        &slot, &first),
                SPECRT_OK)
          << specrt_last_error();
      sequenceOf[slot] = static_cast<int64_t>(next);
      // In chunks, the first token comes from the step completing the
      // prompt.
      EXPECT_EQ(first < 0, prefillChunk > 0);
      if (first >= 0)
        outputs[next].push_back(first);
    }
    size_t count = 0;
    specrt_batch_stats before;
    specrt_batch_get_stats(batch, &before);
    EXPECT_EQ(specrt_batch_step(batch, slots.data(), tokens.data(), &count),
              SPECRT_OK)
        << specrt_last_error();
    specrt_batch_get_stats(batch, &stats);
    if (prefillChunk) {
      EXPECT_LE(stats.prefill_tokens - before.prefill_tokens, prefillChunk);
    } else if (speculation == SPECRT_SPECULATE_NEVER) {
      // Plain steps: one token for each sequence.
      EXPECT_EQ(count, specrt_batch_active(batch));
    }
    for (size_t i = 0; i < count; ++i) {
      auto sequence = sequenceOf.find(slots[i]);
      if (sequence == sequenceOf.end())
        continue; // ended amid this step's tokens
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

std::vector<std::vector<int64_t>> BatchTest::randomPrompts(int64_t longest) {
  std::mt19937 random(3);
  std::uniform_int_distribution<int64_t> byte(32, 126), size(1, longest);
  std::vector<std::vector<int64_t>> prompts(16);
  for (auto &prompt : prompts) {
    prompt.push_back(256); // BOS, as spec-run gives
    for (int64_t i = 0, n = size(random); i < n; ++i)
      prompt.push_back(byte(random));
  }
  return prompts;
}

void BatchTest::expectTokensAlone(
    const std::vector<std::vector<int64_t>> &prompts,
    const std::vector<std::vector<int64_t>> &outputs, bool speculative) {
  for (size_t s = 0; s < prompts.size(); ++s) {
    std::vector<int64_t> expected = alone(prompts[s], seedOf(s), speculative);
    ASSERT_FALSE(expected.empty());
    ASSERT_GE(outputs[s].size(), expected.size());
    std::vector<int64_t> got(outputs[s].begin(),
                             outputs[s].begin() + expected.size());
    EXPECT_EQ(got, expected)
        << "sequence " << s << " (prompt of " << prompts[s].size()
        << " tokens) differs from its tokens alone";
  }
}

void BatchTest::expectEverySequenceAlone() {
  std::vector<std::vector<int64_t>> prompts = randomPrompts(12);
  for (specrt_speculation speculation :
       {SPECRT_SPECULATE_NEVER, SPECRT_SPECULATE_ALWAYS,
        SPECRT_SPECULATE_ADAPTIVE}) {
    SCOPED_TRACE("speculation " + std::to_string(speculation));
    specrt_batch_stats stats{};
    std::vector<std::vector<int64_t>> outputs =
        runSixteen(speculation, prompts, stats);
    expectTokensAlone(prompts, outputs);
    // Whole prompts: one forward each.
    EXPECT_EQ(stats.prefill_forwards, prompts.size());
    // Never: one token per sequence per step; always: every step proposes
    // (no sequence nears the context's end) and some proposals pass.
    EXPECT_GT(stats.steps, 0u);
    if (speculation == SPECRT_SPECULATE_NEVER) {
      EXPECT_EQ(stats.speculative_steps, 0u);
      EXPECT_EQ(stats.tokens, stats.sequence_steps);
    } else if (speculation == SPECRT_SPECULATE_ALWAYS) {
      EXPECT_EQ(stats.speculative_steps, stats.steps);
      EXPECT_EQ(stats.proposed, proposals() * stats.sequence_steps);
      EXPECT_GT(stats.accepted, 0u);
      EXPECT_EQ(stats.tokens, stats.sequence_steps + stats.accepted);
    } else {
      // Both lengths are measured before the costs choose.
      EXPECT_GT(stats.speculative_steps, 0u);
      EXPECT_LT(stats.speculative_steps, stats.steps);
    }
  }
}

void BatchTest::expectRoundsOfTheDecodeLoop(
    const std::vector<int64_t> &prompt) {
  specrt_generate_options options;
  specrt_generate_options_init(&options);
  options.max_new_tokens = kNewTokens;
  specrt_result result;
  ASSERT_EQ(specrt_generate(model, prompt.data(), prompt.size(), &options,
                            &result),
            SPECRT_OK)
      << specrt_last_error();
  int64_t rounds = result.rounds;
  size_t generated = result.num_tokens;
  specrt_result_free(&result);
  ASSERT_EQ(generated, static_cast<size_t>(kNewTokens)) << "ended early";
  specrt_batch *batch = nullptr;
  ASSERT_EQ(specrt_batch_open(model, &batch), SPECRT_OK);
  ASSERT_EQ(specrt_batch_set_speculation(batch, SPECRT_SPECULATE_ALWAYS),
            SPECRT_OK);
  int64_t slot = -1, first = -1;
  ASSERT_EQ(specrt_batch_add(batch, prompt.data(), prompt.size(), &slot,
                             &first),
            SPECRT_OK);
  std::vector<int64_t> slots(16), tokens(16);
  int64_t steps = 0;
  for (size_t got = 1; got < static_cast<size_t>(kNewTokens); ++steps) {
    size_t count = 0;
    ASSERT_EQ(specrt_batch_step(batch, slots.data(), tokens.data(), &count),
              SPECRT_OK);
    got += count;
  }
  specrt_batch_close(batch);
  EXPECT_EQ(steps, rounds);
}

TEST_F(BatchTest, EverySequenceGetsItsTokensAlone) {
  expectEverySequenceAlone();
  expectRoundsOfTheDecodeLoop({256, 'd', 'e', 'f', ' '});
}

// Prompts of up to 90 tokens, 16 a step: a long one takes several steps'
// chunks while the others decode, and nobody's tokens change.
TEST_F(BatchTest, PromptsInChunksKeepTheirTokens) {
  std::vector<std::vector<int64_t>> prompts = randomPrompts(90);
  uint64_t promptTokens = 0, chunks = 0;
  for (const auto &prompt : prompts) {
    promptTokens += prompt.size();
    chunks += (prompt.size() + 15) / 16;
  }
  for (specrt_speculation speculation :
       {SPECRT_SPECULATE_NEVER, SPECRT_SPECULATE_ALWAYS}) {
    SCOPED_TRACE("speculation " + std::to_string(speculation));
    specrt_batch_stats stats{};
    std::vector<std::vector<int64_t>> outputs =
        runSixteen(speculation, prompts, stats, 16);
    expectTokensAlone(prompts, outputs);
    EXPECT_EQ(stats.prefill_tokens, promptTokens);
    // A prompt's chunks may split across two prompts' budget in a step.
    EXPECT_GE(stats.prefill_forwards, chunks);
    EXPECT_LE(stats.prefill_forwards, chunks + prompts.size());
    // Speculating, the draft reads each prompt with its chunks, all of it
    // (a first speculative round would catch up one position less), and
    // nothing else; never speculating, not at all.
    EXPECT_EQ(stats.draft_catch_up,
              speculation == SPECRT_SPECULATE_ALWAYS ? promptTokens : 0u);
  }
}

namespace {
class SampledBatchTest : public BatchTest {
  const char *artifact() const override { return kSampledArtifact; }
};
/// Medusa heads fused into the target propose in the rounds (3 heads).
class MedusaBatchTest : public BatchTest {
  const char *artifact() const override { return kMedusaArtifact; }
};
class SampledMedusaBatchTest : public BatchTest {
  const char *artifact() const override { return kSampledMedusaArtifact; }
};
/// An MTP module proposes in the rounds (one token, from the target's
/// hidden states and its own cache), greedy and sampled.
class MTPBatchTest : public BatchTest {
  const char *artifact() const override { return kMTPArtifact; }
  size_t proposals() const override { return 1; }
};
class SampledMTPBatchTest : public BatchTest {
  const char *artifact() const override { return kSampledMTPArtifact; }
  size_t proposals() const override { return 1; }
};
} // namespace

// The module catches up on what prompts and plain steps left it behind,
// and proposes what the decode loop's module proposes.
TEST_F(MTPBatchTest, EverySequenceGetsItsTokensAlone) {
  expectEverySequenceAlone();
  expectRoundsOfTheDecodeLoop({256, 'd', 'e', 'f', ' '});
}

TEST_F(MTPBatchTest, PromptsInChunksKeepTheirTokens) {
  std::vector<std::vector<int64_t>> prompts = randomPrompts(90);
  uint64_t promptTokens = 0;
  for (const auto &prompt : prompts)
    promptTokens += prompt.size();
  specrt_batch_stats stats{};
  expectTokensAlone(prompts,
                    runSixteen(SPECRT_SPECULATE_ALWAYS, prompts, stats, 16));
  EXPECT_EQ(stats.speculative_steps, stats.steps);
  // The module reads each prompt once, when its first round speculates.
  EXPECT_EQ(stats.draft_catch_up, promptTokens);
}

TEST_F(SampledMTPBatchTest, SeededSequencesGetTheirTokensAlone) {
  expectSeededSequencesAlone();
}

TEST_F(SampledMedusaBatchTest, SeededSequencesGetTheirTokensAlone) {
  expectSeededSequencesAlone();
}

// Each forward's heads give the sequence's next proposals, plain or
// speculative, so that any step may speculate.
TEST_F(MedusaBatchTest, EverySequenceGetsItsTokensAlone) {
  expectEverySequenceAlone();
  expectRoundsOfTheDecodeLoop({256, 'd', 'e', 'f', ' '});
}

TEST_F(MedusaBatchTest, PromptsInChunksKeepTheirTokens) {
  std::vector<std::vector<int64_t>> prompts = randomPrompts(90);
  specrt_batch_stats stats{};
  expectTokensAlone(prompts,
                    runSixteen(SPECRT_SPECULATE_ALWAYS, prompts, stats, 16));
  EXPECT_EQ(stats.speculative_steps, stats.steps);
  EXPECT_EQ(stats.draft_catch_up, 0u);
}

// Each sequence draws with its own seed, whatever shares its steps: every
// step speculating, its tokens are specrt_generate's for its seed (the
// batch keys each round's draws as the decode loop keys them); with plain
// steps, those of the target alone for its seed; prompts whole or in
// chunks.
TEST_F(SampledBatchTest, SeededSequencesGetTheirTokensAlone) {
  expectSeededSequencesAlone();
}

void BatchTest::expectSeededSequencesAlone() {
  std::vector<std::vector<int64_t>> prompts = randomPrompts(40);
  struct Case {
    specrt_speculation speculation;
    size_t prefillChunk;
  };
  for (Case c : {Case{SPECRT_SPECULATE_ALWAYS, 0},
                 Case{SPECRT_SPECULATE_NEVER, 0},
                 Case{SPECRT_SPECULATE_ALWAYS, 16}}) {
    SCOPED_TRACE("speculation " + std::to_string(c.speculation) +
                 ", prefill chunk " + std::to_string(c.prefillChunk));
    specrt_batch_stats stats{};
    std::vector<std::vector<int64_t>> outputs =
        runSixteen(c.speculation, prompts, stats, c.prefillChunk);
    expectTokensAlone(prompts, outputs,
                      c.speculation == SPECRT_SPECULATE_ALWAYS);
    if (c.speculation == SPECRT_SPECULATE_ALWAYS) {
      EXPECT_EQ(stats.speculative_steps, stats.steps);
      EXPECT_GT(stats.accepted, 0u);
    }
  }
  // It samples: other seeds draw other tokens.
  std::set<std::vector<int64_t>> drawn;
  for (uint64_t seed = 1; seed <= 4; ++seed)
    drawn.insert(alone(prompts[0], seed));
  EXPECT_GT(drawn.size(), 1u);
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
  EXPECT_EQ(specrt_batch_set_speculation(batch,
                                         static_cast<specrt_speculation>(3)),
            SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(specrt_last_error()).find("adaptive, never, always"),
            std::string::npos);
  EXPECT_EQ(specrt_batch_set_prefill_chunk(batch, 129),
            SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(specrt_last_error()).find("prefill chunk of 129 tokens is longer than the context (128"),
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
