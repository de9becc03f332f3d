//===- GammaCostModelTest.cpp - spec-choose-gamma's cost model ------------===//

#include "passes/Decoder/GammaCostModel.h"

#include "gtest/gtest.h"

using namespace specula;

TEST(GammaCostModel, ExpectedTokensIsTheGeometricSeries) {
  // 1 + a + ... + a^gamma, summed directly.
  for (double alpha : {0.0, 0.3, 0.5, 0.8, 0.95}) {
    for (int64_t gamma = 0; gamma <= 8; ++gamma) {
      double sum = 0.0, term = 1.0;
      for (int64_t i = 0; i <= gamma; ++i, term *= alpha)
        sum += term;
      EXPECT_NEAR(expectedTokensPerStep(alpha, gamma), sum, 1e-12)
          << "alpha=" << alpha << " gamma=" << gamma;
    }
  }
}

TEST(GammaCostModel, ExpectedTokensAtTheLimits) {
  EXPECT_DOUBLE_EQ(expectedTokensPerStep(0.0, 5), 1.0);
  // alpha = 1: the closed form divides by zero; every proposal is accepted.
  EXPECT_DOUBLE_EQ(expectedTokensPerStep(1.0, 4), 5.0);
}

TEST(GammaCostModel, SpeedupChargesEachDraftStep) {
  // alpha = 0.8, gamma = 4: E = 3.3616; cost 4 * 0.05 + 1 = 1.2.
  EXPECT_NEAR(predictedSpeedup(0.8, 4, 0.05), 3.3616 / 1.2, 1e-12);
}

TEST(GammaCostModel, SpeedupChargesEachVerifiedPosition) {
  // The same, with each of the 4 extra verified positions costing 0.5 steps.
  EXPECT_NEAR(predictedSpeedup(0.8, 4, 0.05, 0.5), 3.3616 / 3.2, 1e-12);
  // A compute-bound target (verify cost near a full step per position)
  // makes even a free, good draft barely pay, and picks a short gamma.
  GammaChoice choice = chooseGamma(0.86, 0.3, 8, 0.5);
  EXPECT_EQ(choice.gamma, 1);
  EXPECT_NEAR(choice.speedup, (1 + 0.86) / 1.8, 1e-12);
}

TEST(GammaCostModel, ChoosesTheBestGammaAndPrefersTheSmallerOnTies) {
  GammaChoice choice = chooseGamma(0.8, 0.1, 8);
  for (int64_t gamma = 1; gamma <= 8; ++gamma)
    EXPECT_LE(predictedSpeedup(0.8, gamma, 0.1), choice.speedup);
  EXPECT_EQ(choice.gamma, 6);
  EXPECT_NEAR(choice.expectedTokens, expectedTokensPerStep(0.8, 6), 1e-12);

  // A free draft that is always right gains from every extra token.
  EXPECT_EQ(chooseGamma(1.0, 1e-9, 5).gamma, 5);
  // Bounded by max-gamma.
  EXPECT_EQ(chooseGamma(0.99, 0.01, 3).gamma, 3);
}

TEST(GammaCostModel, CheaperOrBetterDraftsNeverShortenGamma) {
  int64_t previous = 1;
  for (double cost : {0.5, 0.2, 0.1, 0.05, 0.01}) {
    int64_t gamma = chooseGamma(0.7, cost, 16).gamma;
    EXPECT_GE(gamma, previous) << "cost=" << cost;
    previous = gamma;
  }
  previous = 1;
  for (double alpha : {0.3, 0.5, 0.7, 0.9}) {
    int64_t gamma = chooseGamma(alpha, 0.05, 16).gamma;
    EXPECT_GE(gamma, previous) << "alpha=" << alpha;
    previous = gamma;
  }
}

TEST(GammaCostModel, AUselessDraftDoesNotPay) {
  // Never accepted: every draft step is pure overhead.
  GammaChoice choice = chooseGamma(0.0, 0.1, 8);
  EXPECT_EQ(choice.gamma, 1);
  EXPECT_LT(choice.speedup, 1.0);
  // As expensive as the target: even a good draft loses.
  EXPECT_LT(chooseGamma(0.6, 1.0, 8).speedup, 1.0);
}
