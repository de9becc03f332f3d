//===- PairDraft.cpp - pair a target with a compatible draft --------------===//

#include "passes/Decoder/Composition.h"
#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace specula {
#define GEN_PASS_DEF_SPECPAIRDRAFT
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
/// What the compatibility checks read from one model function.
struct ModelInfo {
  func::FuncOp func;
  ModelConfigAttr config;
  RankedTensorType logits;

  std::optional<int64_t> vocab() const {
    if (config)
      return config.getVocabSize();
    if (logits && !logits.isDynamicDim(logits.getRank() - 1))
      return logits.getShape().back();
    return std::nullopt;
  }
  StringAttr tokenizer() const {
    return config ? config.getTokenizer() : nullptr;
  }
  /// Whether the function's arguments say what they are (#spec.io), and if
  /// so whether they include the first layer's key cache.
  std::optional<bool> hasCacheInputs() const {
    func::FuncOp f = func;
    bool described = false;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      described |= bool(getArgumentIO(f, i));
    if (!described)
      return std::nullopt;
    return findArgument(f, IOKind::PastKey, 0) ||
           findArgument(f, IOKind::KVCache);
  }
};

struct PairDraftPass
    : public specula::impl::SpecPairDraftBase<PairDraftPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The rule the options ask for, checked once.
  VerificationRuleAttrInterface rule;
  /// The tree the options ask for, or null for a chain.
  TreeAttr tree;

  FailureOr<ModelInfo> findModel(ModuleOp module, StringRef name,
                                 FunctionRole role);
  LogicalResult checkCompatibility(ModelInfo &target, ModelInfo &draft);
};
} // namespace

FailureOr<ModelInfo> PairDraftPass::findModel(ModuleOp module, StringRef name,
                                              FunctionRole role) {
  FailureOr<func::FuncOp> lookup = findRoleFunction(module, name, role);
  if (failed(lookup))
    return failure();
  func::FuncOp found = *lookup;
  StringRef roleName = stringifyFunctionRole(role);
  ModelInfo info;
  info.func = found;
  info.config =
      found->getAttrOfType<ModelConfigAttr>(SpecDialect::kConfigAttrName);
  if (found.getNumResults() > 0)
    info.logits = dyn_cast<RankedTensorType>(found.getResultTypes().front());
  if (!info.logits || info.logits.getRank() < 1)
    return found.emitError() << "the " << roleName << " @"
                             << found.getSymName()
                             << " must return logits as its first result";
  return info;
}

/// Slices the logits `model` returns to the first `vocab` entries and records
/// the smaller vocabulary in its configuration.
static void sliceLogits(ModelInfo &model, int64_t vocab) {
  func::FuncOp func = model.func;
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  OpBuilder b(ret);
  Location loc = ret.getLoc();
  Value logits = ret.getOperand(0);
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  for (int64_t d = 0; d < rank - 1; ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? OpFoldResult(tensor::DimOp::create(b, loc, logits, d)
                                           .getResult())
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  sizes.push_back(b.getIndexAttr(vocab));
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = vocab;
  auto slicedType = RankedTensorType::get(shape, type.getElementType());
  Value sliced = tensor::ExtractSliceOp::create(b, loc, slicedType, logits,
                                                offsets, sizes, strides);
  ret.setOperand(0, sliced);
  SmallVector<Type> results(func.getResultTypes());
  results[0] = slicedType;
  func.setFunctionType(
      b.getFunctionType(func.getArgumentTypes(), results));
  if (ModelConfigAttr config = model.config) {
    model.config = ModelConfigAttr::get(
        func.getContext(), vocab, config.getBosTokenId(),
        config.getEosTokenId(), config.getPadTokenId(), config.getMaxContext(),
        config.getTokenizer());
    func->setAttr(SpecDialect::kConfigAttrName, model.config);
  }
  model.logits = slicedType;
}

namespace {
/// The checks that a draft and a target can be paired. They only report;
/// what pairing changes (cutting padded logits) waits until all passed.
class PairCheck {
public:
  PairCheck(ModelInfo &target, ModelInfo &draft, bool crossTokenizer)
      : target(target), draft(draft), crossTokenizer(crossTokenizer),
        pair(("draft @" + draft.func.getSymName() + " and target @" +
              target.func.getSymName())
                 .str()) {}

  /// Runs every check; on success, `padded` is the model whose logits are
  /// cut to `common` entries (null when none is).
  LogicalResult run(ModelInfo *&padded, int64_t &common) {
    bool sameTokenizer = tokenizers();
    vocabularies(sameTokenizer, padded, common);
    specialTokens();
    if (target.logits.getElementType() != draft.logits.getElementType()) {
      std::string types;
      llvm::raw_string_ostream os(types);
      os << draft.logits.getElementType() << " and "
         << target.logits.getElementType();
      incompatible("return logits of different element types (" + types +
                       ")",
                   "export both models with the same logits precision");
    }
    for (ModelInfo *model : {&target, &draft})
      if (std::optional<bool> cache = model->hasCacheInputs();
          cache && !*cache)
        incompatible("cannot be paired: @" + model->func.getSymName() +
                         " has no key/value cache input "
                         "(past_key_values.0.key)",
                     "export the model with its cache (use_cache=True) so "
                     "that each step processes only new tokens");
    return success(ok);
  }

private:
  void incompatible(const Twine &what, const Twine &fix) {
    ok = false;
    InFlightDiagnostic diag = draft.func.emitError() << pair << " " << what;
    diag.attachNote(target.func.getLoc()) << "target defined here";
    diag.attachNote() << "to fix: " << fix;
  }

  /// Whether both name the same tokenizer; different ones are an error
  /// unless the pair is cross-tokenizer, which needs them different.
  bool tokenizers() {
    StringAttr targetTokenizer = target.tokenizer(),
               draftTokenizer = draft.tokenizer();
    if (crossTokenizer) {
      if (!targetTokenizer || !draftTokenizer)
        incompatible("cannot be paired across tokenizers: @" +
                         (targetTokenizer ? draft : target).func.getSymName() +
                         " names no tokenizer (tokenizer_sha256)",
                     "export both models with their tokenizer's fingerprint");
      else if (targetTokenizer == draftTokenizer)
        incompatible("use the same tokenizer (" + targetTokenizer.getValue() +
                         "): there is nothing to translate",
                     "drop cross-tokenizer");
      return false;
    }
    if (targetTokenizer && draftTokenizer && targetTokenizer != draftTokenizer)
      incompatible("use different tokenizers (fingerprints " +
                       draftTokenizer.getValue() + " and " +
                       targetTokenizer.getValue() +
                       "): the same token id would mean different text",
                   "use a draft trained with the target's tokenizer");
    return targetTokenizer && targetTokenizer == draftTokenizer;
  }

  /// Vocabularies must agree, except for padding under one tokenizer.
  void vocabularies(bool sameTokenizer, ModelInfo *&padded, int64_t &common) {
    std::optional<int64_t> targetVocab = target.vocab(),
                           draftVocab = draft.vocab();
    if (crossTokenizer || !targetVocab || !draftVocab ||
        *targetVocab == *draftVocab)
      return;
    if (!sameTokenizer)
      return incompatible(
          "have vocabularies of " + Twine(*draftVocab) + " and " +
              Twine(*targetVocab) + " tokens",
          "pair models with the same vocabulary (if one is only padded, "
          "give both the same tokenizer_sha256)");
    common = std::min(*targetVocab, *draftVocab);
    padded = *targetVocab > *draftVocab ? &target : &draft;
    draft.func.emitWarning()
        << pair << " have vocabularies of " << *draftVocab << " and "
        << *targetVocab
        << " tokens but the same tokenizer, so the larger embedding is "
           "padding: using the first "
        << common << " logits of @" << padded->func.getSymName();
  }

  /// BOS, EOS and PAD must agree; different contexts only warn.
  void specialTokens() {
    if (!target.config || !draft.config)
      return;
    auto checkId = [&](StringRef name, std::optional<int64_t> targetId,
                       std::optional<int64_t> draftId) {
      // Across tokenizers, special tokens correspond by role, not by id.
      if (!crossTokenizer && targetId && draftId && *targetId != *draftId)
        incompatible("disagree on the " + name + " token id (" +
                         Twine(*draftId) + " and " + Twine(*targetId) + ")",
                     "pair models whose special tokens agree");
    };
    checkId("BOS", target.config.getBosTokenId(),
            draft.config.getBosTokenId());
    checkId("EOS", target.config.getEosTokenId(),
            draft.config.getEosTokenId());
    checkId("PAD", target.config.getPadTokenId(),
            draft.config.getPadTokenId());
    std::optional<int64_t> targetContext = target.config.getMaxContext(),
                           draftContext = draft.config.getMaxContext();
    if (targetContext && draftContext && *targetContext != *draftContext)
      draft.func.emitWarning()
          << pair << " have maximum contexts of " << *draftContext << " and "
          << *targetContext << " positions; generation stops at "
          << std::min(*targetContext, *draftContext);
  }

  ModelInfo &target, &draft;
  bool crossTokenizer;
  std::string pair;
  bool ok = true;
};
} // namespace

LogicalResult PairDraftPass::checkCompatibility(ModelInfo &target,
                                                ModelInfo &draft) {
  ModelInfo *padded = nullptr;
  int64_t common = 0;
  if (failed(PairCheck(target, draft, crossTokenizer).run(padded, common)))
    return failure();
  if (padded)
    sliceLogits(*padded, common);
  return success();
}

LogicalResult PairDraftPass::initialize(MLIRContext *context) {
  auto emit = [&] { return emitError(UnknownLoc::get(context)); };
  if (gamma < 1)
    return emit() << "spec-pair-draft: gamma must be at least 1, got "
                  << static_cast<int64_t>(gamma);
  FailureOr<VerificationRuleAttrInterface> checked =
      getVerificationRule(context, emit, sampling, temperature, topK, topP);
  if (failed(checked))
    return failure();
  rule = *checked;
  if (!(minConfidence >= 0.0 && minConfidence < 1.0))
    return emit() << "spec-pair-draft: min-confidence must lie in [0, 1), got "
                  << minConfidence;
  if (minConfidence > 0.0 && sampling)
    return emit() << "spec-pair-draft: min-confidence stops drafting early "
                     "under greedy verification only; drop it or sampling";
  if (crossTokenizer && (minConfidence > 0.0 || !treeParents.empty() ||
                         !treeRanks.empty()))
    return emit() << "spec-pair-draft: a cross-tokenizer draft proposes "
                     "chains so far; drop "
                  << (minConfidence > 0.0 ? "min-confidence" : "the tree");
  tree = {};
  if (!treeParents.empty() || !treeRanks.empty()) {
    tree = TreeAttr::getChecked([&] { return emit() << "spec-pair-draft: "; },
                                context, ArrayRef<int64_t>(treeParents),
                                ArrayRef<int64_t>(treeRanks));
    if (!tree)
      return failure();
    if (minConfidence > 0.0)
      return emit() << "spec-pair-draft: min-confidence stops chains of "
                       "proposals; a tree has a fixed shape";
  }
  return success();
}

void PairDraftPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<ModelInfo> target =
      findModel(module, targetName, FunctionRole::Target);
  FailureOr<ModelInfo> draft = findModel(module, draftName, FunctionRole::Draft);
  if (failed(target) || failed(draft))
    return signalPassFailure();
  if (failed(checkCompatibility(*target, *draft)))
    return signalPassFailure();

  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  if (module.lookupSymbol(decoderName)) {
    module.emitError() << "a symbol named @" << decoderName
                       << " exists already; choose another decoder-name";
    return signalPassFailure();
  }
  auto decoder = DecoderOp::create(
      b, target->func.getLoc(), b.getStringAttr(decoderName),
                    FlatSymbolRefAttr::get(target->func.getSymNameAttr()),
                    DraftProposerAttr::get(
                        &getContext(),
                        FlatSymbolRefAttr::get(draft->func.getSymNameAttr()),
                        tree ? tree.getMaxDepth() : int64_t(gamma),
                        APFloat(static_cast<double>(minConfidence))),
                    rule, /*acceptance_rate=*/FloatAttr(), tree);
  if (crossTokenizer)
    decoder->setAttr(SpecDialect::kCrossTokenizerAttrName, b.getUnitAttr());
}
