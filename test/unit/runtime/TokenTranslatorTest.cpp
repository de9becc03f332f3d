//===- TokenTranslatorTest.cpp - a sampled cross-tokenizer draft's draws --===//
//
// Rejection sampling keeps the target's distribution only when each
// proposal was drawn from exactly the distribution it is verified against.
// Both of TokenTranslator's sampled proposers are checked for that with
// chi-square tests at the 99.9th percentile over many draws from fixed
// logits: drawShared (the tokens both vocabularies share) and walkBytes (a
// draft token a byte at a time, to a target that reads bytes); a sampler
// drawing from the draft's unrestricted distribution fails the same bound.
//
//===----------------------------------------------------------------------===//

#include "TokenTranslator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace specrt;

namespace {
/// Bytes, then merged pieces, BOS and EOS (the last two special).
const std::vector<std::string> kPieces = {"ab", "abc", "b ", " the", "th",
                                          "a",  "ac",  "a(", "an"};
constexpr int32_t kBytes = 256;

/// A BPE-like draft: the 256 bytes, kPieces (their "a" spelled like byte
/// 'a' too), BOS, EOS.
Vocabulary draftVocabulary() {
  Vocabulary v;
  for (int b = 0; b < kBytes; ++b)
    v.spellings.push_back(std::string(1, static_cast<char>(b)));
  for (const std::string &piece : kPieces)
    v.spellings.push_back(piece);
  v.spelled.assign(v.spellings.size(), 1);
  v.bos = static_cast<int32_t>(v.spellings.size());
  v.eos = v.bos + 1;
  v.spellings.resize(v.eos + 1);
  v.spelled.resize(v.eos + 1, 0);
  return v;
}

Encoder noEncoder() {
  return [](std::string_view) { return std::vector<int32_t>{}; };
}

/// The 99.9th percentile of chi-square with `df` degrees of freedom
/// (Wilson and Hilferty).
double chiSquareBound(double df) {
  double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + 3.0902 * std::sqrt(a), 3.0);
}

/// Pearson's statistic of `counts` (n draws) against `p`, over the tokens
/// with an expected count of at least 5 (the rest pooled); infinite when
/// a token p excludes was drawn. Its degrees of freedom into `df`.
double chiSquare(const std::map<int64_t, int64_t> &counts,
                 const std::vector<double> &p, int64_t n, double &df) {
  double statistic = 0, pooledExpected = 0, pooledCount = 0;
  int bins = 0;
  for (size_t t = 0; t < p.size(); ++t) {
    auto found = counts.find(static_cast<int64_t>(t));
    double count = found == counts.end() ? 0.0 : found->second;
    if (p[t] == 0.0 && count > 0)
      return INFINITY;
    double expected = p[t] * n;
    if (expected < 5) {
      pooledExpected += expected, pooledCount += count;
      continue;
    }
    statistic += (count - expected) * (count - expected) / expected;
    ++bins;
  }
  if (pooledExpected > 0) {
    statistic += (pooledCount - pooledExpected) * (pooledCount - pooledExpected) /
                 pooledExpected;
    ++bins;
  }
  df = bins - 1;
  return statistic;
}

class TokenTranslatorTest : public ::testing::Test {
protected:
  TokenTranslatorTest()
      : draft(draftVocabulary()), logits(draft.spellings.size()) {
    // Fixed logits favouring the merged pieces and a few bytes.
    std::mt19937_64 random(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float &x : logits)
      x = normal(random);
    for (size_t k = 0; k < kPieces.size(); ++k)
      logits[kBytes + k] += 2.0f;
    logits['t'] += 1.5f;
    logits[draft.eos] = 0.5f;
    logits[draft.bos] = 3.0f;
  }

  /// The draft's translator to a target that reads bytes (259 ids, BOS
  /// 256, EOS 257), as the example target does.
  std::unique_ptr<TokenTranslator> toBytes() const {
    return TokenTranslator::create(Vocabulary::byteLevel(259, 256, 257),
                                   noEncoder(), draft, noEncoder(), true);
  }

  Vocabulary draft;
  std::vector<float> logits;
  std::mt19937_64 random{2025};
  std::uniform_real_distribution<double> uniform{0.0, 1.0};
};
} // namespace

// A target whose tokens include some merged pieces: drawShared proposes
// only the tokens both share (never BOS), and what it draws follows the q it
// reports, softmax(logits / T) over them, renormalized.
TEST_F(TokenTranslatorTest, SharedDrawsFollowTheirDistribution) {
  Vocabulary target;
  target.spellings = {"ab", " the", "x", "a", "b ", "zz"};
  target.spelled.assign(target.spellings.size(), 1);
  target.spellings.push_back("");
  target.spelled.push_back(0);
  target.eos = 6;
  auto translator = TokenTranslator::create(target, noEncoder(), draft,
                                            noEncoder(), false);
  ASSERT_TRUE(translator->sharesTokens());
  constexpr double kTemperature = 0.7;
  std::vector<float> bias(translator->draftVocab());
  translator->sharedBias(bias.data());
  std::vector<float> biased(logits);
  for (size_t i = 0; i < biased.size(); ++i)
    biased[i] += bias[i];
  // Expected: draft ids "ab", " the", "x", "a" (byte and piece), "b ", EOS.
  std::vector<double> expected(target.spellings.size(), 0.0);
  double total = 0;
  auto add = [&](int64_t draftId, int64_t targetId) {
    double w = std::exp(logits[draftId] / kTemperature);
    expected[targetId] += w;
    total += w;
  };
  add(kBytes + 0, 0), add(kBytes + 3, 1), add('x', 2), add('a', 3),
      add(kBytes + 5, 3), add(kBytes + 2, 4), add(draft.eos, 6);
  for (double &p : expected)
    p /= total;
  constexpr int64_t kDraws = 20000;
  std::map<int64_t, int64_t> counts;
  std::vector<float> q(translator->targetVocab());
  for (int64_t n = 0; n < kDraws; ++n) {
    int64_t targetToken = -1;
    int64_t drafted = translator->drawShared(biased.data(), kTemperature,
                                             uniform(random), targetToken, q.data());
    ASSERT_NE(drafted, draft.bos);
    ++counts[targetToken];
  }
  for (size_t t = 0; t < q.size(); ++t)
    EXPECT_NEAR(q[t], expected[t], 1e-5) << "target token " << t;
  double df = 0;
  double statistic = chiSquare(counts, expected, kDraws, df);
  EXPECT_LT(statistic, chiSquareBound(df));
  // The control: the draft's own distribution over the same target tokens,
  // unrestricted mass folded onto them as if shared, must fail.
  std::vector<double> unrestricted(expected.size(), 0.0);
  double all = 0;
  for (size_t id = 0; id < logits.size(); ++id)
    all += std::exp(logits[id] / kTemperature);
  for (size_t t = 0; t < expected.size(); ++t)
    unrestricted[t] = expected[t] * total / all;
  unrestricted[2] += 1.0 - total / all;
  double control = chiSquare(counts, unrestricted, kDraws, df);
  EXPECT_GT(control, chiSquareBound(df));
}

// To a target that reads bytes: the first byte follows the draft's mass by
// first byte (EOS included); after "a" (byte 'a' or piece "a", then "ab",
// "abc", "ac", "a(", "an") the token ends with the mass of "a" against the
// longer ones, and the next byte follows q's second row, the longer ones'
// mass by their second byte.
TEST_F(TokenTranslatorTest, ByteWalksFollowTheirDistributions) {
  auto translator = toBytes();
  constexpr double kTemperature = 1.0;
  size_t vocab = translator->targetVocab();
  std::vector<double> p(logits.size(), 0.0);
  double total = 0;
  for (size_t id = 0; id < logits.size(); ++id)
    if (draft.spelled[id] || static_cast<int32_t>(id) == draft.eos)
      total += p[id] = std::exp(logits[id] / kTemperature);
  std::vector<double> first(vocab, 0.0), afterA(vocab, 0.0);
  for (size_t id = 0; id < p.size(); ++id) {
    if (static_cast<int32_t>(id) == draft.eos) {
      first[257] += p[id] / total;
      continue;
    }
    if (!draft.spelled[id])
      continue;
    const std::string &s = draft.spellings[id];
    first[static_cast<unsigned char>(s[0])] += p[id] / total;
    if (s.size() > 1 && s[0] == 'a')
      afterA[static_cast<unsigned char>(s[1])] += p[id];
  }
  double longer = 0, endsAtA = p['a'] + p[kBytes + 5];
  for (double m : afterA)
    longer += m;
  for (double &m : afterA)
    m /= longer;
  constexpr int64_t kWalks = 40000;
  std::map<int64_t, int64_t> firstCounts, secondCounts;
  int64_t sawA = 0, endedAtA = 0;
  std::vector<int64_t> proposed(3);
  std::vector<float> q(3 * vocab);
  for (int64_t n = 0; n < kWalks; ++n) {
    TokenTranslator::ByteWalk walk;
    int64_t fed = translator->walkBytes(logits.data(), kTemperature, walk, 3,
                                        [&] { return uniform(random); },
                                        proposed.data(), q.data());
    ASSERT_GE(walk.proposed, 1u);
    ++firstCounts[proposed[0]];
    if (n == 0)
      for (size_t t = 0; t < vocab; ++t)
        ASSERT_NEAR(q[t], first[t], 1e-5) << "first byte " << t;
    if (proposed[0] != 'a')
      continue;
    ++sawA;
    if (walk.proposed == 1) {
      // It ended at "a": the draft reads the likelier token spelled so.
      ++endedAtA;
      EXPECT_TRUE(fed == 'a' || fed == kBytes + 5) << fed;
      continue;
    }
    ++secondCounts[proposed[1]];
    for (size_t t = 0; t < vocab; ++t)
      ASSERT_NEAR(q[vocab + t], afterA[t], 1e-5) << "second byte " << t;
  }
  double df = 0;
  double statistic = chiSquare(firstCounts, first, kWalks, df);
  EXPECT_LT(statistic, chiSquareBound(df)) << "first bytes";
  int64_t continued = sawA - endedAtA;
  statistic = chiSquare(secondCounts, afterA, continued, df);
  EXPECT_LT(statistic, chiSquareBound(df)) << "second bytes after 'a'";
  // The token ends at "a" as often as its mass says (a binomial's 3.3
  // standard deviations).
  double endRate = endsAtA / (endsAtA + longer);
  EXPECT_NEAR(static_cast<double>(endedAtA) / sawA, endRate,
              3.3 * std::sqrt(endRate * (1 - endRate) / sawA));
  // The control: second bytes as if the token never ended at "a" (the
  // mass of "a" given to "ab") must fail.
  std::vector<double> biased(afterA);
  for (double &m : biased)
    m *= longer / (longer + endsAtA);
  biased['b'] += endsAtA / (longer + endsAtA);
  double control = chiSquare(secondCounts, biased, continued, df);
  EXPECT_GT(control, chiSquareBound(df));
}

// Greedy, the walk chooses instead of drawing: the likeliest first byte by
// mass, then on while the longer tokens outweigh the one spelled so far.
TEST_F(TokenTranslatorTest, GreedyByteWalksChooseTheLikeliestBytes) {
  auto translator = toBytes();
  // Mass on "a..." spread over "ab", "abc", "ac": 'a' wins as a first byte
  // although " the" is the likeliest single token.
  std::vector<float> logits(draft.spellings.size(), -20.0f);
  auto id = [&](const std::string &piece) {
    return kBytes + (std::find(kPieces.begin(), kPieces.end(), piece) - kPieces.begin());
  };
  logits[id(" the")] = 2.0f;
  logits[id("ab")] = 1.5f;
  logits[id("abc")] = 1.4f;
  logits[id("ac")] = 1.0f;
  logits[id("a")] = 0.5f;
  std::vector<int64_t> proposed(3);
  TokenTranslator::ByteWalk walk;
  int64_t fed = translator->walkBytes(logits.data(), 1.0, walk, 3,
                                      [] { return 0.5; }, proposed.data(),
                                      nullptr, /*greedy=*/true);
  // 'a', then 'b' ("ab" and "abc" outweigh "ac"), then "ab" itself
  // outweighs "abc": it ends there, and the draft reads "ab" next.
  EXPECT_EQ(walk.proposed, 2u);
  EXPECT_EQ(proposed[0], 'a');
  EXPECT_EQ(proposed[1], 'b');
  EXPECT_EQ(fed, id("ab"));
  EXPECT_TRUE(walk.token.empty());
}
