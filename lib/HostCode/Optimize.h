//===- Optimize.h - LLVM's O3 for the code spec-to-cpu emits ----*- C++ -*-===//
//
// One optimization pipeline for everything Specula compiles for the host:
// the artifact writer (lib/Artifact) and the JIT that runs graphs in tests
// (lib/Execution).
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_LIB_HOSTCODE_OPTIMIZE_H
#define SPECULA_LIB_HOSTCODE_OPTIMIZE_H

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace specula {

/// Optimizes `module` at O3 for `machine` (null: no target; the vectorizers
/// then assume generic vectors), without LLVM's loop unrollers.
void optimizeHostModule(llvm::Module &module, llvm::TargetMachine *machine);

} // namespace specula

#endif // SPECULA_LIB_HOSTCODE_OPTIMIZE_H
