//===- ObjectCode.h - the decoder's object code and shared object -*- C++ -*-===//
//
// The host side of writing an artifact: a target machine for this host,
// LLVM IR optimized and emitted as object files (code generation shared
// among threads), and the shared object linked from them.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_LIB_ARTIFACT_OBJECTCODE_H
#define SPECULA_LIB_ARTIFACT_OBJECTCODE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace specula {

/// A target machine for `cpu` ("native": this host and its features, or an
/// LLVM CPU name) on this host's architecture, producing
/// position-independent code.
mlir::FailureOr<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine(mlir::ModuleOp module, llvm::StringRef cpu);

/// Translates the LLVM-dialect `module` to LLVM IR, optimizes it (O3) and
/// emits it for `cpu` as object files in `directory`: the functions are
/// spread over up to `threads` parts (0: one per hardware thread), largest
/// first, and each part's code is generated on its own thread. Returns the
/// files written.
mlir::FailureOr<llvm::SmallVector<std::string>>
emitObjectFiles(mlir::ModuleOp module, llvm::StringRef cpu,
                llvm::StringRef directory, unsigned threads,
                mlir::TimingScope &timing);

/// The C compiler driver `linker` names (default: cc), found on PATH unless
/// it is a path.
mlir::FailureOr<std::string> findLinker(mlir::ModuleOp module,
                                        llvm::StringRef linker);

/// Links `objects` into the shared object `library` with the C compiler
/// driver `driver` (it knows where libc and libm are), with LLVM's OpenMP
/// runtime when `module` has parallel loops.
mlir::LogicalResult linkSharedObject(mlir::ModuleOp module,
                                     llvm::ArrayRef<std::string> objects,
                                     llvm::StringRef library,
                                     llvm::StringRef driver);

} // namespace specula

#endif // SPECULA_LIB_ARTIFACT_OBJECTCODE_H
