//===- Options.h - spec-run's command line ------------------------*- C++ -*-===//
//
// Parsed apart from main so that a fuzzer (test/fuzz) can drive it.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_TOOLS_SPEC_RUN_OPTIONS_H
#define SPECULA_TOOLS_SPEC_RUN_OPTIONS_H

#include "specrt/specrt.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specrun {

struct Options {
  std::string model;
  std::optional<std::string> prompt;
  std::optional<std::vector<int64_t>> promptIds;
  int64_t maxNewTokens = 128;
  uint64_t seed = 0;
  std::vector<int64_t> stopTokens;
  double temperature = -1, topP = -1;
  int64_t topK = -1;
  int64_t warmup = -1; // -1: 1 with --compare, else 0
  int64_t threads = 0;  // 0: all cores (OpenMP's default)
  bool noSpeculation = false, compare = false, json = false, noStream = false;
  std::string profile;
  specrt_device_kind device = SPECRT_DEVICE_ARTIFACT;
};

/// Prints "spec-run: error: MESSAGE" and a pointer to --help; returns 2.
int usageError(const std::string &message);

/// Parses the command line; returns an exit code to stop with (0 after
/// --help, 2 after a usage error), or -1 to go on.
int parseOptions(int argc, char **argv, Options &o);

} // namespace specrun

#endif // SPECULA_TOOLS_SPEC_RUN_OPTIONS_H
