//===- GammaCostModel.cpp - expected speedup of speculative decoding ------===//

#include "passes/Decoder/GammaCostModel.h"

#include <cassert>
#include <cmath>

using namespace specula;

double specula::expectedTokensPerStep(double alpha, int64_t gamma) {
  assert(alpha >= 0.0 && alpha <= 1.0 && gamma >= 0 && "invalid arguments");
  // The geometric series 1 + alpha + ... + alpha^gamma; its closed form
  // divides by zero at alpha = 1, where every proposal is accepted.
  if (alpha == 1.0)
    return static_cast<double>(gamma + 1);
  return (1.0 - std::pow(alpha, static_cast<double>(gamma + 1))) /
         (1.0 - alpha);
}

double specula::predictedSpeedup(double alpha, int64_t gamma,
                                 double costRatio, double verifyCost) {
  assert(costRatio > 0.0 && "a draft step has a positive cost");
  assert(verifyCost >= 0.0 && "verifying more positions costs no less");
  return expectedTokensPerStep(alpha, gamma) /
         (static_cast<double>(gamma) * (costRatio + verifyCost) + 1.0);
}

GammaChoice specula::chooseGamma(double alpha, double costRatio,
                                 int64_t maxGamma, double verifyCost) {
  assert(maxGamma >= 1 && "at least one proposal per step");
  GammaChoice best{1, expectedTokensPerStep(alpha, 1),
                   predictedSpeedup(alpha, 1, costRatio, verifyCost)};
  for (int64_t gamma = 2; gamma <= maxGamma; ++gamma) {
    double speedup = predictedSpeedup(alpha, gamma, costRatio, verifyCost);
    if (speedup > best.speedup)
      best = {gamma, expectedTokensPerStep(alpha, gamma), speedup};
  }
  return best;
}
