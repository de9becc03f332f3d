//===- Pipelines.h - Specula pass pipelines ---------------------*- C++ -*-===//

#ifndef SPECULA_PIPELINES_H
#define SPECULA_PIPELINES_H

#include "specula/Defaults.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace specula {


/// How a decoder is composed from imported models: the target with its
/// draft, or with its Medusa heads or MTP modules; how it verifies; and
/// what the cost models choose. `specc` fills this from its flags.
struct ComposeOptions : public mlir::PassPipelineOptions<ComposeOptions> {
  Option<bool> targetOnly{
      *this, "target-only",
      llvm::cl::desc("Run the target alone: a decoder that proposes nothing "
                     "(spec-compose-target); the heads, gamma, tree and "
                     "cost-model options do not apply"),
      llvm::cl::init(false)};
  ListOption<std::string> heads{
      *this, "heads",
      llvm::cl::desc("The Medusa heads or MTP modules the decoder proposes "
                     "with, in depth order (spec-compose-heads); empty: "
                     "pair the target with its draft (spec-pair-draft)")};
  Option<int64_t> gamma{
      *this, "gamma",
      llvm::cl::desc("Tokens the draft proposes per round"),
      llvm::cl::init(4)};
  Option<int64_t> depth{
      *this, "depth",
      llvm::cl::desc("With heads: tokens proposed per round, the first N "
                     "heads or the last MTP module chained up to depth N "
                     "(0: one per head, or spec-choose-gamma's choice)"),
      llvm::cl::init(0)};
  ListOption<int64_t> treeParents{
      *this, "tree-parents",
      llvm::cl::desc("Verify this tree of candidates per round: each "
                     "candidate's parent (#spec.tree)")};
  ListOption<int64_t> treeRanks{
      *this, "tree-ranks",
      llvm::cl::desc("With tree-parents: each candidate's rank among its "
                     "proposer's most likely tokens")};
  Option<bool> sampling{
      *this, "sampling",
      llvm::cl::desc("Verify by lossless rejection sampling"),
      llvm::cl::init(false)};
  Option<double> temperature{*this, "temperature",
                             llvm::cl::desc("Sampling temperature"),
                             llvm::cl::init(1.0)};
  Option<int64_t> topK{
      *this, "top-k",
      llvm::cl::desc("With sampling: the k most likely tokens only (0: off)"),
      llvm::cl::init(0)};
  Option<double> topP{
      *this, "top-p",
      llvm::cl::desc("With sampling: the smallest set of most likely tokens "
                     "holding this probability mass (1: off)"),
      llvm::cl::init(1.0)};
  Option<double> draftConfidence{
      *this, "draft-confidence",
      llvm::cl::desc("A draft's chain stops at the first token it gives a "
                     "probability below this (greedy; 0: always gamma)"),
      llvm::cl::init(0.0)};
  Option<double> acceptanceRate{
      *this, "acceptance-rate",
      llvm::cl::desc("Per-token acceptance of the draft or of one MTP "
                     "module: spec-choose-gamma picks gamma or the module's "
                     "chain depth (1-3) (negative: keep them)"),
      llvm::cl::init(-1.0)};
  Option<double> costRatio{
      *this, "cost-ratio",
      llvm::cl::desc("A draft step's (or module's) cost in target steps, "
                     "for the cost models (negative: from weight bytes)"),
      llvm::cl::init(-1.0)};
  Option<double> verifyCost{
      *this, "verify-cost",
      llvm::cl::desc("What verifying one more row adds, in target steps"),
      llvm::cl::init(0.0)};
  ListOption<double> treeAcceptance{
      *this, "tree-acceptance",
      llvm::cl::desc("Measured acceptance by depth and rank: "
                     "spec-choose-tree picks the tree from it")};
  Option<int64_t> treeAcceptanceRanks{
      *this, "tree-acceptance-ranks",
      llvm::cl::desc("Entries of tree-acceptance per depth"),
      llvm::cl::init(1)};
  Option<int64_t> maxTreeNodes{
      *this, "max-tree-nodes",
      llvm::cl::desc("The most candidates spec-choose-tree's tree may have"),
      llvm::cl::init(63)};
  Option<bool> crossTokenizer{
      *this, "cross-tokenizer",
      llvm::cl::desc("The draft has another tokenizer than the target "
                     "(spec-pair-draft's cross-tokenizer)"),
      llvm::cl::init(false)};
  Option<bool> fuseHeads{
      *this, "fuse-heads",
      llvm::cl::desc("Fuse Medusa heads into the target "
                     "(spec-fuse-mtp-heads, every position)"),
      llvm::cl::init(true)};
};

/// The decoder composition, from a module of imported models (functions
/// with roles target and draft, or medusa_head / mtp_module, as `specc
/// --emit=models-mlir` prints them) to the spec.decoder the device
/// pipelines compile (as `specc --emit=spec-mlir` prints it): the target
/// alone (target-only), or the pairing or the heads' decoder, then spec-choose-tree (with tree-acceptance) or
/// spec-choose-gamma (with acceptance-rate), then the heads fused.
void buildComposePipeline(mlir::OpPassManager &pm,
                          const ComposeOptions &options);

struct GraphToLLVMOptions : public mlir::PassPipelineOptions<GraphToLLVMOptions> {
  Option<std::string> weights{
      *this, "weights",
      llvm::cl::desc("Store the weight matrices as f16, bf16 or int8, "
                     "widened to f32 in the contractions "
                     "(spec-quantize-weights); empty or f32: as the models "
                     "store them"),
      llvm::cl::init("")};
  Option<std::string> draftWeights{
      *this, "draft-weights",
      llvm::cl::desc("The draft's weight matrices in another precision "
                     "than weights': f32, f16, bf16 or int8 "
                     "(spec-quantize-weights{roles=draft}); empty: as "
                     "weights"),
      llvm::cl::init("")};
  Option<bool> quantizeOutputHead{
      *this, "quantize-output-head",
      llvm::cl::desc("With weights: also the output head "
                     "(spec-quantize-weights{output-head})"),
      llvm::cl::init(true)};
  Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("Fuse producer/consumer elementwise linalg ops first, "
                     "never computing an element twice "
                     "(spec-fuse-elementwise)"),
      llvm::cl::init(true)};
  Option<bool> blockContractions{
      *this, "block-contractions",
      llvm::cl::desc("Register-block and vectorize the contractions whose "
                     "second operand all rows share: weights, attention keys "
                     "and values (spec-block-contractions; not with "
                     "gpu-schedule-threads)"),
      llvm::cl::init(true)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Compute attention in one pass over the cached keys and "
                     "values per query row, with online softmax "
                     "(spec-fuse-attention; with gpu-schedule-threads, "
                     "spec-gpu-attention's kernels)"),
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
  Option<int64_t> gpuScheduleThreads{
      *this, "gpu-schedule-threads",
      llvm::cl::desc("Run spec-to-cuda's loop schedule (spec-gpu-schedule "
                     "with this many threads per block) on the CPU instead "
                     "of the CPU's own, to test it without a GPU (0: off)"),
      llvm::cl::init(0)};
  Option<int64_t> gpuSplitMinBytes{
      *this, "gpu-split-min-bytes",
      llvm::cl::desc("With gpu-schedule-threads: split the reductions of "
                     "contractions whose weights have at least this many "
                     "bytes among threads "
                     "(spec-gpu-contractions{split-min-bytes})"),
      llvm::cl::init(kDefaultGPUSplitMinBytes)};
  Option<bool> parallelColumns{
      *this, "parallel-columns",
      llvm::cl::desc("Share the column tiles of large blocked contractions "
                     "among OpenMP threads (spec-parallelize-columns, then "
                     "convert-scf-to-openmp; the code then needs libomp). "
                     "Results are identical for any thread count"),
      llvm::cl::init(false)};
  Option<int64_t> parallelMinWork{
      *this, "parallel-min-work",
      llvm::cl::desc("With parallel-columns: multiply-adds per row below "
                     "which a contraction stays on one thread "
                     "(spec-parallelize-columns{min-work})"),
      llvm::cl::init(kDefaultParallelMinWork)};
  Option<std::string> lineTables{
      *this, "line-tables",
      llvm::cl::desc("Write the IR to this file as its loops are scheduled "
                     "(just before linalg becomes loops) and give the LLVM "
                     "functions line tables pointing into it, so that a "
                     "profiler attributes the compiled code's time to those "
                     "ops (perf report --sort srcline); empty: none")};
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
  Option<int64_t> maxBatch{
      *this, "max-batch",
      llvm::cl::desc("Sequences one forward of the batched rounds runs (1: "
                     "none, the decode loops only; more: spec-slot-target "
                     "and spec-lower-rounds add @<decoder>_prefill and "
                     "@<decoder>_round over a cache of that many slots)"),
      llvm::cl::init(1)};
  Option<bool> rounds{
      *this, "rounds",
      llvm::cl::desc("Build the batched rounds even for one sequence "
                     "(max-batch 1): a cross-tokenizer draft proposes only "
                     "in rounds"),
      llvm::cl::init(false)};
  Option<std::string> weights{
      *this, "weights",
      llvm::cl::desc("Store the weight matrices as f16, bf16 or int8 (see "
                     "spec-graph-to-llvm); empty or f32: as the models "
                     "store them"),
      llvm::cl::init("")};
  Option<std::string> draftWeights{
      *this, "draft-weights",
      llvm::cl::desc("The draft's weight matrices in another precision (see "
                     "spec-graph-to-llvm); empty: as weights"),
      llvm::cl::init("")};
  Option<bool> quantizeOutputHead{
      *this, "quantize-output-head",
      llvm::cl::desc("With weights: also the output head (see "
                     "spec-graph-to-llvm)"),
      llvm::cl::init(true)};
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
  Option<int64_t> gpuScheduleThreads{
      *this, "gpu-schedule-threads",
      llvm::cl::desc("Run spec-to-cuda's loop schedule on the CPU (see "
                     "spec-graph-to-llvm; 0: off)"),
      llvm::cl::init(0)};
  Option<int64_t> gpuSplitMinBytes{
      *this, "gpu-split-min-bytes",
      llvm::cl::desc("With gpu-schedule-threads: see spec-graph-to-llvm"),
      llvm::cl::init(kDefaultGPUSplitMinBytes)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Compute attention in one pass over the cached keys and "
                     "values per query row, with online softmax "
                     "(spec-fuse-attention)"),
      llvm::cl::init(true)};
  Option<bool> parallelColumns{
      *this, "parallel-columns",
      llvm::cl::desc("Share large contractions' column tiles among OpenMP "
                     "threads (see spec-graph-to-llvm); the runtime sets "
                     "the thread count (spec-run --threads)"),
      llvm::cl::init(true)};
  Option<int64_t> parallelMinWork{
      *this, "parallel-min-work",
      llvm::cl::desc("Multiply-adds per row below which a contraction stays "
                     "on one thread (see spec-graph-to-llvm)"),
      llvm::cl::init(kDefaultParallelMinWork)};
  Option<std::string> lineTables{
      *this, "line-tables",
      llvm::cl::desc("Write the scheduled IR to this file and give the code "
                     "line tables into it, for profilers (see "
                     "spec-graph-to-llvm); empty: none")};
};

/// The CPU compilation of speculative decoders, from the decoder composition
/// (models and spec.decoder ops, Medusa heads fused for every position, as
/// `specc --emit=spec-mlir` prints it) to the LLVM dialect: preallocated
/// caches written in place (spec-kv-cache-inplace), the decode loops exported
/// through MLIR's C interface (spec-lower-generate), the spec ops as tensors
/// (spec-lower-steps), spec-graph-to-llvm, and the weights moved into a file
/// (spec-externalize-weights). `specc` and `writeArtifact` run exactly
/// this and only add I/O.
void buildSpecToCPUPipeline(mlir::OpPassManager &pm,
                            const SpecToCPUOptions &options);

struct SpecToCUDAOptions
    : public mlir::PassPipelineOptions<SpecToCUDAOptions> {
  Option<int64_t> capacity{
      *this, "capacity",
      llvm::cl::desc("Positions each KV cache holds (0: the model's "
                     "max_context)"),
      llvm::cl::init(0)};
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("The GPU the PTX is for (sm_80, sm_90, ...); the "
                     "driver compiles it for that chip or a newer one"),
      llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. +ptx80 (default: the lowest PTX "
                     "ISA the chip accepts)"),
      llvm::cl::init("")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("The CUDA toolkit whose libdevice (nvvm/libdevice) "
                     "provides the math functions kernels call (default: "
                     "$CUDA_HOME, else /usr/local/cuda)"),
      llvm::cl::init("")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("Optimization level of the kernels"),
                       llvm::cl::init(3)};
  Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads per block (spec-gpu-schedule)"),
      llvm::cl::init(128)};
  Option<bool> contractions{
      *this, "contractions",
      llvm::cl::desc("Contractions whose rows share an operand as "
                     "spec-gpu-contractions' loops (each weight loaded once "
                     "for a tile of rows); off: one thread per output"),
      llvm::cl::init(true)};
  Option<int64_t> splitMinBytes{
      *this, "split-min-bytes",
      llvm::cl::desc("Split the reductions of contractions whose weights "
                     "have at least this many bytes among threads "
                     "(spec-gpu-contractions{split-min-bytes})"),
      llvm::cl::init(kDefaultGPUSplitMinBytes)};
  Option<bool> fuseKernels{
      *this, "fuse-kernels",
      llvm::cl::desc("Adjacent loop nests as one kernel: over the same "
                     "iteration space where each iteration depends only on "
                     "the same iteration (spec-gpu-schedule{fuse}), "
                     "independent ones over both their iterations "
                     "(spec-gpu-schedule{merge})"),
      llvm::cl::init(true)};
  Option<bool> attention{
      *this, "attention",
      llvm::cl::desc("The importer's attention as two kernels that read the "
                     "cached keys and values in place (spec-gpu-attention); "
                     "off: a kernel per op of the chain"),
      llvm::cl::init(true)};
  Option<bool> asyncLaunches{
      *this, "async-launches",
      llvm::cl::desc("Chain launches on one stream and synchronize only "
                     "before host code that touches their buffers "
                     "(spec-gpu-async-launches); off: synchronize after "
                     "every launch"),
      llvm::cl::init(true)};
  Option<std::string> weightsFile{
      *this, "weights-file",
      llvm::cl::desc("Write every constant into this file, which the runtime "
                     "loads into memory the device reads (needed to run the "
                     "result; empty: keep them in the module)")};
};

/// The CUDA compilation of speculative decoders, from the same decoder
/// composition as spec-to-cpu, sharing its steps up to bufferization; then
/// the device split (spec-gpu-schedule: linalg ops and copies as kernels,
/// one thread per output), kernel outlining, NVVM for `chip`, host code to
/// LLVM with the runtime's allocator and gpu-to-llvm (launches through the
/// mgpu* functions the runtime provides), the weights moved into a file, and
/// the kernels serialized as PTX into the module (gpu-module-to-binary).
void buildSpecToCUDAPipeline(mlir::OpPassManager &pm,
                             const SpecToCUDAOptions &options);

/// Registers every pipeline as a named pass pipeline (spec-compose,
/// spec-graph-to-llvm, spec-to-cpu, spec-to-cuda).
void registerSpeculaPipelines();

} // namespace specula

#endif // SPECULA_PIPELINES_H
