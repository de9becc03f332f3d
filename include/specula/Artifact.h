//===- Artifact.h - compile a decoder into a runtime artifact ---*- C++ -*-===//
//
// Compiles a decoder composition (what `specc --emit=spec-mlir` prints:
// models and a spec.decoder) with the spec-to-cpu pipeline into an artifact
// directory the specrt runtime opens: a host shared object, a weights file it
// maps, and a manifest. The layout is runtime/include/specrt/artifact_format.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_ARTIFACT_H
#define SPECULA_ARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace specula {

struct CPUArtifactOptions {
  /// The spec.decoder to compile.
  std::string decoder = "decoder";
  /// Positions each KV cache holds (0: the models' max_context).
  int64_t capacity = 0;
  /// Constants of at least this many bytes go into the weights file.
  int64_t minWeightBytes = 1024;
  /// The C compiler driver that links the shared object; empty: `cc` from
  /// PATH.
  std::string linker;
  /// The CPU to generate code for: "native" (this host, with all its
  /// features) or an LLVM CPU name such as "x86-64-v3".
  std::string cpu = "native";
};

/// Lowers `module` (consumed: spec-to-cpu lowers it in place) for this host's
/// CPU and writes the artifact directory `path`. An existing artifact at `path` is
/// replaced; anything else there is left alone and is an error. On failure
/// nothing is left behind and a diagnostic says why.
mlir::LogicalResult writeCPUArtifact(mlir::ModuleOp module,
                                     llvm::StringRef path,
                                     const CPUArtifactOptions &options);

} // namespace specula

#endif // SPECULA_ARTIFACT_H
