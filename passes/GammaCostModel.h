//===- GammaCostModel.h - expected speedup of speculative decoding -*- C++ -*-//
//
// The cost model behind spec-choose-gamma, kept free of IR so that it can be
// unit-tested and reused by the runtime's profiler.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_GAMMACOSTMODEL_H
#define SPECULA_PASSES_GAMMACOSTMODEL_H

#include <cstdint>

namespace specula {

/// Expected tokens produced per target forward when `gamma` proposals are
/// each accepted with probability `alpha` (independently), counting the
/// corrected or bonus token: (1 - alpha^(gamma+1)) / (1 - alpha).
double expectedTokensPerStep(double alpha, int64_t gamma);

/// Speedup over target-only decoding when a draft step costs `costRatio`
/// target steps and verifying gamma + 1 positions costs one target step.
double predictedSpeedup(double alpha, int64_t gamma, double costRatio);

struct GammaChoice {
  int64_t gamma;
  double expectedTokens;
  double speedup;
};

/// The gamma in [1, maxGamma] with the highest predicted speedup; ties go to
/// the smaller gamma (less wasted draft work).
GammaChoice chooseGamma(double alpha, double costRatio, int64_t maxGamma);

} // namespace specula

#endif // SPECULA_PASSES_GAMMACOSTMODEL_H
