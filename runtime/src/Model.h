//===- Model.h - an open artifact, as the C API holds it ----------*- C++ -*-===//

#ifndef SPECRT_MODEL_H
#define SPECRT_MODEL_H

#include "Device.h"
#include "Manifest.h"

#include "specrt/Tokenizer.h"
#include "specrt/specrt.h"

#include <memory>
#include <mutex>
#include <string>

struct specrt_model {
  specrt::Manifest manifest;
  std::unique_ptr<specrt::Device> device;
  /// The artifact's tokenizer.json, when model.tokenizer.kind says so.
  std::unique_ptr<specrt::Tokenizer> tokenizer;
  // The compiled loops are reentrant, but one model's runs are serialized
  // where the device keeps per-model state (Device::runsConcurrently).
  std::mutex mutex;
};

namespace specrt {
/// Sets this thread's specrt_last_error() and returns `status`.
specrt_status fail(specrt_status status, std::string message);
} // namespace specrt

#endif // SPECRT_MODEL_H
