//===- Device.h - where an artifact's decode loops run -----------*- C++ -*-===//
//
// A device loads an artifact's code and weights and runs its entry points.
// The CPU device dlopens the host shared object; a CUDA device will load the
// PTX through the driver API and implement the mgpu* functions that
// upstream's gpu-to-llvm lowering calls, behind the same interface.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_DEVICE_H
#define SPECRT_DEVICE_H

#include "Manifest.h"

#include <memory>
#include <string>
#include <vector>

namespace specrt {

/// What one run of a decode loop produced.
struct DecodeOutput {
  std::vector<int64_t> sequence; // the prompt, then generated tokens
  int64_t targetForwards = 0;
  /// Verify rounds by the number of proposals they accepted.
  std::vector<int64_t> acceptedHistogram;
  /// Time the rounds spent proposing and verifying.
  int64_t proposeNanoseconds = 0, verifyNanoseconds = 0;
};

class Device {
public:
  virtual ~Device() = default;

  /// Runs the speculative decode loop, or the target-only loop.
  virtual specrt_status decode(bool speculative, const int64_t *prompt,
                               size_t promptLength, int64_t maxNewTokens,
                               int64_t seed,
                               const std::vector<int64_t> &stopTokens,
                               DecodeOutput &output, std::string &error) = 0;
};

/// Loads the artifact in `directory` for the CPU.
specrt_status openCPUDevice(const std::string &directory,
                            const Manifest &manifest, bool verifyChecksums,
                            std::unique_ptr<Device> &device,
                            std::string &error);

} // namespace specrt

#endif // SPECRT_DEVICE_H
