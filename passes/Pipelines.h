//===- Pipelines.h - Specula pass pipelines ---------------------*- C++ -*-===//

#ifndef SPECULA_PASSES_PIPELINES_H
#define SPECULA_PASSES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace specula {

struct GraphToLLVMOptions : public mlir::PassPipelineOptions<GraphToLLVMOptions> {
  Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("Fuse producer/consumer elementwise linalg ops first"),
      llvm::cl::init(true)};
};

/// Lowers model functions on tensors (what the ONNX importer produces) to the
/// LLVM dialect for the CPU: bufferization with function boundaries in
/// identity layout (so callers pass plain strided buffers), ownership-based
/// deallocation, loops, then LLVM. Math functions without an LLVM intrinsic
/// (erf, tanh, ...) become libm calls.
void buildGraphToLLVMPipeline(mlir::OpPassManager &pm,
                              const GraphToLLVMOptions &options);

/// Registers every pipeline as a named pass pipeline (spec-graph-to-llvm).
void registerSpeculaPipelines();

} // namespace specula

#endif // SPECULA_PASSES_PIPELINES_H
