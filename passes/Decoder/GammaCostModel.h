//===- GammaCostModel.h - expected speedup of speculative decoding -*- C++ -*-//
//
// The cost model behind spec-choose-gamma, kept free of IR so that it can be
// unit-tested and reused by the runtime's profiler.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_DECODER_GAMMACOSTMODEL_H
#define SPECULA_PASSES_DECODER_GAMMACOSTMODEL_H

#include <cstdint>

namespace specula {

/// Expected tokens produced per target forward when `gamma` proposals are
/// each accepted with probability `alpha` (independently), counting the
/// corrected or bonus token: (1 - alpha^(gamma+1)) / (1 - alpha).
double expectedTokensPerStep(double alpha, int64_t gamma);

/// Speedup over target-only decoding when a draft step costs `costRatio`
/// target steps and verifying gamma + 1 positions costs 1 + gamma *
/// `verifyCost` target steps. Leviathan et al. take verifyCost = 0 (a
/// memory-bound target reads its weights once for all positions); compute-
/// bound targets (small models on a CPU) pay for every position.
double predictedSpeedup(double alpha, int64_t gamma, double costRatio,
                        double verifyCost = 0.0);

struct GammaChoice {
  int64_t gamma;
  double expectedTokens;
  double speedup;
};

/// The gamma in [1, maxGamma] with the highest predicted speedup; ties go to
/// the smaller gamma (less wasted draft work).
GammaChoice chooseGamma(double alpha, double costRatio, int64_t maxGamma,
                        double verifyCost = 0.0);

} // namespace specula

#endif // SPECULA_PASSES_DECODER_GAMMACOSTMODEL_H
