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
  /// A cross-tokenizer draft's tokenizer.json, when it has one.
  std::unique_ptr<specrt::Tokenizer> draftTokenizer;
  // The compiled loops are reentrant, but one model's runs are serialized
  // where the device keeps per-model state (Device::runsConcurrently).
  std::mutex mutex;
};

namespace specrt {
/// Sets this thread's specrt_last_error() and returns `status`.
specrt_status fail(specrt_status status, std::string message);
/// specrt_generate's speculative decoding where it runs in batched rounds
/// (a cross-tokenizer draft translates between them): one sequence in a
/// batch whose steps all speculate, its tokens streamed as the compiled
/// loops stream theirs (specrt_on_token), until max_new_tokens, EOS or a
/// stop token; sampled, keyed by `seed`.
specrt_status decodeInRounds(specrt_model *model, const int64_t *prompt,
                             size_t promptLength, int64_t maxNewTokens,
                             uint64_t seed,
                             const std::vector<int64_t> &stopTokens,
                             DecodeOutput &output);
} // namespace specrt

#endif // SPECRT_MODEL_H
