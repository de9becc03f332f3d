//===- specc.cpp - build a speculative decoder from ONNX models -----------===//
//
//   specc target.onnx -o model.spec   (the target alone)
//   specc target.onnx --draft draft.onnx [--gamma N] -o model.spec
//   specc target_dir/ --draft draft_dir/ -o model.spec   (export folders)
//   specc deepseek_dir/ -o model.spec   (its mtp_module.onnx proposes)
//   specc target.onnx --mtp-head head1.onnx --mtp-head head2.onnx ...
//   specc target.onnx --mtp-head module.onnx --mtp-depth 2
//   specc ... --emit=models-mlir | spec-mlir [-o decoder.mlir]
//   specc ... --emit=llvm-mlir [--weights-file weights.bin] [-o decoder.mlir]
//
// Imports the models into one module (functions @target, @draft, @head1...;
// --emit=models-mlir prints it) and composes the decoder with the
// spec-compose pipeline (specula/Pipelines.h), whose options the flags and a
// --profile fill: the target alone (spec-compose-target), a draft paired
// after checking its compatibility (spec-pair-draft) or the heads' decoder
// (spec-compose-heads), gamma, the
// MTP depth or the tree from the cost models, Medusa heads fused. That
// composition is printed (--emit=spec-mlir) or compiled by spec-to-cpu (or
// spec-to-cuda): into an artifact the runtime runs (--emit=artifact, the
// default for an output named *.spec: decoder.so, weights.bin,
// manifest.json) or printed as the LLVM dialect (--emit=llvm-mlir).
//
//===----------------------------------------------------------------------===//

#include "specula/Artifact.h"
#include "specula/InitAll.h"
#include "specula/ONNXImport.h"
#include "specrt/Tokenizer.h"
#include "specrt/VocabularyBridge.h"

#include "dialects/spec/SpecOps.h"
#include "specula/Pipelines.h"
#include "passes/Decoder/TreeCostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

using namespace mlir;
using namespace specula;
namespace cl = llvm::cl;

static cl::OptionCategory category("specc options");
static cl::opt<std::string> targetPath(
    cl::Positional, cl::Required,
    cl::desc("<target.onnx, or a Hugging Face export folder with model.onnx, "
             "config.json and tokenizer.json>"),
    cl::cat(category));
static cl::opt<std::string> draftPath(
    "draft",
    cl::desc("An external draft model (ONNX, or an export folder) to pair "
             "with the target (without --draft or --mtp-head: the MTP "
             "modules of the target's export folder, else the target alone)"),
    cl::value_desc("draft.onnx"), cl::cat(category));
static cl::opt<std::string> tokenizerPath(
    "tokenizer",
    cl::desc("A Hugging Face tokenizer.json the artifact carries for the "
             "runtime (default: the one beside the target, when there is "
             "one; else the byte-level tokenizer)"),
    cl::value_desc("tokenizer.json"), cl::cat(category));
static cl::list<std::string> headPaths(
    "mtp-head",
    cl::desc("A Medusa head or MTP module (ONNX), in depth order; repeat"),
    cl::value_desc("head.onnx"), cl::cat(category));
static cl::opt<int64_t> mtpDepth(
    "mtp-depth",
    cl::desc("Tokens the heads propose per round: the first N heads, or the "
             "last MTP module chained with itself up to depth N (0: one per "
             "--mtp-head, or the cost model's choice with --acceptance-rate "
             "or --profile)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> treeShape(
    "tree",
    cl::desc("With Medusa heads or a draft: verify a tree of candidates "
             "per round, given as Medusa's medusa_choices, e.g. [[0], [1], "
             "[0, 0]] (a path of ranks per candidate: [0, 1] is the second "
             "most likely token at depth 2 after the most likely at depth "
             "1; a draft's tree sets gamma to its depth); 'auto': the tree "
             "the cost model picks from a --profile (the default when a "
             "profile of Medusa heads or of a draft's tree is given); "
             "'probe': the 10 most likely tokens "
             "at each depth (each head, or --gamma draft forwards) under "
             "the most likely path, whose `spec-run --compare --profile` "
             "measures every rank for 'auto'"),
    cl::value_desc("paths|auto|probe"), cl::cat(category));
static cl::opt<int64_t> maxTreeNodes(
    "max-tree-nodes",
    cl::desc("With --tree auto: the most candidates the tree may have"),
    cl::init(63), cl::cat(category));
static cl::opt<int64_t> proposalCount("gamma",
                              cl::desc("Tokens the draft proposes per step"),
                              cl::init(4), cl::cat(category));
static cl::opt<double> draftConfidence(
    "draft-confidence",
    cl::desc("With --draft (greedy, a chain): stop a round's drafting at "
             "the first token the draft gives a probability below this, "
             "so that rounds where the draft is unsure verify fewer tokens "
             "(0 < p < 1; default 0: always gamma)"),
    cl::init(0.0), cl::cat(category));
static cl::opt<double> acceptanceRate(
    "acceptance-rate",
    cl::desc("Expected per-token acceptance of the draft (or of one MTP "
             "module); picks gamma (the module's chain depth, 1-3) with the "
             "cost model (spec-choose-gamma)"),
    cl::init(-1.0), cl::cat(category));
static cl::opt<std::string> profilePath(
    "profile",
    cl::desc("Acceptance (and a draft step's cost) measured by `spec-run "
             "--profile`; picks gamma or the MTP depth with the cost model "
             "like --acceptance-rate, and for Medusa heads the tree (--tree "
             "auto)"),
    cl::value_desc("profile.json"), cl::cat(category));
static cl::opt<bool> sampling(
    "sampling", cl::desc("Verify by lossless rejection sampling"),
    cl::cat(category));
static cl::opt<double> temperature("temperature",
                                   cl::desc("Sampling temperature"),
                                   cl::init(1.0), cl::cat(category));
static cl::opt<int64_t> topK(
    "top-k", cl::desc("With --sampling: sample among the k most likely "
                      "tokens only (0: off)"),
    cl::init(0), cl::cat(category));
static cl::opt<double> topP(
    "top-p",
    cl::desc("With --sampling: sample among the smallest set of most likely "
             "tokens holding this probability mass (1: off)"),
    cl::init(1.0), cl::cat(category));
static cl::opt<bool> fuseHeads(
    "fuse-heads",
    cl::desc("Fuse Medusa heads into the target (spec-fuse-mtp-heads); "
             "DeepSeek-style MTP modules are not fused yet"),
    cl::init(true), cl::cat(category));
static cl::opt<int64_t> capacity(
    "capacity",
    cl::desc("Positions each KV cache and the sequence hold, prompt "
             "included (0: the models' max_context)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> maxBatch(
    "max-batch",
    cl::desc("Also compile batched rounds over a cache of this many "
             "sequence slots (a prefill, plain and speculative rounds; CPU); "
             "1: the decode loops only (and a cross-tokenizer draft's rounds "
             "over one slot)"),
    cl::init(1), cl::cat(category));
static cl::opt<bool> crossTokenizer(
    "cross-tokenizer",
    cl::desc("Pair a --draft whose tokenizer differs from the target's: the "
             "runtime spells its proposals and tokenizes them again in the "
             "target's tokens between batched rounds (chains, greedy or "
             "sampled, CPU; "
             "docs/cross-tokenizer.md)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> draftTokenizerPath(
    "draft-tokenizer",
    cl::desc("With --cross-tokenizer: the draft's tokenizer.json (default: "
             "the one beside the draft; none: the draft reads bytes)"),
    cl::value_desc("tokenizer.json"), cl::cat(category));
static cl::opt<double> minSharedTokens(
    "cross-tokenizer-min-shared",
    cl::desc("With --cross-tokenizer: refuse a draft fewer of whose tokens "
             "than this fraction are spelled like one of the target's"),
    cl::init(0.05), cl::cat(category));
static cl::opt<std::string> weightPrecision(
    "weights",
    cl::desc("Store the weight matrices as f32, f16 or bf16 (half the "
             "bytes each forward reads), or int8 with a scale per output "
             "column (a quarter), widened to f32 in the contractions "
             "(spec-quantize-weights); CPU. Default: as the target's ONNX "
             "file stores them (f16 or bf16 for a half-precision export, "
             "which computes in f32; f32 on CUDA)"),
    cl::value_desc("f32|f16|bf16|int8"), cl::init("f32"), cl::cat(category));
static cl::opt<std::string> draftWeightPrecision(
    "draft-weights",
    cl::desc("With --draft: store the draft's weight matrices in this "
             "precision instead of --weights' (a narrow draft beside an "
             "f32 target, or the other way round)"),
    cl::value_desc("f32|f16|bf16|int8"), cl::init(""), cl::cat(category));
static cl::opt<bool> quantizeOutputHead(
    "quantize-output-head",
    cl::desc("With --weights f16, bf16 or int8: also the output head "
             "(default: on; off keeps the logits' matrix in f32)"),
    cl::init(true), cl::cat(category));
enum class Emit { Artifact, ModelsMLIR, SpecMLIR, LLVMMLIR };
static cl::opt<Emit> emit(
    "emit",
    cl::desc("What to produce (default: artifact when -o names a *.spec, "
             "else spec-mlir)"),
    cl::values(clEnumValN(Emit::Artifact, "artifact",
                          "a directory the runtime runs (spec-run): "
                          "decoder.so, weights.bin, manifest.json, for this "
                          "host's CPU"),
               clEnumValN(Emit::ModelsMLIR, "models-mlir",
                          "the imported models, named target, draft or "
                          "head1, head2, ... (the spec-compose pipeline's "
                          "input)"),
               clEnumValN(Emit::SpecMLIR, "spec-mlir",
                          "the decoder composition: the imported models and "
                          "the spec.decoder (spec-to-cpu's input)"),
               clEnumValN(Emit::LLVMMLIR, "llvm-mlir",
                          "the composition compiled by spec-to-cpu (or "
                          "spec-to-cuda), in the LLVM dialect")),
    cl::cat(category));
static cl::opt<std::string> weightsFile(
    "weights-file",
    cl::desc("With --emit=llvm-mlir: move the weights into this file, as "
             "artifacts do (default: keep them in the module)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<ArtifactDevice> device(
    "device", cl::desc("Where the decode loops run (default: cpu)"),
    cl::values(clEnumValN(ArtifactDevice::CPU, "cpu",
                          "this host's CPU (spec-to-cpu)"),
               clEnumValN(ArtifactDevice::CUDA, "cuda",
                          "an NVIDIA GPU: PTX kernels, host code for this "
                          "host's CPU (spec-to-cuda)")),
    cl::init(ArtifactDevice::CPU), cl::cat(category));
static cl::opt<std::string> chip(
    "chip",
    cl::desc("With --device cuda: the GPU the PTX is for (sm_80, sm_90, "
             "...; default sm_90); the driver compiles it for that chip or "
             "a newer one"),
    cl::init("sm_90"), cl::cat(category));
static cl::opt<std::string> cudaToolkit(
    "cuda-toolkit",
    cl::desc("With --device cuda: the CUDA toolkit whose libdevice provides "
             "the kernels' math functions (default: $CUDA_HOME, else "
             "/usr/local/cuda)"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<int64_t> gpuScheduleOnCPU(
    "gpu-schedule-on-cpu",
    cl::desc("For testing: with --device cpu, run the loops of the CUDA "
             "schedule (this many threads per block) instead of the CPU's "
             "own"),
    cl::init(0), cl::Hidden, cl::cat(category));
static cl::opt<int64_t> gpuSplitMinBytes(
    "gpu-split-min-bytes",
    cl::desc("With --device cuda (or --gpu-schedule-on-cpu): split the "
             "reductions of contractions whose weights have at least this "
             "many bytes among threads, each into partial sums added in "
             "order (spec-gpu-contractions; default 1 MiB; 0: every static "
             "one)"),
    cl::init(kDefaultGPUSplitMinBytes), cl::cat(category));
static cl::opt<bool> gpuContractions(
    "gpu-contractions",
    cl::desc("With --device cuda: contractions whose rows share an operand "
             "as tiles of rows that load each weight once "
             "(spec-gpu-contractions; default on); off: a thread per "
             "output, to compare"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> gpuFuseKernels(
    "gpu-fuse-kernels",
    cl::desc("With --device cuda: adjacent loop nests as one kernel, over "
             "the same iteration space where each iteration depends only "
             "on the same iteration (spec-gpu-schedule{fuse}), independent "
             "ones over both their iterations (spec-gpu-schedule{merge}); "
             "default on; off: a kernel per op, to compare"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> gpuAttention(
    "gpu-attention",
    cl::desc("With --device cuda: attention as two kernels per layer that "
             "read the cached keys and values in place (spec-gpu-attention; "
             "default on); off: a kernel per op of the imported chain, to "
             "compare"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> cpu(
    "cpu",
    cl::desc("CPU the artifact's code is for: native (this host, all its "
             "features; the default) or an LLVM CPU name, e.g. x86-64-v3 "
             "to run on any AVX2 machine"),
    cl::init("native"), cl::cat(category));
static cl::opt<bool> parallelColumns(
    "parallel-columns",
    cl::desc("With --device cpu: share the column tiles of large "
             "contractions among threads (OpenMP; spec-run --threads sets "
             "how many); outputs are identical for any count (default: on)"),
    cl::init(true), cl::cat(category));
// cl::desc keeps a reference: the text must outlive the option.
static const std::string parallelMinWorkHelp =
    "With --parallel-columns: multiply-adds per row below which a "
    "contraction stays on one thread (default " +
    std::to_string(kDefaultParallelMinWork) +
    "; smaller ones cost less than waking threads)";
static cl::opt<int64_t> parallelMinWork(
    "parallel-min-work", cl::desc(parallelMinWorkHelp),
    cl::init(kDefaultParallelMinWork), cl::cat(category));
static cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("With --device cpu: compute attention in one pass over the "
             "cached keys and values per query row, with online softmax "
             "(spec-fuse-attention; default: on)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> lineTables(
    "line-tables",
    cl::desc("With --device cpu: write the compiled IR, as its loops are "
             "scheduled, to this file and give the code line tables into "
             "it, so that `perf report --sort srcline` says which op the "
             "time went to (bench/op_profile.py)"),
    cl::value_desc("file.mlir"), cl::cat(category));
static cl::opt<unsigned> codegenThreads(
    "codegen-threads",
    cl::desc("Threads that optimize and generate the object code, each for "
             "a part of the decoder's functions (default 0: one per "
             "hardware thread); the results are the same for any count"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> timing(
    "timing",
    cl::desc("Print where the compile time went: import, composition, each "
             "pass of the device's pipeline, LLVM optimization, code "
             "generation and linking"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> linker(
    "linker",
    cl::desc("C compiler driver that links the artifact's shared object "
             "(default: cc)"),
    cl::value_desc("program"), cl::cat(category));

/// What a `spec-run --profile` file measured: the per-token acceptance
/// rate and, with --compare, the costs of a draft step and of each verified
/// position relative to a target step.
struct Profile {
  double acceptanceRate;
  std::optional<double> costRatio, verifyCost;
  /// Each depth's acceptance by rank: from a tree decoder's rounds by final
  /// node, or a chain's accepted positions (rank 0 only).
  TopKAcceptance topK;
  /// Whether a tree decoder was measured (`--tree probe`, say).
  bool ofTree = false;
  /// What proposed: the profile's `proposer`.
  std::string proposer;
};

/// The per-(depth, rank) acceptance of Medusa heads or a draft in the
/// profile `object` (of `path`), or an empty table when it measured another
/// proposer.
static FailureOr<TopKAcceptance>
readTopKAcceptance(const llvm::json::Object &object, StringRef path) {
  auto integers = [](const llvm::json::Array *array)
      -> std::optional<std::vector<int64_t>> {
    if (!array)
      return std::nullopt;
    std::vector<int64_t> values;
    for (const llvm::json::Value &value : *array) {
      std::optional<int64_t> integer = value.getAsInteger();
      if (!integer || *integer < 0)
        return std::nullopt;
      values.push_back(*integer);
    }
    return values;
  };
  if (object.getString("proposer") != "medusa" &&
      object.getString("proposer") != "draft")
    return TopKAcceptance();
  if (const llvm::json::Object *tree = object.getObject("tree")) {
    auto parents = integers(tree->getArray("parents"));
    auto ranks = integers(tree->getArray("ranks"));
    auto rounds = integers(tree->getArray("rounds_by_final_node"));
    bool wellFormed = parents && ranks && rounds &&
                      parents->size() == ranks->size() &&
                      rounds->size() == parents->size() + 1;
    for (size_t node = 1; wellFormed && node <= parents->size(); ++node)
      wellFormed = (*parents)[node - 1] < static_cast<int64_t>(node);
    if (!wellFormed) {
      llvm::errs() << "error: the profile '" << path
                   << "' has a tree that is not parents, ranks and "
                      "rounds_by_final_node (one more) with parents before "
                      "their children; write it with spec-run --profile\n";
      return failure();
    }
    return estimateTopKAcceptance(TreeShape{*parents, *ranks}, *rounds);
  }
  // A chain: position i was accepted in the rounds that accepted i - 1 too.
  TopKAcceptance table;
  if (const llvm::json::Array *positions =
          object.getArray("accepted_per_position")) {
    double before = 1.0;
    for (const llvm::json::Value &value : *positions) {
      std::optional<double> accepted = value.getAsNumber();
      if (!accepted || *accepted < 0 || *accepted > before) {
        llvm::errs() << "error: the profile '" << path
                     << "' has accepted_per_position that is not a falling "
                        "list of fractions\n";
        return failure();
      }
      table.push_back({before > 0 ? *accepted / before : 0.0});
      before = *accepted;
    }
  }
  return table;
}

static FailureOr<Profile> readProfile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    llvm::errs() << "error: cannot read the profile '" << path
                 << "': " << buffer.getError().message() << "\n";
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    llvm::errs() << "error: the profile '" << path
                 << "' is not JSON: " << llvm::toString(json.takeError())
                 << "\n";
    return failure();
  }
  std::optional<double> rate, cost, verify;
  if (auto *object = json->getAsObject()) {
    rate = object->getNumber("per_token_acceptance");
    cost = object->getNumber("cost_ratio");
    verify = object->getNumber("verify_cost");
  }
  if (!rate || *rate < 0 || *rate > 1) {
    llvm::errs() << "error: the profile '" << path
                 << "' has no per_token_acceptance in [0, 1]; write it with "
                    "spec-run --profile\n";
    return failure();
  }
  if ((cost && !(*cost > 0)) || (verify && !(*verify >= 0))) {
    llvm::errs() << "error: the profile '" << path
                 << "' has a cost_ratio that is not positive or a negative "
                    "verify_cost\n";
    return failure();
  }
  FailureOr<TopKAcceptance> topK =
      readTopKAcceptance(*json->getAsObject(), path);
  if (failed(topK))
    return failure();
  const llvm::json::Object &object = *json->getAsObject();
  return Profile{*rate,
                 cost,
                 verify,
                 std::move(*topK),
                 object.getObject("tree") != nullptr,
                 object.getString("proposer").value_or("").str()};
}

/// The target's export-folder metadata (empty for a plain ONNX file).
static std::map<std::string, std::string> targetFolderMetadata;
/// The precision the target's ONNX file stores its weight matrices in.
static std::string targetStoredWeights = "f32";

/// Without --draft or --mtp-head, the MTP modules of the target's export
/// folder (config.json's num_nextn_predict_layers) propose.
static std::vector<ExportFolderModel> folderModules;

/// Finds the target folder's MTP modules when no proposer is given; a
/// failure after the error.
static LogicalResult findFolderModules() {
  if (!draftPath.empty() || !headPaths.empty())
    return success();
  std::string error;
  FailureOr<ExportFolderMTP> mtp =
      readExportFolderMTPModules(resolveModelPath(targetPath), error);
  if (failed(mtp)) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  if (mtp->declared > 0 && mtp->modules.empty())
    llvm::errs() << "specc: note: config.json declares " << mtp->declared
                 << " MTP module(s) (num_nextn_predict_layers) but no "
                    "mtp_module.onnx is beside model.onnx: compiling the "
                    "target alone\n";
  for (const ExportFolderModel &module : mtp->modules)
    llvm::errs() << "specc: proposer: the export folder's MTP module '"
                 << module.path << "' (depth "
                 << module.metadata.at("spec_depth") << ")\n";
  folderModules = std::move(mtp->modules);
  return success();
}

/// The heads or MTP modules that propose, in depth order: --mtp-head's, or
/// the export folder's.
static std::vector<std::string> headFiles() {
  if (!headPaths.empty())
    return headPaths;
  std::vector<std::string> paths;
  for (const ExportFolderModel &module : folderModules)
    paths.push_back(module.path);
  return paths;
}

static bool hasProposer() { return !draftPath.empty() || !headFiles().empty(); }

/// Imports the model at `givenPath` (a file or an export folder) as function
/// `name`; an export folder's config.json and tokenizer.json supply the
/// contract's metadata the ONNX file lacks, with spec_role `role` (or
/// `metadata`, when given, does).
static LogicalResult
importInto(ModuleOp module, StringRef givenPath, StringRef name,
           StringRef role,
           const std::map<std::string, std::string> *metadata = nullptr) {
  std::string path = resolveModelPath(givenPath);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return emitError(UnknownLoc::get(module.getContext()))
           << "cannot read '" << path << "': " << buffer.getError().message();
  ONNXImportOptions options;
  options.functionName = name.str();
  options.requireContract = true;
  options.halfAsFloat = true;
  std::string error;
  FailureOr<std::map<std::string, std::string>> folder =
      metadata ? *metadata : readExportFolderMetadata(path, role, error);
  if (failed(folder))
    return emitError(UnknownLoc::get(module.getContext())) << error;
  if (role == "target")
    targetFolderMetadata = *folder;
  options.defaultMetadata = std::move(*folder);
  ONNXImportFacts facts;
  if (failed(importONNX(module, (*buffer)->getBuffer(), path, options, &facts)))
    return failure();
  if (role == "target")
    targetStoredWeights = facts.weightPrecision;
  // The command line says which model is the target and which the draft,
  // whatever role the file's metadata gives it (a draft measured as a
  // target, say).
  std::optional<spec::FunctionRole> kind = spec::symbolizeFunctionRole(role);
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (func && kind &&
      (*kind == spec::FunctionRole::Target ||
       *kind == spec::FunctionRole::Draft))
    func->setAttr(
        spec::SpecDialect::kRoleAttrName,
        spec::RoleAttr::get(module.getContext(), *kind, std::nullopt));
  return success();
}

/// The tokenizer.json model @`function` (imported from `modelPath`) reads:
/// `given`, else the one beside the model; empty for none (bytes). Checked
/// here (it loads; its vocabulary fits the model's; it is the tokenizer the
/// model names, when it names one) so that a bad one fails at compile time,
/// not when the artifact is run.
static FailureOr<std::string> chooseTokenizer(ModuleOp module, StringRef given,
                                              StringRef modelPath,
                                              StringRef function) {
  std::string path = given.str();
  if (path.empty()) {
    SmallString<256> beside(llvm::sys::path::parent_path(resolveModelPath(modelPath)));
    llvm::sys::path::append(beside, "tokenizer.json");
    if (!llvm::sys::fs::exists(beside))
      return std::string();
    path = std::string(beside);
  }
  std::string error;
  std::unique_ptr<specrt::Tokenizer> tokenizer = specrt::Tokenizer::load(path, error);
  if (!tokenizer) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  FailureOr<std::string> fingerprint = tokenizerFingerprint(path, error);
  if (failed(fingerprint)) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  auto model = module.lookupSymbol<func::FuncOp>(function);
  auto config = model ? model->getAttrOfType<spec::ModelConfigAttr>(
                            spec::SpecDialect::kConfigAttrName)
                      : spec::ModelConfigAttr();
  if (config && static_cast<int64_t>(tokenizer->vocabSize()) > config.getVocabSize()) {
    llvm::errs() << "error: '" << path << "' has " << tokenizer->vocabSize()
                 << " tokens but the " << function << "'s vocabulary has "
                 << config.getVocabSize() << "\n";
    return failure();
  }
  if (config && config.getTokenizer() && config.getTokenizer().getValue() != *fingerprint) {
    llvm::errs() << "error: '" << path << "' is not the tokenizer the "
                 << function << " names: its fingerprint is " << *fingerprint
                 << ", the " << function << "'s tokenizer_sha256 is "
                 << config.getTokenizer().getValue()
                 << " (give the tokenizer.json the model was exported with)\n";
    return failure();
  }
  return path;
}

/// Model @`function`'s vocabulary as the bytes its tokens stand for: from
/// its tokenizer.json, else ids 0-255 are bytes.
static FailureOr<specrt::Vocabulary> vocabularyOf(ModuleOp module,
                                                  StringRef function,
                                                  StringRef tokenizerFile) {
  auto config = module.lookupSymbol<func::FuncOp>(function)
                    ->getAttrOfType<spec::ModelConfigAttr>(
                        spec::SpecDialect::kConfigAttrName);
  if (!config) {
    llvm::errs() << "error: --cross-tokenizer: the " << function
                 << " has no configuration (vocab_size, BOS, EOS)\n";
    return failure();
  }
  auto size = static_cast<size_t>(config.getVocabSize());
  int32_t bos = config.getBosTokenId().value_or(-1),
          eos = config.getEosTokenId().value_or(-1);
  if (tokenizerFile.empty())
    return specrt::Vocabulary::byteLevel(size, bos, eos);
  std::string error;
  std::unique_ptr<specrt::Tokenizer> tokenizer =
      specrt::Tokenizer::load(tokenizerFile.str(), error);
  if (!tokenizer) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  return specrt::Vocabulary::of(*tokenizer, size, bos, eos);
}

/// --cross-tokenizer: the draft's tokenizer, and how many of its tokens are
/// spelled like one of the target's (said in a remark; too few refused).
static FailureOr<std::string> checkCrossTokenizer(ModuleOp module,
                                                  StringRef targetTokenizer) {
  FailureOr<std::string> draftTokenizer =
      chooseTokenizer(module, draftTokenizerPath, draftPath, "draft");
  if (failed(draftTokenizer))
    return failure();
  if (draftTokenizer->empty() && targetTokenizer.empty()) {
    // Both would read bytes: the same vocabulary, nothing to translate.
    llvm::errs() << "error: --cross-tokenizer: neither the target nor the "
                 << "draft has a tokenizer.json beside it, so both would "
                 << "read bytes; give the draft's with --draft-tokenizer\n";
    return failure();
  }
  FailureOr<specrt::Vocabulary> target =
      vocabularyOf(module, "target", targetTokenizer);
  FailureOr<specrt::Vocabulary> draft =
      vocabularyOf(module, "draft", *draftTokenizer);
  if (failed(target) || failed(draft))
    return failure();
  specrt::VocabularyBridge bridge = specrt::VocabularyBridge::build(*draft, *target);
  size_t size = bridge.toTarget.size();
  llvm::errs() << draftPath << ":0:0: remark: " << bridge.mapped << " of "
               << size << " draft tokens are spelled like a target token; "
               << "the runtime re-tokenizes the draft's proposals into the "
               << "target's tokens between rounds\n";
  if (bridge.mapped < minSharedTokens * size) {
    llvm::errs() << "error: --cross-tokenizer: only " << bridge.mapped
                 << " of the draft's " << size << " tokens are spelled like "
                 << "one of the target's, under --cross-tokenizer-min-shared "
                 << llvm::formatv("{0}", minSharedTokens.getValue())
                 << " (the draft writes text the target "
                 << "tokenizes otherwise; pair a draft of the same language)\n";
    return failure();
  }
  return *draftTokenizer;
}

/// `--tree probe` `heads` deep (Medusa heads, or a draft's gamma): each
/// depth's 10 most likely tokens under the path of most likely ones, so
/// that one profile measures every rank `--tree auto` may use at every
/// depth.
static std::vector<TreeShape::Path> probePaths(size_t heads) {
  std::vector<TreeShape::Path> paths;
  TreeShape::Path above;
  for (size_t depth = 1; depth <= heads; ++depth) {
    for (int64_t rank = 0; rank < 10; ++rank) {
      paths.push_back(above);
      paths.back().push_back(rank);
    }
    above.push_back(0);
  }
  return paths;
}

static constexpr const char *kAutoNeedsProfile =
    "error: --tree auto chooses the tree from measured acceptance; give "
    "--profile, written by `spec-run --compare --profile` on a decoder built "
    "with --tree probe (which measures every rank the tree may use)\n";

/// The measured acceptance `topK` (rows of ranks by depth, made of equal
/// width) as spec-choose-tree's input.
static void setTreeAcceptance(ComposeOptions &compose, TopKAcceptance topK) {
  size_t width = 1;
  for (const std::vector<double> &ranks : topK)
    width = std::max(width, ranks.size());
  SmallVector<double> acceptance;
  for (std::vector<double> &ranks : topK) {
    ranks.resize(width, 0.0);
    llvm::append_range(acceptance, ranks);
  }
  compose.treeAcceptance = acceptance;
  compose.treeAcceptanceRanks = width;
}

/// The paths of `--tree`'s Medusa medusa_choices (one path of ranks per
/// candidate).
static FailureOr<std::vector<TreeShape::Path>>
parseTreePaths(StringRef choices) {
  auto fail = [&](const llvm::Twine &message) {
    llvm::errs() << "error: --tree: " << message << "\n";
    return failure();
  };
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(choices);
  if (!parsed)
    return fail("not a JSON list of paths: " +
                llvm::toString(parsed.takeError()));
  const llvm::json::Array *list = parsed->getAsArray();
  if (!list || list->empty())
    return fail("expected a non-empty list of paths such as [[0], [1], [0, 0]]");
  std::vector<TreeShape::Path> paths;
  for (const llvm::json::Value &entry : *list) {
    const llvm::json::Array *path = entry.getAsArray();
    if (!path || path->empty())
      return fail("every path is a non-empty list of ranks, such as [0, 1]");
    TreeShape::Path ranks;
    for (const llvm::json::Value &rank : *path) {
      std::optional<int64_t> value = rank.getAsInteger();
      if (!value || *value < 0 || *value > 1024)
        return fail("ranks are integers from 0 (the most likely token)");
      ranks.push_back(*value);
    }
    paths.push_back(std::move(ranks));
  }
  return paths;
}

/// The tree `paths` describe, with candidates ordered by depth, then path.
static FailureOr<spec::TreeAttr> buildTree(MLIRContext *context,
                                           std::vector<TreeShape::Path> paths) {
  std::string error;
  std::optional<TreeShape> tree = TreeShape::fromPaths(std::move(paths), error);
  if (!tree) {
    llvm::errs() << "error: --tree: " << error << "\n";
    return failure();
  }
  return spec::TreeAttr::get(context, tree->parents, tree->ranks);
}

/// The tree `--tree` gives: its paths, or the probe `probeDepth` deep; a
/// failure after the error.
static FailureOr<spec::TreeAttr> getTreeOption(MLIRContext *context,
                                               size_t probeDepth) {
  FailureOr<std::vector<TreeShape::Path>> paths =
      treeShape == "probe" ? probePaths(probeDepth) : parseTreePaths(treeShape);
  if (failed(paths))
    return failure();
  return buildTree(context, std::move(*paths));
}

/// Sets `compose`'s tree: --tree's paths or the probe tree, or for --tree
/// auto (and a profile of a tree without --tree) the measured acceptance
/// spec-choose-tree picks the tree from. A failure after the error.
static LogicalResult setTreeOptions(ModuleOp module, ComposeOptions &compose,
                                    TopKAcceptance measuredTopK,
                                    bool measuredTree) {
  bool draft = compose.heads.empty();
  bool medusa = false;
  if (!draft) {
    auto role = module.lookupSymbol<func::FuncOp>(compose.heads[0])
                    ->getAttrOfType<spec::RoleAttr>(
                        spec::SpecDialect::kRoleAttrName);
    medusa = role && role.getKind() == spec::FunctionRole::MedusaHead;
  }
  bool chooseTree =
      treeShape == "auto" ||
      (treeShape.empty() &&
       (draft ? measuredTree : medusa && !measuredTopK.empty()));
  if (!draft && (chooseTree || treeShape == "probe") && !medusa) {
    llvm::errs() << "error: --tree " << treeShape
                 << " builds a tree of Medusa heads' (or a draft's) "
                    "candidates; '"
                 << headFiles().front() << "' is not a Medusa head\n";
    return failure();
  }
  if (chooseTree && measuredTopK.empty()) {
    llvm::errs() << kAutoNeedsProfile;
    return failure();
  }
  size_t depth = draft              ? static_cast<size_t>(proposalCount)
                 : mtpDepth > 0     ? static_cast<size_t>(mtpDepth)
                                    : compose.heads.size();
  if (chooseTree) {
    // No deeper than the heads given.
    if (!draft)
      measuredTopK.resize(std::min(measuredTopK.size(), depth));
    setTreeAcceptance(compose, std::move(measuredTopK));
  } else if (!treeShape.empty()) {
    FailureOr<spec::TreeAttr> tree = getTreeOption(module.getContext(), depth);
    if (failed(tree))
      return failure();
    compose.treeParents = tree->getParents();
    compose.treeRanks = tree->getRanks();
  }
  return success();
}

/// Checks the flags that only make sense together; a failure after the
/// error.
static LogicalResult checkFlags() {
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "error: " << message << "\n";
    return failure();
  };
  if (!draftPath.empty() && !headPaths.empty())
    return fail("give --draft or --mtp-head, not both");
  if ((crossTokenizer || draftTokenizerPath.getNumOccurrences() ||
       minSharedTokens.getNumOccurrences()) &&
      (draftPath.empty() || !crossTokenizer))
    return fail("--cross-tokenizer pairs a --draft with another tokenizer; "
                "--draft-tokenizer and --cross-tokenizer-min-shared go with "
                "it");
  if (crossTokenizer && (!treeShape.empty() ||
                         draftConfidence.getNumOccurrences() ||
                         device == ArtifactDevice::CUDA))
    return fail("--cross-tokenizer: chains of proposals on the CPU so far "
                "(not with --tree, --draft-confidence or --device cuda)");
  if (!(minSharedTokens >= 0.0 && minSharedTokens <= 1.0))
    return fail("--cross-tokenizer-min-shared takes a fraction in [0, 1]");
  if (!hasProposer()) {
    // The target alone: nothing to propose, so nothing to tune.
    for (const cl::Option *flag :
         {(const cl::Option *)&proposalCount, (const cl::Option *)&treeShape,
          (const cl::Option *)&acceptanceRate, (const cl::Option *)&profilePath,
          (const cl::Option *)&mtpDepth,
          (const cl::Option *)&draftConfidence})
      if (flag->getNumOccurrences())
        return fail("--" + flag->ArgStr +
                    " tunes a proposer; add --draft or --mtp-head (without "
                    "either, specc compiles the target alone)");
  }
  if (!draftPath.empty() && !treeShape.empty() && treeShape != "probe" &&
      treeShape != "auto" && proposalCount.getNumOccurrences())
    return fail("--gamma and --tree: a draft's tree is gamma deep, so the "
                "tree's paths give gamma");
  if (maxTreeNodes.getNumOccurrences() && treeShape != "auto")
    return fail("--max-tree-nodes bounds the tree of --tree auto");
  if (maxTreeNodes < 1)
    return fail("--max-tree-nodes must be at least 1");
  if (mtpDepth < 0 || (mtpDepth.getNumOccurrences() && headFiles().empty()))
    return fail("--mtp-depth takes a positive number of --mtp-head "
                "proposals");
  if ((topK.getNumOccurrences() || topP.getNumOccurrences()) && !sampling)
    return fail("--top-k and --top-p filter sampling; add --sampling");
  if (draftConfidence.getNumOccurrences() &&
      (draftPath.empty() || !treeShape.empty() || sampling ||
       !(draftConfidence > 0.0 && draftConfidence < 1.0)))
    return fail("--draft-confidence takes a probability in (0, 1) and stops "
                "a draft's chain under greedy verification (not with "
                "--mtp-head, --tree or --sampling)");
  if (!lineTables.empty() && device == ArtifactDevice::CUDA)
    return fail("--line-tables gives CPU code line tables; the CUDA kernels "
                "have none (compile with --device cpu to profile)");
  if (!cudaToolkit.empty() && !llvm::sys::fs::is_directory(cudaToolkit))
    return fail("--cuda-toolkit '" + cudaToolkit + "' is not a directory");
  if (gpuSplitMinBytes < 0)
    return fail("--gpu-split-min-bytes must not be negative, got " +
                llvm::Twine(gpuSplitMinBytes));
  if (profilePath.getNumOccurrences() && acceptanceRate.getNumOccurrences())
    return fail("give --acceptance-rate or --profile, not both");
  if (maxBatch < 1)
    return fail("--max-batch must be at least 1 (one sequence: the decode "
                "loops only), got " + llvm::Twine(maxBatch));
  if (maxBatch > 1 && device == ArtifactDevice::CUDA)
    return fail("--max-batch: batched rounds run on the CPU so far (the "
                "CUDA attention kernels take one sequence)");
  if (draftWeightPrecision.getNumOccurrences() && draftPath.empty())
    return fail("--draft-weights needs --draft (the precision of the "
                "draft's weights)");
  for (cl::opt<std::string> *flag : {&weightPrecision, &draftWeightPrecision}) {
    if (flag == &draftWeightPrecision && !flag->getNumOccurrences())
      continue;
    std::string name = ("--" + flag->ArgStr).str();
    if (!llvm::is_contained({"f32", "f16", "bf16", "int8"}, flag->getValue()))
      return fail(name + " must be f32, f16, bf16 or int8, got '" +
                  flag->getValue() + "'");
    if (flag->getValue() != "f32" && device == ArtifactDevice::CUDA)
      return fail(name + " " + flag->getValue() + ": narrow weights run on "
                  "the CPU so far (the CUDA contraction kernels read f32)");
  }
  return success();
}

/// What `--profile` measured, for the cost models.
struct Measurements {
  std::optional<double> acceptanceRate, costRatio, verifyCost;
  TopKAcceptance topK;
  bool ofTree = false;
};

static FailureOr<Measurements> readMeasurements() {
  Measurements measured;
  if (profilePath.empty())
    return measured;
  FailureOr<Profile> profile = readProfile(profilePath);
  if (failed(profile))
    return failure();
  measured.acceptanceRate = profile->acceptanceRate;
  measured.costRatio = profile->costRatio;
  measured.verifyCost = profile->verifyCost;
  // Acceptance by rank only from the same kind of proposer.
  if (profile->proposer == (draftPath.empty() ? "medusa" : "draft")) {
    measured.topK = std::move(profile->topK);
    measured.ofTree = profile->ofTree;
  }
  return measured;
}

/// spec-compose's options from the flags and the measurements; the heads
/// and the tree are set once the models are imported.
static void setComposeOptions(ComposeOptions &compose,
                              const Measurements &measured) {
  compose.targetOnly = !hasProposer();
  compose.gamma = proposalCount;
  compose.sampling = sampling;
  compose.temperature = temperature;
  compose.topK = topK;
  compose.topP = topP;
  compose.draftConfidence = draftConfidence;
  compose.acceptanceRate = measured.acceptanceRate.value_or(acceptanceRate);
  compose.costRatio = measured.costRatio.value_or(-1.0);
  compose.verifyCost = measured.verifyCost.value_or(0.0);
  compose.maxTreeNodes = maxTreeNodes;
  compose.fuseHeads = fuseHeads;
  compose.depth = mtpDepth;
  compose.crossTokenizer = crossTokenizer;
}

/// Imports the target and its draft or heads into `module` under the names
/// spec-compose expects (target, draft, head1, head2, ...) and names the
/// heads in `compose`.
static LogicalResult importModels(ModuleOp module, ComposeOptions &compose) {
  if (failed(importInto(module, targetPath, "target", "target")))
    return failure();
  if (!draftPath.empty())
    return importInto(module, draftPath, "draft", "draft");
  std::vector<std::string> heads = headFiles();
  if (heads.empty())
    return success();
  std::string name;
  for (auto [i, path] : llvm::enumerate(heads)) {
    name = "head" + std::to_string(i + 1);
    compose.heads.push_back(name);
    if (failed(importInto(module, path, name, "",
                          folderModules.empty() ? nullptr
                                                : &folderModules[i].metadata)))
      return failure();
  }
  // spec-compose-heads checks this too; here the error names the file.
  auto last = module.lookupSymbol<func::FuncOp>(name)->getAttrOfType<spec::RoleAttr>(
      spec::SpecDialect::kRoleAttrName);
  if (mtpDepth > static_cast<int64_t>(heads.size()) &&
      (!last || last.getKind() != spec::FunctionRole::MTPModule)) {
    llvm::errs() << "error: --mtp-depth " << mtpDepth << " needs "
                 << mtpDepth << " heads but " << heads.size()
                 << " are given; only a DeepSeek-style MTP module can run "
                    "again at the next depth, and '"
                 << heads.back() << "' is not one\n";
    return failure();
  }
  return success();
}

/// --weights, or the precision the target's file stores its weights in
/// (on the CPU; the CUDA kernels read f32), said in a remark.
static std::string weightsToStore() {
  if (weightPrecision.getNumOccurrences() || targetStoredWeights == "f32")
    return weightPrecision;
  if (device == ArtifactDevice::CUDA)
    return "f32";
  llvm::errs() << targetPath << ":0:0: remark: the target's weight matrices are "
               << "stored as " << targetStoredWeights << ": kept so (f32 "
               << "arithmetic; --weights f32 widens them)\n";
  return targetStoredWeights;
}

/// The artifact writer's options from the flags.
static void fillArtifactOptions(std::string tokenizer, ArtifactOptions &options) {
  options.device = device;
  SpecToCUDAOptions &cuda = options.cudaPipeline;
  cuda.chip = chip;
  cuda.toolkit = cudaToolkit;
  cuda.capacity = capacity;
  cuda.splitMinBytes = gpuSplitMinBytes;
  cuda.contractions = gpuContractions;
  cuda.fuseKernels = gpuFuseKernels;
  cuda.attention = gpuAttention;
  SpecToCPUOptions &cpuPipeline = options.cpuPipeline;
  cpuPipeline.capacity = capacity;
  cpuPipeline.maxBatch = maxBatch;
  cpuPipeline.rounds = crossTokenizer;
  cpuPipeline.weights = weightsToStore();
  cpuPipeline.draftWeights = draftWeightPrecision;
  cpuPipeline.quantizeOutputHead = quantizeOutputHead;
  cpuPipeline.gpuScheduleThreads = gpuScheduleOnCPU;
  cpuPipeline.gpuSplitMinBytes = gpuSplitMinBytes;
  cpuPipeline.parallelColumns = parallelColumns;
  cpuPipeline.parallelMinWork = parallelMinWork;
  cpuPipeline.fuseAttention = fuseAttention;
  cpuPipeline.lineTables = lineTables;
  options.linker = linker;
  options.cpu = cpu;
  options.tokenizer = std::move(tokenizer);
  options.codegenThreads = codegenThreads;
  // All of an export folder's EOS ids stop generation.
  if (auto ids = targetFolderMetadata.find("eos_token_ids");
      ids != targetFolderMetadata.end())
    for (StringRef id : llvm::split(ids->second, ',')) {
      int64_t token;
      if (!id.getAsInteger(10, token) &&
          std::to_string(token) != targetFolderMetadata["eos_token_id"])
        options.stopTokens.push_back(token);
    }
}

/// Prints `module` to -o.
static LogicalResult printModule(ModuleOp module) {
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  module.print(output->os());
  output->os() << "\n";
  output->keep();
  return success();
}

/// What -o gets: --emit's choice, else an artifact for a *.spec name.
static FailureOr<Emit> getEmit() {
  Emit what = emit.getNumOccurrences()
                  ? emit.getValue()
                  : (StringRef(outputPath).ends_with(".spec") ? Emit::Artifact
                                                              : Emit::SpecMLIR);
  if (!lineTables.empty() && what != Emit::Artifact &&
      what != Emit::LLVMMLIR) {
    llvm::errs() << "error: --line-tables point into the compiled code; "
                    "write an artifact (-o NAME.spec) or --emit=llvm-mlir\n";
    return failure();
  }
  if (what == Emit::Artifact && outputPath == "-") {
    llvm::errs() << "error: an artifact is a directory; name it with -o "
                    "(e.g. -o model.spec)\n";
    return failure();
  }
  return what;
}

/// Parse the flags, import the models, compose the decoder (spec-compose),
/// then compile it (spec-to-cpu or spec-to-cuda) and write what --emit asks.
int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "specc: build a speculative decoder from ONNX models\n");
  if (failed(findFolderModules()) || failed(checkFlags()))
    return 1;
  FailureOr<Emit> what = getEmit();
  if (failed(what))
    return 1;
  FailureOr<Measurements> measured = readMeasurements();
  if (failed(measured))
    return 1;

  DialectRegistry registry;
  registerONNXImportDialects(registry);
  registerSpeculaDialects(registry);
  MLIRContext context(registry);
  // Models are large: diagnostics name the function, not print it.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  DefaultTimingManager timingManager;
  timingManager.setEnabled(timing);
  TimingScope rootTiming = timingManager.getRootScope();

  TimingScope importTiming = rootTiming.nest("Import (ONNX)");
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(&context, targetPath, 0, 0));
  ComposeOptions compose;
  setComposeOptions(compose, *measured);
  if (failed(importModels(*module, compose)))
    return 1;
  FailureOr<std::string> tokenizer =
      chooseTokenizer(*module, tokenizerPath, targetPath, "target");
  FailureOr<std::string> draftTokenizer =
      succeeded(tokenizer) && crossTokenizer
          ? checkCrossTokenizer(*module, *tokenizer)
          : FailureOr<std::string>(std::string());
  if (failed(tokenizer) || failed(draftTokenizer) ||
      failed(setTreeOptions(*module, compose, std::move(measured->topK),
                            measured->ofTree)))
    return 1;
  importTiming.stop();
  if (*what == Emit::ModelsMLIR)
    return failed(printModule(*module)) ? 1 : 0;

  TimingScope compositionTiming = rootTiming.nest("Composition");
  PassManager pm(&context);
  buildComposePipeline(pm, compose);
  pm.enableTiming(compositionTiming);
  if (failed(pm.run(*module)) || failed(verify(*module)))
    return 1;
  compositionTiming.stop();

  ArtifactOptions options;
  fillArtifactOptions(std::move(*tokenizer), options);
  options.draftTokenizer = std::move(*draftTokenizer);
  if (*what == Emit::Artifact)
    return failed(writeArtifact(*module, outputPath, options, rootTiming));
  // What writeArtifact compiles, without the object code.
  if (*what == Emit::LLVMMLIR &&
      failed(compileToLLVM(*module, options, weightsFile, rootTiming)))
    return 1;
  return failed(printModule(*module));
}
