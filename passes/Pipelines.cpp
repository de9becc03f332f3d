//===- Pipelines.cpp - Specula pass pipelines -----------------------------===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void specula::buildGraphToLLVMPipeline(OpPassManager &pm,
                                       const GraphToLLVMOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.fuseElementwise)
    pm.addPass(createLinalgElementwiseOpFusionPass());

  // tensor.empty only carries a shape: reuse the buffer of a later insert
  // where possible, allocate the rest.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Decode loops carry tensors built anew each iteration (the proposals).
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createSpecOrderGlobals());
  bufferization::buildBufferDeallocationPipeline(pm);
  // Results that alias arguments or constants are returned as clones.
  pm.addPass(createConvertBufferizationToMemRefPass());

  if (options.interchangeContractions)
    pm.addNestedPass<func::FuncOp>(createSpecInterchangeContractions());
  if (options.approximateExp) {
    SpecApproximateMathOptions approximate;
    approximate.ops = {"exp"};
    pm.addNestedPass<func::FuncOp>(createSpecApproximateMath(approximate));
  }
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToFuncs());
  // LLVM intrinsics first: math.fma and math.floor (from the approximations)
  // must stay instructions, not become libm calls; what LLVM has no
  // intrinsic for (erf, tanh, ...) goes to libm.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(arith::createArithExpandOpsPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = options.runtimeAllocator;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void specula::buildSpecToCPUPipeline(OpPassManager &pm,
                                     const SpecToCPUOptions &options) {
  SpecKVCacheInplaceOptions cache;
  cache.capacity = options.capacity;
  pm.addPass(createSpecKVCacheInplace(cache));
  pm.addPass(createSpecLowerGenerate());
  pm.addPass(createSpecLowerSteps());
  GraphToLLVMOptions lowering;
  lowering.runtimeAllocator = options.runtimeAllocator;
  buildGraphToLLVMPipeline(pm, lowering);
  if (!options.weightsFile.empty()) {
    SpecExternalizeWeightsOptions weights;
    weights.path = options.weightsFile;
    weights.minBytes = options.minWeightBytes;
    pm.addPass(createSpecExternalizeWeights(weights));
  }
}

void specula::registerSpeculaPipelines() {
  PassPipelineRegistration<SpecToCPUOptions>(
      "spec-to-cpu",
      "Compile speculative decoders and their models for the CPU",
      buildSpecToCPUPipeline);
  PassPipelineRegistration<GraphToLLVMOptions>(
      "spec-graph-to-llvm",
      "Lower model functions on tensors to the LLVM dialect for the CPU",
      buildGraphToLLVMPipeline);
}
