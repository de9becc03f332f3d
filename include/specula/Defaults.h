//===- Defaults.h - defaults the passes, pipelines and tools share -*- C++ -*-===//
//
// A knob that several option structs expose (a pass, the pipelines that run
// it, specc's flags) takes its default from here, so that they cannot drift.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_DEFAULTS_H
#define SPECULA_DEFAULTS_H

#include <cstdint>

namespace specula {

/// Multiply-adds per row below which a contraction's column tiles stay on
/// one thread (spec-parallelize-columns{min-work}): smaller ones cost more
/// to wake threads for than they save.
constexpr int64_t kDefaultParallelMinWork = 131072;

/// Weights of at least this many bytes have their contractions' reductions
/// split among GPU threads (spec-gpu-contractions{split-min-bytes}).
constexpr int64_t kDefaultGPUSplitMinBytes = 1 << 20;

} // namespace specula

#endif // SPECULA_DEFAULTS_H
