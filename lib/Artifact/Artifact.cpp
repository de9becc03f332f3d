//===- Artifact.cpp - compile a decoder into a runtime artifact -----------===//
//
// The steps: read what the manifest says from the decoder composition; run
// the device's pipeline, spec-to-cpu or spec-to-cuda (which also moves the
// weights into weights.bin and, for CUDA, embeds the kernels' PTX);
// optimize and emit object files for this host and link them into
// decoder.so with the system's C compiler driver (ObjectCode.cpp); write
// manifest.json. Everything is written into a fresh directory beside the
// destination and renamed into place at the end.
//
//===----------------------------------------------------------------------===//

#include "specula/Artifact.h"
#include "ObjectCode.h"

#include "dialects/spec/SpecOps.h"
#include "specula/Pipelines.h"
#include "specrt/artifact_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
/// Removes a directory tree on destruction unless released.
struct DirectoryGuard {
  std::string path;
  ~DirectoryGuard() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};
} // namespace

/// "fnv1a64:<16 hex digits>" of a file's contents, and its size. Read a
/// block at a time: a mapped 4 GB weights file would count in the
/// compiler's resident memory as it is hashed.
static FailureOr<std::pair<std::string, uint64_t>>
checksumFile(StringRef path) {
  llvm::Expected<llvm::sys::fs::file_t> file =
      llvm::sys::fs::openNativeFileForRead(path);
  if (!file) {
    llvm::consumeError(file.takeError());
    return failure();
  }
  std::vector<char> block(1 << 20);
  uint64_t hash = SPECRT_FNV1A64_INIT, size = 0;
  while (true) {
    llvm::Expected<size_t> read = llvm::sys::fs::readNativeFile(
        *file, llvm::MutableArrayRef<char>(block.data(), block.size()));
    if (!read) {
      llvm::consumeError(read.takeError());
      llvm::sys::fs::closeFile(*file);
      return failure();
    }
    if (*read == 0)
      break;
    hash = specrt_fnv1a64(block.data(), *read, hash);
    size += *read;
  }
  llvm::sys::fs::closeFile(*file);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "fnv1a64:" << llvm::format_hex_no_prefix(hash, 16);
  return std::make_pair(text, size);
}

/// A file of the artifact as the manifest describes it: name, size,
/// checksum.
static FailureOr<llvm::json::Object> describeFile(ModuleOp module,
                                                  StringRef path) {
  auto sum = checksumFile(path);
  if (failed(sum))
    return module.emitError() << "cannot read back '" << path << "'";
  return llvm::json::Object{{"file", llvm::sys::path::filename(path).str()},
                            {"size", static_cast<int64_t>(sum->second)},
                            {"checksum", sum->first}};
}

/// Defines SPECRT_FACTS_SYMBOL in the LLVM-dialect module: `facts` as a
/// NUL-terminated JSON text.
static LogicalResult embedFacts(ModuleOp module,
                                const llvm::json::Object &facts) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(llvm::json::Object(facts));
  text.push_back('\0');
  if (text.size() > SPECRT_FACTS_MAX_BYTES)
    return module.emitError() << "the artifact's facts take " << text.size()
                              << " bytes; the runtime reads at most "
                              << SPECRT_FACTS_MAX_BYTES;
  if (module.lookupSymbol(SPECRT_FACTS_SYMBOL))
    return module.emitError() << "the module already defines @"
                              << SPECRT_FACTS_SYMBOL;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External, SPECRT_FACTS_SYMBOL,
                         b.getStringAttr(text));
  return success();
}

/// The proposer's kind, as the runtime names it, from its functions' role.
static StringRef proposerKind(ModuleOp module, DecoderOp decoder) {
  spec::ProposerAttrInterface proposer = decoder.getProposer();
  if (isa<spec::NoProposerAttr>(proposer))
    return "none";
  auto first = module.lookupSymbol<func::FuncOp>(
      proposer.getProposerFunctions().front().getAttr());
  auto role = first ? first->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName)
                    : RoleAttr();
  FunctionRole kind = role ? role.getKind() : FunctionRole::MedusaHead;
  return kind == FunctionRole::Draft       ? "draft"
         : kind == FunctionRole::MTPModule ? "mtp-module"
                                           : "medusa";
}

/// A cross-tokenizer draft's vocabulary, which the runtime translates from:
/// its size, BOS and EOS, and its tokenizer (a tokenizer.json the artifact
/// carries as draft_tokenizer.json, or bytes).
static FailureOr<llvm::json::Object>
describeDraftVocabulary(ModuleOp module, DecoderOp decoder,
                        const ArtifactOptions &options) {
  auto draft = module.lookupSymbol<func::FuncOp>(
      decoder.getProposer().getProposerFunctions().front().getAttr());
  auto config = draft ? draft->getAttrOfType<ModelConfigAttr>(
                            SpecDialect::kConfigAttrName)
                      : ModelConfigAttr();
  if (!config || !config.getBosTokenId() || !config.getEosTokenId())
    return decoder.emitError()
           << "the cross-tokenizer draft has no spec.config with BOS and EOS; "
              "the runtime needs its vocabulary and special tokens";
  return llvm::json::Object{
      {"vocab_size", config.getVocabSize()},
      {"bos_token_id", *config.getBosTokenId()},
      {"eos_token_id", *config.getEosTokenId()},
      {"tokenizer",
       llvm::json::Object{
           {"kind", options.draftTokenizer.empty() ? "bytes" : "tokenizer.json"},
           {"fingerprint", config.getTokenizer() ? config.getTokenizer().str()
                                                 : std::string()}}}};
}

/// The manifest's description of the decoder and its target model, read
/// before lowering erases the spec ops.
static FailureOr<llvm::json::Object>
describeDecoder(ModuleOp module, DecoderOp decoder, const ArtifactOptions &options) {
  llvm::json::Object model, strategy;
  auto target = module.lookupSymbol<func::FuncOp>(decoder.getTarget());
  auto config = target ? target->getAttrOfType<ModelConfigAttr>(
                             SpecDialect::kConfigAttrName)
                       : ModelConfigAttr();
  if (!config)
    return decoder.emitError()
           << "the target has no spec.config; the runtime needs its "
              "vocabulary and special tokens";
  model["vocab_size"] = config.getVocabSize();
  auto optional = [](std::optional<int64_t> v) -> llvm::json::Value {
    return v ? llvm::json::Value(*v) : llvm::json::Value(nullptr);
  };
  model["bos_token_id"] = optional(config.getBosTokenId());
  model["eos_token_id"] = optional(config.getEosTokenId());
  model["pad_token_id"] = optional(config.getPadTokenId());
  model["max_context"] = optional(config.getMaxContext());
  if (!options.stopTokens.empty()) {
    llvm::json::Array stops;
    for (int64_t token : options.stopTokens)
      stops.push_back(token);
    model["stop_token_ids"] = std::move(stops);
  }
  // Without a tokenizer.json, the example models' vocabulary: ids 0-255 are
  // bytes.
  model["tokenizer"] = llvm::json::Object{
      {"kind", options.tokenizer.empty() ? "bytes" : "tokenizer.json"},
      {"fingerprint", config.getTokenizer() ? config.getTokenizer().str()
                                            : std::string()}};

  if (decoder->hasAttr(SpecDialect::kCrossTokenizerAttrName)) {
    FailureOr<llvm::json::Object> draft =
        describeDraftVocabulary(module, decoder, options);
    if (failed(draft))
      return failure();
    strategy["cross_tokenizer"] = std::move(*draft);
  }
  strategy["proposer"] = proposerKind(module, decoder);
  strategy["proposals"] = decoder.getNumProposals();
  // A tree decoder counts its rounds by the node they end at; the runtime
  // needs the tree to turn those counts into accepted lengths.
  if (spec::TreeAttr tree = decoder.getTreeAttr()) {
    llvm::json::Array parents, ranks;
    for (auto [parent, rank] : llvm::zip(tree.getParents(), tree.getRanks())) {
      parents.push_back(parent);
      ranks.push_back(rank);
    }
    strategy["tree"] = llvm::json::Object{{"parents", std::move(parents)},
                                          {"ranks", std::move(ranks)}};
  }
  if (auto rejection = dyn_cast<RejectionAttr>(decoder.getRule())) {
    strategy["verify"] = "rejection-sampling";
    strategy["temperature"] = rejection.getTemperature().convertToDouble();
    strategy["top_k"] = rejection.getTopK();
    strategy["top_p"] = rejection.getTopP().convertToDouble();
  } else {
    strategy["verify"] = "greedy";
  }
  return llvm::json::Object{{"model", std::move(model)},
                            {"decoder", std::move(strategy)}};
}

/// The CPU features the manifest lists and the runtime checks before it
/// loads code (names as both LLVM and __builtin_cpu_supports spell them).
static constexpr llvm::StringLiteral kCheckedFeatures[] = {
    "sse4.2",   "avx",      "avx2",     "fma",        "f16c",
    "bmi",      "bmi2",     "avx512f",  "avx512bw",   "avx512dq",
    "avx512vl", "avx512vnni", "avx512bf16"};

/// The checked features the code for `machine` may use.
static llvm::json::Array usedFeatures(llvm::TargetMachine &machine) {
  llvm::json::Array features;
  const llvm::MCSubtargetInfo *subtarget = machine.getMCSubtargetInfo();
  for (StringRef feature : kCheckedFeatures)
    if (subtarget->checkFeatures(("+" + feature).str()))
      features.push_back(feature);
  return features;
}

/// Replaces `path` with the finished artifact `staged`. Only a previous
/// artifact (a directory with a manifest) is replaced.
static LogicalResult moveIntoPlace(ModuleOp module, StringRef staged,
                                   StringRef path) {
  if (llvm::sys::fs::exists(path)) {
    SmallString<256> manifest(path);
    llvm::sys::path::append(manifest, SPECRT_MANIFEST_FILE);
    if (!llvm::sys::fs::is_directory(path) ||
        !llvm::sys::fs::exists(manifest))
      return module.emitError()
             << "'" << path
             << "' exists and is not a Specula artifact; not replacing it";
    if (std::error_code ec = llvm::sys::fs::remove_directories(path))
      return module.emitError() << "cannot replace '" << path
                                << "': " << ec.message();
  }
  if (std::error_code ec = llvm::sys::fs::rename(staged, path))
    return module.emitError() << "cannot move the artifact to '" << path
                              << "': " << ec.message();
  return success();
}

/// Checks that every kernel spec-to-cuda embedded is complete: a math
/// function left unresolved (no libdevice found) would only fail when the
/// driver loads it.
static LogicalResult checkKernelsLinked(ModuleOp module) {
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects()) {
      StringRef ptx = cast<gpu::ObjectAttr>(object).getObject().getValue();
      size_t at = ptx.find(".extern .func");
      if (at == StringRef::npos)
        continue;
      StringRef line = ptx.drop_front(at).take_until(
          [](char c) { return c == '\n'; });
      return binary.emitError()
             << "kernel module @" << binary.getSymName()
             << " calls a function no library defined ('" << line.trim()
             << "'): math functions come from the CUDA toolkit's libdevice; "
                "install the toolkit or name it with --cuda-toolkit (or "
                "spec-to-cuda{toolkit=...})";
    }
  return success();
}

/// The PTX ISA version (".version X.Y") of the kernels spec-to-cuda
/// embedded; they all share it.
static FailureOr<std::string> ptxVersion(ModuleOp module) {
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects()) {
      StringRef ptx = cast<gpu::ObjectAttr>(object).getObject().getValue();
      size_t at = ptx.find(".version ");
      if (at == StringRef::npos)
        continue;
      return ptx.drop_front(at + 9).take_until(llvm::isSpace).str();
    }
  return module.emitError() << "spec-to-cuda produced no PTX kernels";
}

/// Checks that `chip` (sm_80, sm_90, ...) names a GPU LLVM's NVPTX backend
/// knows; spec-to-cuda's nvvm-attach-target would only warn.
static LogicalResult checkCUDAChip(ModuleOp module, StringRef chip) {
  static bool initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target ? target->createMCSubtargetInfo(triple, "sm_50", "") : nullptr);
  if (!subtarget)
    return module.emitError() << "this LLVM has no NVPTX backend: " << error;
  if (!chip.starts_with("sm_") || !subtarget->isCPUStringValid(chip))
    return module.emitError() << "unknown CUDA chip '" << chip
                              << "' (use sm_80, sm_90, ...)";
  return success();
}

LogicalResult specula::compileToLLVM(ModuleOp module,
                                     const ArtifactOptions &options,
                                     StringRef weightsFile,
                                     TimingScope &timing) {
  bool cuda = options.device == ArtifactDevice::CUDA;
  if (cuda && failed(checkCUDAChip(module, options.cudaPipeline.chip)))
    return failure();
  // The bufferization and LLVM conversions work through interfaces that
  // upstream dialects register as extensions; the kernels' serialization and
  // the object code through the LLVM IR translations (for CUDA, gpu.binary
  // becomes the embedded PTX loaded at dlopen, gpu.launch_func calls of the
  // runtime's mgpu* functions).
  DialectRegistry extensions;
  registerAllDialects(extensions);
  registerAllExtensions(extensions);
  registerAllToLLVMIRTranslations(extensions);
  module.getContext()->appendDialectRegistry(extensions);
  PassManager pm(module.getContext());
  if (cuda) {
    SpecToCUDAOptions pipeline;
    pipeline.copyOptionValuesFrom(options.cudaPipeline);
    pipeline.weightsFile = weightsFile.str();
    buildSpecToCUDAPipeline(pm, pipeline);
  } else {
    SpecToCPUOptions pipeline;
    pipeline.copyOptionValuesFrom(options.cpuPipeline);
    pipeline.weightsFile = weightsFile.str();
    buildSpecToCPUPipeline(pm, pipeline);
  }
  TimingScope pipelineTiming =
      timing.nest(cuda ? "spec-to-cuda" : "spec-to-cpu");
  pm.enableTiming(pipelineTiming);
  if (failed(pm.run(module)))
    return failure();
  return success(!cuda || succeeded(checkKernelsLinked(module)));
}

/// The shape of the cache of slots whose entry @`name` takes first.
static FailureOr<llvm::json::Array> slotCacheShape(ModuleOp module,
                                                   StringRef name) {
  auto shape = module.lookupSymbol<LLVM::LLVMFuncOp>(name)
                   ->getAttrOfType<DenseI64ArrayAttr>(
                       SpecDialect::kSlotCacheShapeAttrName);
  if (!shape)
    return module.emitError() << "@" << name << " has no "
                              << SpecDialect::kSlotCacheShapeAttrName;
  return llvm::json::Array(llvm::to_vector(shape.asArrayRef()));
}

/// Batched rounds (spec-lower-rounds) over a cache of max_batch slots: the
/// entries, and their caches' shapes in the manifest's decoder section,
/// with what proposes in them (batch_proposer): a draft (its prefill and
/// cache too), the Medusa heads fused into the target (every entry also
/// returns proposals), an MTP module (its prefill and cache; the target's
/// entries also return hidden states), or none.
static LogicalResult describeRounds(ModuleOp module,
                                    const ArtifactOptions &options,
                                    llvm::json::Object &entryPoints,
                                    llvm::json::Object &decoder) {
  auto entry = [&](StringRef kind) {
    return options.decoder + "_" + kind.str();
  };
  auto has = [&](StringRef kind) {
    return static_cast<bool>(module.lookupSymbol<LLVM::LLVMFuncOp>(entry(kind)));
  };
  bool drafts = has("draft_prefill"), speculates = has("spec_round"),
       translates = has("draft_round"), modules = has("module_prefill");
  SmallVector<StringRef> kinds{"prefill", "round"};
  if (speculates)
    kinds.push_back("spec_round");
  if (drafts)
    kinds.push_back("draft_prefill");
  if (translates)
    kinds.append({"draft_round", "verify"});
  if (modules)
    kinds.push_back("module_prefill");
  for (StringRef kind : kinds) {
    if (!has(kind))
      return module.emitError() << "the pipeline produced no batched "
                                << kind << " @" << entry(kind);
    entryPoints[kind] = "_mlir_ciface_" + entry(kind);
  }
  FailureOr<llvm::json::Array> shape = slotCacheShape(module, entry("round"));
  if (failed(shape))
    return failure();
  decoder["max_batch"] = static_cast<int64_t>(options.cpuPipeline.maxBatch);
  decoder["batch_proposer"] = translates ? "cross_tokenizer_draft"
                              : drafts     ? "draft"
                              : modules    ? "mtp_module"
                              : speculates ? "heads"
                                           : "none";
  decoder["batch_cache_shape"] = std::move(*shape);
  if (modules) {
    FailureOr<llvm::json::Array> moduleShape =
        slotCacheShape(module, entry("module_prefill"));
    if (failed(moduleShape))
      return failure();
    decoder["batch_module_cache_shape"] = std::move(*moduleShape);
  }
  if (!drafts)
    return success();
  FailureOr<llvm::json::Array> draftShape =
      slotCacheShape(module, entry("draft_prefill"));
  if (failed(draftShape))
    return failure();
  decoder["batch_draft_cache_shape"] = std::move(*draftShape);
  return success();
}

/// What the compiled code is (SPECRT_FACTS_SYMBOL; the manifest repeats it,
/// and the runtime refuses a manifest that disagrees): `description`, the
/// target, the decode loops' entry points and the weights file. The decode
/// loops, now LLVM functions, carry the context capacity.
static FailureOr<llvm::json::Object>
describeCompiledCode(ModuleOp module, const ArtifactOptions &options,
                     llvm::TargetMachine &machine,
                     llvm::json::Object description, StringRef weightsPath) {
  bool cuda = options.device == ArtifactDevice::CUDA;
  std::string entryNames[2] = {options.decoder + "_generate",
                               options.decoder + "_target_only"};
  for (const std::string &name : entryNames)
    if (!module.lookupSymbol<LLVM::LLVMFuncOp>(name))
      return module.emitError() << "the pipeline produced no decode loop @"
                                << name;
  auto capacity =
      module.lookupSymbol<LLVM::LLVMFuncOp>(entryNames[0])
          ->getAttrOfType<IntegerAttr>(SpecDialect::kContextCapacityAttrName);
  if (!capacity)
    return module.emitError() << "@" << entryNames[0] << " has no "
                              << SpecDialect::kContextCapacityAttrName;
  // The sequence buffer holds prompt and generated tokens: its size bounds
  // the context the decoder can use.
  (*description["decoder"].getAsObject())["context_capacity"] =
      capacity.getInt();
  FailureOr<std::string> ptx = cuda ? ptxVersion(module) : std::string();
  FailureOr<llvm::json::Object> weights = describeFile(module, weightsPath);
  if (failed(ptx) || failed(weights))
    return failure();
  // What the weight matrices are stored as (spec-quantize-weights).
  const std::string &precision = options.cpuPipeline.weights.getValue();
  (*weights)["matrices"] = cuda || precision.empty() ? "f32" : precision;
  const std::string &draft = options.cpuPipeline.draftWeights.getValue();
  if (!cuda && !draft.empty())
    (*weights)["draft_matrices"] = draft;
  llvm::json::Object target{
      {"device", cuda ? SPECRT_DEVICE_NAME_CUDA : SPECRT_DEVICE_NAME_CPU},
      {"triple", machine.getTargetTriple().str()},
      {"cpu", machine.getTargetCPU().str()},
      {"features", usedFeatures(machine)}};
  if (cuda) {
    target["chip"] = options.cudaPipeline.chip.getValue();
    target["ptx_isa"] = *ptx;
  }
  llvm::json::Object entryPoints{
      {"generate", "_mlir_ciface_" + entryNames[0]},
      {"target_only", "_mlir_ciface_" + entryNames[1]}};
  if ((options.cpuPipeline.maxBatch > 1 || options.cpuPipeline.rounds) &&
      !cuda &&
      failed(describeRounds(module, options, entryPoints,
                            *description["decoder"].getAsObject())))
    return failure();
  llvm::json::Object facts{
      {"abi", SPECRT_ARTIFACT_ABI},
      {"target", std::move(target)},
      {"entry_points", std::move(entryPoints)},
      {"files", llvm::json::Object{{"weights", std::move(*weights)}}}};
  for (auto &entry : description)
    facts[entry.first] = std::move(entry.second);
  return facts;
}

/// Copies the tokenizer (and its tokenizer_config.json, when there is one)
/// into the staged artifact under fixed names (`prefix` + tokenizer.json, a
/// cross-tokenizer draft's with prefix "draft_"), and lists them in `files`.
static LogicalResult copyTokenizer(ModuleOp module, StringRef tokenizer,
                                   StringRef prefix, StringRef staging,
                                   llvm::json::Object &files) {
  SmallString<256> config(llvm::sys::path::parent_path(tokenizer));
  llvm::sys::path::append(config, "tokenizer_config.json");
  std::pair<std::string, std::string> copies[] = {
      {tokenizer.str(), (prefix + "tokenizer").str()},
      {std::string(config), (prefix + "tokenizer_config").str()}};
  for (const auto &[from, key] : copies) {
    if (key != copies[0].second && !llvm::sys::fs::exists(from))
      continue;
    SmallString<256> to(staging);
    llvm::sys::path::append(to, key + ".json");
    if (std::error_code ec = llvm::sys::fs::copy_file(from, to))
      return module.emitError() << "cannot copy '" << from
                                << "' into the artifact: " << ec.message();
    FailureOr<llvm::json::Object> file = describeFile(module, to);
    if (failed(file))
      return failure();
    files[key] = std::move(*file);
  }
  return success();
}

static LogicalResult writeManifest(ModuleOp module, StringRef path,
                                   llvm::json::Object manifest) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError() << "cannot write the manifest: "
                              << ec.message();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
     << "\n";
  os.close();
  if (os.has_error()) {
    os.clear_error();
    return module.emitError() << "cannot write the manifest";
  }
  return success();
}

LogicalResult specula::writeArtifact(ModuleOp module, StringRef path,
                                     const ArtifactOptions &options,
                                     TimingScope &timing) {
  auto decoder = module.lookupSymbol<DecoderOp>(options.decoder);
  if (!decoder)
    return module.emitError() << "no spec.decoder @" << options.decoder
                              << " to compile";
  FailureOr<llvm::json::Object> description = describeDecoder(module, decoder, options);
  if (failed(description))
    return failure();
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createHostTargetMachine(module, options.cpu);
  FailureOr<std::string> linker = findLinker(module, options.linker);
  if (failed(machine) || failed(linker))
    return failure();
  bool cuda = options.device == ArtifactDevice::CUDA;
  if (cuda && failed(checkCUDAChip(module, options.cudaPipeline.chip)))
    return failure();

  // Stage everything in a fresh directory beside the destination.
  // (createUniqueDirectory puts relative names in the temp directory, from
  // where a rename may cross file systems.)
  SmallString<256> absolute(path), staging;
  llvm::sys::fs::make_absolute(absolute);
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
          absolute + ".partial", staging))
    return module.emitError() << "cannot create a directory beside '" << path
                              << "': " << ec.message();
  DirectoryGuard guard{std::string(staging)};
  auto inStaging = [&](StringRef file) {
    SmallString<256> p(staging);
    llvm::sys::path::append(p, file);
    return std::string(p);
  };

  if (failed(compileToLLVM(module, options, inStaging(SPECRT_WEIGHTS_FILE),
                           timing)))
    return failure();
  FailureOr<llvm::json::Object> facts =
      describeCompiledCode(module, options, **machine, std::move(*description),
                           inStaging(SPECRT_WEIGHTS_FILE));
  if (failed(facts) || failed(embedFacts(module, *facts)))
    return failure();

  FailureOr<SmallVector<std::string>> objects = emitObjectFiles(
      module, options.cpu, staging, options.codegenThreads, timing);
  if (failed(objects))
    return failure();
  TimingScope linking = timing.nest("Linking the shared object");
  if (failed(linkSharedObject(module, *objects, inStaging(SPECRT_LIBRARY_FILE),
                              *linker)))
    return failure();
  linking.stop();
  for (const std::string &object : *objects)
    llvm::sys::fs::remove(object);
  FailureOr<llvm::json::Object> library =
      describeFile(module, inStaging(SPECRT_LIBRARY_FILE));
  if (failed(library))
    return failure();

  llvm::json::Object manifest = std::move(*facts);
  manifest["format"] = SPECRT_ARTIFACT_FORMAT;
  manifest["format_version"] = SPECRT_ARTIFACT_FORMAT_VERSION;
  manifest["producer"] = "specc (MLIR/LLVM " LLVM_VERSION_STRING ")";
  llvm::json::Object &files = *manifest.getObject("files");
  files["library"] = std::move(*library);
  if ((!options.tokenizer.empty() &&
       failed(copyTokenizer(module, options.tokenizer, "", staging, files))) ||
      (!options.draftTokenizer.empty() &&
       failed(copyTokenizer(module, options.draftTokenizer, "draft_", staging,
                            files))) ||
      failed(writeManifest(module, inStaging(SPECRT_MANIFEST_FILE),
                           std::move(manifest))) ||
      failed(moveIntoPlace(module, staging, path)))
    return failure();
  guard.path.clear();
  return success();
}
