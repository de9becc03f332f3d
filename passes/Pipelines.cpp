//===- Pipelines.cpp - Specula pass pipelines -----------------------------===//

#include "specula/Pipelines.h"
#include "passes/CPU/Passes.h"
#include "passes/Common/Passes.h"
#include "passes/Decoder/Passes.h"
#include "passes/GPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;
using namespace specula;

namespace {
/// What the CPU and the CUDA pipelines do differently up to bufferization.
struct BufferizationSteps {
  bool fuseElementwise = true;
  /// Elementwise ops read transposes' inputs in place
  /// (spec-fuse-elementwise{fold-transposes}), for the GPU's kernels; the
  /// CPU's vectorized loops prefer the copy.
  bool foldTransposes = false;
  /// The CPU's register-blocked contractions (weights, attention keys and
  /// values), scheduled on tensors (spec-block-contractions).
  bool blockContractions = false;
  /// The importer's attention chain as it is, as the CPU's loops
  /// (spec-fuse-attention) or as the GPU's kernels (spec-gpu-attention).
  enum class Attention { Unfused, CPULoops, GPUKernels } attention =
      Attention::Unfused;
};
} // namespace

/// Model functions and decode loops on tensors to buffers: the part of the
/// compilation every device shares.
static void buildBufferizationPipeline(OpPassManager &pm,
                                       const BufferizationSteps &steps) {
  using Attention = BufferizationSteps::Attention;
  pm.addPass(createSpecFoldShapeTensors());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (steps.fuseElementwise) {
    SpecFuseElementwiseOptions fuse;
    fuse.foldTransposes = steps.foldTransposes;
    pm.addPass(createSpecFuseElementwise(fuse));
  }
  if (steps.attention == Attention::CPULoops)
    pm.addNestedPass<func::FuncOp>(createSpecFuseAttention());
  else if (steps.attention == Attention::GPUKernels)
    pm.addNestedPass<func::FuncOp>(createSpecGPUAttention());
  // A rank-reducing slice's sizes (each layer's cached keys and values) are
  // not folded by canonicalization: resolved, every layer computes what it
  // derives from them (the attention mask) from the same values, and CSE
  // makes that one computation per forward.
  pm.addPass(memref::createResolveRankedShapeTypeResultDimsPass());
  // The run-time checks of sizes the graph computes the same way as the
  // attention loops fold away (CSE first: the sizes are recomputed per
  // check).
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());

  // After the last CSE, which merges them.
  pm.addPass(createSpecCloneSharedFills());
  // tensor.empty only carries a shape: reuse the buffer of a later insert
  // where possible, allocate the rest.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  // After the elimination, whose analysis grows fast with the tiles' slices.
  if (steps.blockContractions)
    pm.addNestedPass<func::FuncOp>(createSpecBlockContractions());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Decode loops carry tensors built anew each iteration (the proposals).
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // A loop that writes into a buffer it carries (a cache of slots, one
  // sequence per iteration) returns the buffer it was given.
  pm.addPass(createCanonicalizerPass());
  // A model function returns the KV cache it updated in place: without
  // this, every forward would return (copy) the whole cache. Twice: a
  // function that returns what its callee updated in place (the batched
  // rounds) drops it once the callee has.
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createSpecOrderGlobals());
  bufferization::buildBufferDeallocationPipeline(pm);
  // Results that alias arguments or constants are returned as clones.
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// What remains of host code after the device-specific steps, to LLVM: math
/// functions without an LLVM intrinsic (erf, tanh, ...) become libm calls;
/// buffers come from malloc or the runtime's allocator.
static void buildHostToLLVMPipeline(OpPassManager &pm, bool runtimeAllocator) {
  // Failed run-time checks are reported to the runtime, not fatal.
  pm.addPass(createSpecLowerChecks());
  pm.addPass(createConvertMathToFuncs());
  // LLVM intrinsics first: math.fma and math.floor (from the approximations)
  // must stay instructions, not become libm calls; what LLVM has no
  // intrinsic for (erf, tanh, ...) goes to libm.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(arith::createArithExpandOpsPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = runtimeAllocator;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
}

/// The decoder composition to model functions and decode loops on tensors.
/// `argmaxLanes`: the CPU's vector argmax (spec-lower-steps); 0 on devices
/// that schedule the linalg reduction.
/// `maxBatch` > 1 or `rounds`: also the batched rounds over `maxBatch`
/// slots.
static void buildDecoderToTensorsPipeline(OpPassManager &pm, int64_t capacity,
                                          int64_t argmaxLanes,
                                          int64_t maxBatch = 1,
                                          bool rounds = false) {
  rounds |= maxBatch > 1;
  if (rounds) {
    SpecSlotTargetOptions slots;
    slots.slots = maxBatch;
    pm.addPass(createSpecSlotTarget(slots));
  }
  SpecKVCacheInplaceOptions cache;
  cache.capacity = capacity;
  pm.addPass(createSpecKVCacheInplace(cache));
  if (rounds)
    pm.addPass(createSpecLowerRounds());
  pm.addPass(createSpecTreeAttention());
  pm.addPass(createSpecLowerGenerate());
  SpecLowerStepsOptions steps;
  steps.argmaxLanes = argmaxLanes;
  pm.addPass(createSpecLowerSteps(steps));
}

/// The verification rule and the static tree, which spec-pair-draft and
/// spec-compose-heads both take.
template <typename CompositionPassOptions>
static void setRuleAndTree(CompositionPassOptions &pass,
                           const ComposeOptions &options) {
  pass.sampling = options.sampling;
  pass.temperature = options.temperature;
  pass.topK = options.topK;
  pass.topP = options.topP;
  pass.treeParents.assign(options.treeParents.begin(),
                          options.treeParents.end());
  pass.treeRanks.assign(options.treeRanks.begin(), options.treeRanks.end());
}

void specula::buildComposePipeline(OpPassManager &pm,
                                   const ComposeOptions &options) {
  if (options.targetOnly) {
    SpecComposeTargetOptions target;
    target.sampling = options.sampling;
    target.temperature = options.temperature;
    target.topK = options.topK;
    target.topP = options.topP;
    pm.addPass(createSpecComposeTarget(target));
    return;
  }
  bool draft = options.heads.empty();
  if (draft) {
    SpecPairDraftOptions pair;
    setRuleAndTree(pair, options);
    pair.gamma = options.gamma;
    pair.minConfidence = options.draftConfidence;
    pair.crossTokenizer = options.crossTokenizer;
    pm.addPass(createSpecPairDraft(pair));
  } else {
    SpecComposeHeadsOptions compose;
    setRuleAndTree(compose, options);
    compose.heads.assign(options.heads.begin(), options.heads.end());
    compose.depth = options.depth;
    pm.addPass(createSpecComposeHeads(compose));
  }
  if (!options.treeAcceptance.empty()) {
    SpecChooseTreeOptions tree;
    tree.acceptance.assign(options.treeAcceptance.begin(),
                           options.treeAcceptance.end());
    tree.ranks = options.treeAcceptanceRanks;
    tree.verifyCost = options.verifyCost;
    tree.maxNodes = options.maxTreeNodes;
    // A draft's forward per depth; Medusa heads propose inside the
    // target's forward.
    if (draft)
      tree.draftCost = std::max<double>(options.costRatio, 0.0);
    pm.addPass(createSpecChooseTree(tree));
  } else if (options.acceptanceRate >= 0 &&
             (draft || (options.heads.size() == 1 && options.depth == 0))) {
    // One MTP module chains 1-3 deep, as DeepSeek-V3 and TensorRT-LLM run
    // it; the pass leaves Medusa heads alone.
    SpecChooseGammaOptions gamma;
    gamma.acceptanceRate = options.acceptanceRate;
    gamma.costRatio = options.costRatio;
    gamma.verifyCost = options.verifyCost;
    if (!draft)
      gamma.maxGamma = 3;
    pm.addPass(createSpecChooseGamma(gamma));
  }
  if (!draft && options.fuseHeads) {
    // The decode loop reads the heads at the last accepted position, so
    // they run on every position.
    SpecFuseMTPHeadsOptions fuse;
    fuse.lastPositionOnly = false;
    pm.addPass(createSpecFuseMTPHeads(fuse));
  }
}

void specula::buildGraphToLLVMPipeline(OpPassManager &pm,
                                       const GraphToLLVMOptions &options) {
  bool gpuSchedule = options.gpuScheduleThreads > 0;
  BufferizationSteps steps;
  steps.fuseElementwise = options.fuseElementwise;
  steps.foldTransposes = gpuSchedule;
  steps.blockContractions = options.blockContractions && !gpuSchedule;
  if (options.fuseAttention)
    steps.attention = gpuSchedule ? BufferizationSteps::Attention::GPUKernels
                                  : BufferizationSteps::Attention::CPULoops;
  auto quantize = [&](StringRef precision, ArrayRef<std::string> roles) {
    if (precision.empty() || precision == "f32")
      return;
    SpecQuantizeWeightsOptions narrow;
    narrow.precision = precision.str();
    narrow.outputHead = options.quantizeOutputHead;
    narrow.roles.assign(roles.begin(), roles.end());
    pm.addPass(createSpecQuantizeWeights(narrow));
  };
  if (options.draftWeights.empty()) {
    quantize(options.weights, {});
  } else {
    quantize(options.weights, {"target", "medusa_head", "mtp_module"});
    quantize(options.draftWeights, {"draft"});
  }
  buildBufferizationPipeline(pm, steps);
  bool parallel = options.parallelColumns && options.blockContractions &&
                  !gpuSchedule;
  if (parallel) {
    // Bufferized: the marked column loops carry nothing but buffers.
    SpecParallelizeColumnsOptions columns;
    columns.minWork = options.parallelMinWork;
    pm.addNestedPass<func::FuncOp>(createSpecParallelizeColumns(columns));
    pm.addPass(createConvertSCFToOpenMPPass());
    // The conversion wraps each iteration in a memref.alloca_scope, which
    // must stay one block; ours allocate nothing, and canonicalization
    // inlines such scopes before loops inside them become branches.
    pm.addPass(createCanonicalizerPass());
  }
  if (options.interchangeContractions && !gpuSchedule)
    pm.addNestedPass<func::FuncOp>(createSpecInterchangeContractions());
  if (options.approximateExp) {
    SpecApproximateMathOptions approximate;
    approximate.ops = {"exp"};
    pm.addNestedPass<func::FuncOp>(createSpecApproximateMath(approximate));
  }
  if (gpuSchedule) {
    // spec-to-cuda's loops, run here as ordinary loops (scf.parallel
    // becomes sequential in scf-to-cf).
    SpecGPUContractionsOptions contractions;
    contractions.splitMinBytes = options.gpuSplitMinBytes;
    pm.addNestedPass<func::FuncOp>(createSpecGPUContractions(contractions));
    SpecGPUScheduleOptions schedule;
    schedule.threads = options.gpuScheduleThreads;
    pm.addNestedPass<func::FuncOp>(createSpecGPUSchedule(schedule));
  }
  if (!options.lineTables.empty()) {
    // Ops made from here on keep the location of the op they came from: a
    // line of this snapshot.
    LocationSnapshotOptions snapshot;
    snapshot.fileName = options.lineTables;
    pm.addPass(createLocationSnapshot(snapshot));
  }
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // The blocked contractions' tiles: transfers of whole tiles become one
  // load or store per row, contractions outer products (one fused
  // multiply-add per row and depth step, in depth order).
  VectorTransferToSCFOptions vectorToSCF;
  vectorToSCF.unroll = true;
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(vectorToSCF));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createUBToLLVMConversionPass());
  buildHostToLLVMPipeline(pm, options.runtimeAllocator);
  if (parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (!options.lineTables.empty())
    pm.addPass(LLVM::createDIScopeForLLVMFuncOpPass());
}

void specula::buildSpecToCPUPipeline(OpPassManager &pm,
                                     const SpecToCPUOptions &options) {
  // 16 lanes: one AVX-512 register, or two AVX2 ones.
  buildDecoderToTensorsPipeline(pm, options.capacity, /*argmaxLanes=*/16,
                                options.maxBatch, options.rounds);
  GraphToLLVMOptions lowering;
  lowering.runtimeAllocator = options.runtimeAllocator;
  lowering.gpuScheduleThreads = options.gpuScheduleThreads;
  lowering.gpuSplitMinBytes = options.gpuSplitMinBytes;
  lowering.parallelColumns = options.parallelColumns;
  lowering.parallelMinWork = options.parallelMinWork;
  lowering.fuseAttention = options.fuseAttention;
  lowering.lineTables = options.lineTables;
  lowering.weights = options.weights;
  lowering.draftWeights = options.draftWeights;
  lowering.quantizeOutputHead = options.quantizeOutputHead;
  buildGraphToLLVMPipeline(pm, lowering);
  if (!options.weightsFile.empty()) {
    SpecExternalizeWeightsOptions weights;
    weights.path = options.weightsFile;
    weights.minBytes = options.minWeightBytes;
    pm.addPass(createSpecExternalizeWeights(weights));
  }
}

void specula::buildSpecToCUDAPipeline(OpPassManager &pm,
                                      const SpecToCUDAOptions &options) {
  buildDecoderToTensorsPipeline(pm, options.capacity, /*argmaxLanes=*/0);
  BufferizationSteps steps;
  steps.foldTransposes = true;
  if (options.attention)
    steps.attention = BufferizationSteps::Attention::GPUKernels;
  buildBufferizationPipeline(pm, steps);

  // The device split: linalg ops and copies become kernels; the decode
  // loops' control and scalar bookkeeping stay on the host.
  if (options.contractions) {
    SpecGPUContractionsOptions contractions;
    contractions.splitMinBytes = options.splitMinBytes;
    pm.addNestedPass<func::FuncOp>(createSpecGPUContractions(contractions));
  }
  SpecGPUScheduleOptions schedule;
  schedule.threads = options.threads;
  schedule.fuse = options.fuseKernels;
  schedule.merge = options.fuseKernels;
  pm.addNestedPass<func::FuncOp>(createSpecGPUSchedule(schedule));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createGpuKernelOutliningPass());
  if (options.asyncLaunches)
    pm.addNestedPass<func::FuncOp>(createSpecGPUAsyncLaunches());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());

  buildHostToLLVMPipeline(pm, /*runtimeAllocator=*/true);
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (!options.weightsFile.empty()) {
    // Kernels read every constant: all of them go to device-visible memory.
    SpecExternalizeWeightsOptions weights;
    weights.path = options.weightsFile;
    weights.minBytes = 1;
    weights.splats = true;
    pm.addPass(createSpecExternalizeWeights(weights));
  }
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  // Kernels calling math functions (__nv_expf, ...) need libdevice; without
  // a toolkit path upstream leaves them unresolved.
  binary.toolkitPath = options.toolkit;
  if (binary.toolkitPath.empty()) {
    const char *home = std::getenv("CUDA_HOME");
    binary.toolkitPath = home && *home ? home : "/usr/local/cuda";
    // Upstream reports a missing toolkit once per kernel module; without
    // one, compileToLLVM (lib/Artifact) reports the unresolved functions once.
    if (!llvm::sys::fs::is_directory(binary.toolkitPath))
      binary.toolkitPath.clear();
  }
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void specula::registerSpeculaPipelines() {
  PassPipelineRegistration<ComposeOptions>(
      "spec-compose",
      "Compose a speculative decoder from imported models: pair a draft or "
      "build one over Medusa heads or MTP modules, choose gamma or the tree, "
      "fuse the heads (or, with target-only, the target alone)",
      buildComposePipeline);
  PassPipelineRegistration<SpecToCPUOptions>(
      "spec-to-cpu",
      "Compile speculative decoders and their models for the CPU",
      buildSpecToCPUPipeline);
  PassPipelineRegistration<SpecToCUDAOptions>(
      "spec-to-cuda",
      "Compile speculative decoders and their models for NVIDIA GPUs (PTX "
      "kernels, host code calling the runtime's mgpu* functions)",
      buildSpecToCUDAPipeline);
  PassPipelineRegistration<GraphToLLVMOptions>(
      "spec-graph-to-llvm",
      "Lower model functions on tensors to the LLVM dialect for the CPU",
      buildGraphToLLVMPipeline);
}
