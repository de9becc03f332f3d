//===- CrossTokenizerTest.cpp - a draft with another tokenizer ------------===//
//
// The example target (bytes) paired with the BPE draft (models/
// draft_bpe.onnx, 381 merges; specc --cross-tokenizer, the test artifact
// cross-batch.spec, 4 slots). Twenty prompts of source text join a batch
// whose steps all speculate, a few at a time; each one's 128 tokens must be
// the target's alone (specrt_generate with the target-only loop), and the
// draft's translated proposals must be accepted often enough to show that
// they are the text the draft means. Sampled, the tokens must be
// distributed as the target's own, to a byte-level target (the draft's
// tokens drawn a byte at a time) and to one with a tokenizer (the roles
// reversed: the tokens both share), against biased controls.
//
//===----------------------------------------------------------------------===//

#include "specrt/Tokenizer.h"
#include "specrt/specrt.h"

#include "gtest/gtest.h"

#include <fstream>
#include <iterator>
#include <cmath>
#include <cstdio>
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

// The roles reversed (cross-shared.spec): the byte-level model drafts for
// the BPE model, whose tokenizer.json the runtime tokenizes the draft's
// bytes with. Each sequence's tokens are the target's alone, and some
// proposals are accepted.
TEST(CrossTokenizerGreedy, TranslatedIntoATokenizersTokens) {
  specrt_model *model = nullptr;
  ASSERT_EQ(specrt_open(SPECULA_TEST_ARTIFACTS "/cross-shared.spec", nullptr, &model),
            SPECRT_OK)
      << specrt_last_error();
  std::ifstream file(SPECULA_CORPUS_FILE, std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(file), {}};
  std::string error;
  std::unique_ptr<specrt::Tokenizer> tokenizer =
      specrt::Tokenizer::load(SPECULA_BPE_TOKENIZER, error);
  ASSERT_TRUE(tokenizer) << error;
  size_t tokens = 0;
  int64_t forwards = 0;
  for (size_t i = 0; i < 8; ++i) {
    std::vector<int64_t> prompt{kBos};
    for (int32_t id : tokenizer->encode(text.substr(2000 + i * 1499, 48)))
      prompt.push_back(id);
    std::vector<int64_t> outputs[2];
    for (int speculative = 0; speculative < 2; ++speculative) {
      specrt_generate_options options;
      specrt_generate_options_init(&options);
      options.max_new_tokens = 48;
      options.speculative = speculative;
      specrt_result result;
      ASSERT_EQ(specrt_generate(model, prompt.data(), prompt.size(), &options, &result),
                SPECRT_OK)
          << specrt_last_error();
      outputs[speculative].assign(result.tokens, result.tokens + result.num_tokens);
      if (speculative)
        tokens += result.num_tokens, forwards += result.target_forwards;
      specrt_result_free(&result);
    }
    EXPECT_EQ(outputs[1], outputs[0]) << "prompt " << i;
  }
  // Some translated proposals were accepted: fewer forwards than tokens.
  EXPECT_LT(forwards, static_cast<int64_t>(tokens));
  std::printf("%zu tokens in %lld target forwards\n", tokens, static_cast<long long>(forwards));
  specrt_close(model);
}

namespace {
/// The 99.9th percentile of chi-square with `df` degrees of freedom
/// (Wilson and Hilferty's approximation).
double chiSquareBound(double df) {
  double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + 3.0902 * std::sqrt(a), 3.0);
}

/// Pearson's statistic of two samples' counts over the same tokens being
/// one distribution, and its degrees of freedom; tokens seen fewer than
/// ten times in both together share one bin.
std::pair<double, double> homogeneity(const std::map<int64_t, int64_t> &a,
                                      const std::map<int64_t, int64_t> &b) {
  std::map<int64_t, std::pair<double, double>> bins;
  for (auto [token, n] : a)
    bins[token].first += n;
  for (auto [token, n] : b)
    bins[token].second += n;
  std::vector<std::pair<double, double>> pooled{{0.0, 0.0}};
  double na = 0, nb = 0;
  for (auto &[token, counts] : bins) {
    na += counts.first, nb += counts.second;
    if (counts.first + counts.second < 10) {
      pooled.front().first += counts.first;
      pooled.front().second += counts.second;
    } else {
      pooled.push_back(counts);
    }
  }
  if (pooled.front().first + pooled.front().second == 0)
    pooled.erase(pooled.begin());
  double statistic = 0;
  for (auto [x, y] : pooled) {
    double expectedA = (x + y) * na / (na + nb), expectedB = (x + y) * nb / (na + nb);
    statistic += (x - expectedA) * (x - expectedA) / expectedA +
                 (y - expectedB) * (y - expectedB) / expectedB;
  }
  return {statistic, static_cast<double>(pooled.size()) - 1.0};
}

/// Per position 1..positions, the tokens `runs` sequences of `prompt`
/// (seeds 0..runs-1) generated there: their counts.
std::vector<std::map<int64_t, int64_t>>
sampleTokens(specrt_model *model, const std::vector<int64_t> &prompt,
             int64_t runs, size_t positions, specrt_speculation speculation) {
  std::vector<std::map<int64_t, int64_t>> counts(positions);
  specrt_batch *batch = nullptr;
  EXPECT_EQ(specrt_batch_open(model, &batch), SPECRT_OK) << specrt_last_error();
  EXPECT_EQ(specrt_batch_set_speculation(batch, speculation), SPECRT_OK);
  std::map<int64_t, std::vector<int64_t>> bySlot;
  std::vector<int64_t> slots(64), tokens(64);
  for (int64_t seed = 0; seed < runs || !bySlot.empty();) {
    while (seed < runs && specrt_batch_active(batch) < specrt_batch_slots(batch)) {
      int64_t slot = -1, first = -1;
      EXPECT_EQ(specrt_batch_add_seeded(batch, prompt.data(), prompt.size(),
                                        static_cast<uint64_t>(seed++), &slot, &first),
                SPECRT_OK)
          << specrt_last_error();
      bySlot[slot] = {first};
    }
    size_t count = 0;
    EXPECT_EQ(specrt_batch_step(batch, slots.data(), tokens.data(), &count), SPECRT_OK)
        << specrt_last_error();
    for (size_t i = 0; i < count; ++i) {
      auto sequence = bySlot.find(slots[i]);
      if (sequence == bySlot.end())
        continue;
      sequence->second.push_back(tokens[i]);
      if (sequence->second.size() > positions) {
        for (size_t k = 0; k < positions; ++k)
          ++counts[k][sequence->second[k + 1]];
        EXPECT_EQ(specrt_batch_remove(batch, slots[i]), SPECRT_OK);
        bySlot.erase(sequence);
      }
    }
    if (::testing::Test::HasFailure())
      break;
  }
  specrt_batch_close(batch);
  return counts;
}

/// Samples `prompt` through `artifact`'s speculative rounds and through its
/// target alone (plain rounds), `runs` seeds each, and checks with a
/// two-sample chi-square test at each of the first three positions, at the
/// 99.9th percentile, that they are one distribution; the same bound must
/// reject `control` (a biased sampler: a target alone at another
/// temperature) at some position.
void expectTargetSamples(const char *artifact, const char *control,
                         const std::vector<int64_t> &prompt, int64_t runs) {
  specrt_model *sampled = nullptr, *biased = nullptr;
  ASSERT_EQ(specrt_open(artifact, nullptr, &sampled), SPECRT_OK) << specrt_last_error();
  ASSERT_EQ(specrt_open(control, nullptr, &biased), SPECRT_OK) << specrt_last_error();
  constexpr size_t kPositions = 3;
  auto speculative = sampleTokens(sampled, prompt, runs, kPositions, SPECRT_SPECULATE_ALWAYS);
  auto alone = sampleTokens(sampled, prompt, runs, kPositions, SPECRT_SPECULATE_NEVER);
  auto controlled = sampleTokens(biased, prompt, runs, kPositions, SPECRT_SPECULATE_NEVER);
  double controlWorst = 0;
  for (size_t k = 0; k < kPositions; ++k) {
    auto [statistic, df] = homogeneity(speculative[k], alone[k]);
    EXPECT_LT(statistic, chiSquareBound(df))
        << "position " << k + 1 << ": speculative samples deviate from the target's";
    auto [control, controlDf] = homogeneity(controlled[k], alone[k]);
    controlWorst = std::max(controlWorst, control / chiSquareBound(controlDf));
    std::printf("position %zu: chi-square %.1f (bound %.1f, %g bins), "
                "control %.1f (bound %.1f)\n",
                k + 1, statistic, chiSquareBound(df), df + 1, control,
                chiSquareBound(controlDf));
  }
  EXPECT_GT(controlWorst, 1.0) << "the bound rejects no position of the biased control";
  specrt_close(sampled);
  specrt_close(biased);
}

std::string corpus() {
  std::ifstream file(SPECULA_CORPUS_FILE, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), {}};
}
} // namespace

// Sampled, to the byte-level target, the draft's tokens are drawn a byte at
// a time and verified by rejection sampling against the distributions they
// were drawn from: the tokens must be distributed as the target's own. The
// control: the same target at temperature 0.8 (draft-batch-sampled.spec).
TEST(CrossTokenizerSampling, ByteWalkTokensAreDistributedAsTheTargetsOwn) {
  std::string text = corpus();
  ASSERT_GT(text.size(), 20000u) << SPECULA_CORPUS_FILE;
  expectTargetSamples(SPECULA_TEST_ARTIFACTS "/cross-sampled.spec",
                      SPECULA_TEST_ARTIFACTS "/draft-batch-sampled.spec",
                      promptOf(text, 5000, 40), 2000);
}

// To a target with a tokenizer (the BPE model; the byte-level model as its
// draft), proposals are drawn from the tokens both vocabularies share. The
// control: the BPE target alone at temperature 0.8 (bpe-cooler.spec), whose
// 640 tokens spread the samples over more bins: 6,000 sequences each. The
// prompt is the BPE tokenizer's ids of the same text.
TEST(CrossTokenizerSampling, SharedTokensAreDistributedAsTheTargetsOwn) {
  std::string text = corpus();
  ASSERT_GT(text.size(), 20000u) << SPECULA_CORPUS_FILE;
  std::string error;
  std::unique_ptr<specrt::Tokenizer> tokenizer =
      specrt::Tokenizer::load(SPECULA_BPE_TOKENIZER, error);
  ASSERT_TRUE(tokenizer) << error;
  std::vector<int64_t> prompt{kBos};
  for (int32_t id : tokenizer->encode(text.substr(5000, 40)))
    prompt.push_back(id);
  expectTargetSamples(SPECULA_TEST_ARTIFACTS "/cross-shared-sampled.spec",
                      SPECULA_TEST_ARTIFACTS "/bpe-cooler.spec", prompt, 6000);
}
