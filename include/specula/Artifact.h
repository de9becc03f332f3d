//===- Artifact.h - compile a decoder into a runtime artifact ---*- C++ -*-===//
//
// Compiles a decoder composition (what `specc --emit=spec-mlir` prints:
// models and a spec.decoder) with the spec-to-cpu or spec-to-cuda pipeline
// into an artifact directory the specrt runtime opens: a host shared object
// (with the PTX kernels embedded, for CUDA), a weights file, and a manifest.
// The layout is runtime/include/specrt/artifact_format.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_ARTIFACT_H
#define SPECULA_ARTIFACT_H

#include "specula/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"

#include <string>
#include <vector>

namespace specula {

enum class ArtifactDevice { CPU, CUDA };

/// What writeArtifact and compileToLLVM do. The device pipeline's knobs are
/// that pipeline's own options (specula/Pipelines.h declares each once, with
/// its default); only what the artifact adds is declared here.
struct ArtifactOptions {
  /// Where the decode loops' kernels run; the host code is for this host.
  ArtifactDevice device = ArtifactDevice::CPU;
  /// spec-to-cpu's options, for the CPU (their weights file is the
  /// artifact's and set by the writer).
  SpecToCPUOptions cpuPipeline;
  /// spec-to-cuda's options, for CUDA (likewise).
  SpecToCUDAOptions cudaPipeline;
  /// The spec.decoder to compile.
  std::string decoder = "decoder";
  /// The C compiler driver that links the shared object; empty: `cc` from
  /// PATH.
  std::string linker;
  /// The CPU to generate code for: "native" (this host, with all its
  /// features) or an LLVM CPU name such as "x86-64-v3".
  std::string cpu = "native";
  /// A Hugging Face tokenizer.json the artifact carries (with the
  /// tokenizer_config.json beside it, when there is one) for the runtime to
  /// tokenize with; empty: the byte-level tokenizer (ids 0-255 are bytes).
  std::string tokenizer;
  /// A cross-tokenizer draft's tokenizer.json, carried as
  /// draft_tokenizer.json; empty: the draft reads bytes.
  std::string draftTokenizer;
  /// Tokens that end generation like EOS (an export folder's list of EOS
  /// ids); the manifest's model.stop_token_ids.
  std::vector<int64_t> stopTokens;
  /// Threads that generate the object code, each for a part of the module
  /// (the largest functions spread among them); 0: one per hardware thread.
  /// The code is the same for any count.
  unsigned codegenThreads = 0;
};

/// Lowers `module` (consumed: the device's pipeline lowers it in place) and
/// writes the artifact directory `path`. An existing artifact at `path` is
/// replaced; anything else there is left alone and is an error. On failure
/// nothing is left behind and a diagnostic says why. Each step is timed
/// under `timing` (a default TimingScope times nothing).
mlir::LogicalResult writeArtifact(mlir::ModuleOp module, llvm::StringRef path,
                                  const ArtifactOptions &options,
                                  mlir::TimingScope &timing);
inline mlir::LogicalResult writeArtifact(mlir::ModuleOp module,
                                         llvm::StringRef path,
                                         const ArtifactOptions &options) {
  mlir::TimingScope untimed;
  return writeArtifact(module, path, options, untimed);
}

/// What writeArtifact compiles, without the object code: lowers `module` in
/// place to the LLVM dialect with the device's pipeline (spec-to-cpu or
/// spec-to-cuda), moving the weights into `weightsFile` (empty: they stay in
/// the module). For CUDA, refuses a chip LLVM does not know and kernels left
/// with unresolved functions (no libdevice found).
mlir::LogicalResult compileToLLVM(mlir::ModuleOp module,
                                  const ArtifactOptions &options,
                                  llvm::StringRef weightsFile,
                                  mlir::TimingScope &timing);

} // namespace specula

#endif // SPECULA_ARTIFACT_H
