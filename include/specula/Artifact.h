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

#include "passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"

#include <string>
#include <vector>

namespace specula {

enum class ArtifactDevice { CPU, CUDA };

struct ArtifactOptions {
  /// Where the decode loops' kernels run; the host code is for this host.
  ArtifactDevice device = ArtifactDevice::CPU;
  /// CUDA: the GPU the PTX is for (sm_80, sm_90, ...).
  std::string chip = "sm_90";
  /// CUDA: the toolkit whose libdevice provides the kernels' math functions
  /// (empty: $CUDA_HOME, else /usr/local/cuda).
  std::string cudaToolkit;
  /// CPU: run the CUDA schedule's loops (spec-gpu-schedule with this many
  /// threads per block) instead of the CPU's own, to test it without a GPU
  /// (0: off).
  int64_t gpuScheduleThreads = 0;
  /// Weights of at least this many bytes have their contractions'
  /// reductions split among GPU threads (spec-gpu-contractions); with
  /// gpuScheduleThreads, on the CPU too.
  int64_t gpuSplitMinBytes = kDefaultGPUSplitMinBytes;
  /// CUDA: contractions whose rows share an operand as
  /// spec-gpu-contractions' row tiles (off: a thread per output).
  bool gpuContractions = true;
  /// CUDA: adjacent loop nests as one kernel, dependent ones over the same
  /// iteration space, independent ones over both (spec-to-cuda{fuse-kernels}).
  bool gpuFuseKernels = true;
  /// CUDA: attention as spec-gpu-attention's two kernels per layer
  /// (spec-to-cuda{attention}).
  bool gpuAttention = true;
  /// The spec.decoder to compile.
  std::string decoder = "decoder";
  /// Positions each KV cache holds (0: the models' max_context).
  int64_t capacity = 0;
  /// CPU: constants of at least this many bytes go into the weights file
  /// (CUDA moves all of them).
  int64_t minWeightBytes = 1024;
  /// The C compiler driver that links the shared object; empty: `cc` from
  /// PATH.
  std::string linker;
  /// The CPU to generate code for: "native" (this host, with all its
  /// features) or an LLVM CPU name such as "x86-64-v3".
  std::string cpu = "native";
  /// CPU: share the column tiles of large contractions among OpenMP threads
  /// (spec-to-cpu{parallel-columns}); the library then links libomp and the
  /// runtime sets the thread count. Outputs are identical for any count.
  bool parallelColumns = true;
  /// Multiply-adds per row below which a contraction stays on one thread.
  int64_t parallelMinWork = 131072;
  /// CPU: attention in one pass over the cache per query row
  /// (spec-to-cpu{fuse-attention}).
  bool fuseAttention = true;
  /// CPU: write the scheduled IR to this file and give the shared object
  /// line tables into it, so that a profiler attributes time to its ops
  /// (spec-to-cpu{line-tables}); empty: none.
  std::string lineTables;
  /// A Hugging Face tokenizer.json the artifact carries (with the
  /// tokenizer_config.json beside it, when there is one) for the runtime to
  /// tokenize with; empty: the byte-level tokenizer (ids 0-255 are bytes).
  std::string tokenizer;
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
