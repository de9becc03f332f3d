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
  Option<bool> interchangeContractions{
      *this, "interchange-contractions",
      llvm::cl::desc("Move reduction loops of matmul-like ops outside the "
                     "innermost output loop (spec-interchange-contractions)"),
      llvm::cl::init(true)};
  Option<bool> approximateExp{
      *this, "approximate-exp",
      llvm::cl::desc("Replace math.exp with a polynomial approximation that "
                     "vectorizes (spec-approximate-math{ops=exp})"),
      llvm::cl::init(true)};
  Option<bool> runtimeAllocator{
      *this, "runtime-allocator",
      llvm::cl::desc("Allocate buffers with _mlir_memref_to_llvm_alloc and "
                     "_free, which the specrt runtime provides and reuses "
                     "across forwards (default: malloc and free)"),
      llvm::cl::init(false)};
};

/// Lowers model functions on tensors (what the ONNX importer produces) to the
/// LLVM dialect for the CPU: bufferization with function boundaries in
/// identity layout (so callers pass plain strided buffers), ownership-based
/// deallocation, loops, then LLVM. Math functions without an LLVM intrinsic
/// (erf, tanh, ...) become libm calls.
void buildGraphToLLVMPipeline(mlir::OpPassManager &pm,
                              const GraphToLLVMOptions &options);

struct SpecToCPUOptions : public mlir::PassPipelineOptions<SpecToCPUOptions> {
  Option<int64_t> capacity{
      *this, "capacity",
      llvm::cl::desc("Positions each KV cache holds (0: the model's "
                     "max_context)"),
      llvm::cl::init(0)};
  Option<std::string> weightsFile{
      *this, "weights-file",
      llvm::cl::desc("Write constants of at least min-weight-bytes into this "
                     "file and read them at spec_weights_base + offset "
                     "(spec-externalize-weights); empty: keep them in the "
                     "module")};
  Option<int64_t> minWeightBytes{
      *this, "min-weight-bytes",
      llvm::cl::desc("Smallest constant moved into the weights file"),
      llvm::cl::init(1024)};
  Option<bool> runtimeAllocator{
      *this, "runtime-allocator",
      llvm::cl::desc("Allocate through the specrt runtime's reusing allocator "
                     "(see spec-graph-to-llvm)"),
      llvm::cl::init(true)};
};

/// The CPU compilation of speculative decoders, from the decoder composition
/// (models and spec.decoder ops, Medusa heads fused for every position, as
/// `specc --emit=spec-mlir` prints it) to the LLVM dialect: preallocated
/// caches written in place (spec-kv-cache-inplace), the decode loops exported
/// through MLIR's C interface (spec-lower-generate), the spec ops as tensors
/// (spec-lower-steps), spec-graph-to-llvm, and the weights moved into a file
/// (spec-externalize-weights). `specc` and `writeCPUArtifact` run exactly
/// this and only add I/O.
void buildSpecToCPUPipeline(mlir::OpPassManager &pm,
                            const SpecToCPUOptions &options);

/// Registers every pipeline as a named pass pipeline (spec-graph-to-llvm,
/// spec-to-cpu).
void registerSpeculaPipelines();

} // namespace specula

#endif // SPECULA_PASSES_PIPELINES_H
