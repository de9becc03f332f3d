//===- ChooseGamma.cpp - pick gamma for draft decoders with a cost model --===//

#include "passes/Decoder/GammaCostModel.h"
#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace specula {
#define GEN_PASS_DEF_SPECCHOOSEGAMMA
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

/// Bytes of constant weights that one forward of `fn` reads: the constants in
/// `fn` and in every function it calls, each function counted once.
static uint64_t weightBytes(FunctionOpInterface fn,
                            SymbolTableCollection &symbolTable) {
  uint64_t bytes = 0;
  SmallPtrSet<Operation *, 8> visited;
  SmallVector<FunctionOpInterface> worklist{fn};
  while (!worklist.empty()) {
    FunctionOpInterface current = worklist.pop_back_val();
    if (!visited.insert(current).second)
      continue;
    current->walk([&](Operation *op) {
      if (auto call = dyn_cast<CallOpInterface>(op)) {
        if (auto callee = dyn_cast_or_null<FunctionOpInterface>(
                call.resolveCallableInTable(&symbolTable)))
          worklist.push_back(callee);
        return;
      }
      if (!op->hasTrait<OpTrait::ConstantLike>() || op->getNumResults() != 1)
        return;
      auto shaped = dyn_cast<ShapedType>(op->getResult(0).getType());
      if (!shaped || !shaped.hasStaticShape() ||
          !shaped.getElementType().isIntOrFloat())
        return;
      uint64_t bits = shaped.getElementType().getIntOrFloatBitWidth();
      bytes += (shaped.getNumElements() * bits + 7) / 8;
    });
  }
  return bytes;
}

static std::string formatBytes(uint64_t bytes) {
  if (bytes >= (1u << 20))
    return llvm::formatv("{0:F1} MiB", bytes / double(1u << 20)).str();
  if (bytes >= (1u << 10))
    return llvm::formatv("{0:F1} KiB", bytes / double(1u << 10)).str();
  return llvm::formatv("{0} B", bytes).str();
}

/// Options left at their default of -1 are unset (hasValue() cannot tell:
/// options copied from an options struct always have a value).
static bool isSet(double option) { return option != -1.0; }

namespace {
struct ChooseGammaPass
    : public specula::impl::SpecChooseGammaBase<ChooseGammaPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// Chooses gamma for one draft decoder, or the depth of a chain of one
  /// MTP module (`proposer`, which runs `gamma` times per round); fails
  /// after a diagnostic.
  LogicalResult chooseFor(DecoderOp decoder, FlatSymbolRefAttr proposer,
                          SymbolTableCollection &symbolTable);
};
} // namespace

LogicalResult ChooseGammaPass::initialize(MLIRContext *context) {
  auto emit = [&] {
    return emitError(UnknownLoc::get(context)) << "spec-choose-gamma: ";
  };
  if (isSet(acceptanceRate) &&
      !(acceptanceRate >= 0.0 && acceptanceRate <= 1.0))
    return emit() << "acceptance-rate must lie in [0, 1], got "
                  << static_cast<double>(acceptanceRate);
  if (isSet(costRatio) && !(costRatio > 0.0))
    return emit() << "cost-ratio must be positive, got "
                  << static_cast<double>(costRatio);
  if (verifyCost < 0.0)
    return emit() << "verify-cost must not be negative, got "
                  << static_cast<double>(verifyCost);
  if (maxGamma < 1)
    return emit() << "max-gamma must be at least 1, got "
                  << static_cast<int64_t>(maxGamma);
  return success();
}

/// The MTP module of a decoder whose heads are that one module (chained with
/// itself, as `specc --mtp-depth` writes it), or null: Medusa heads and
/// distinct modules per depth have their count fixed by training.
static FlatSymbolRefAttr getChainedModule(DecoderOp decoder,
                                          SymbolTableCollection &symbolTable) {
  auto mtp = dyn_cast<MTPProposerAttr>(decoder.getProposer());
  if (!mtp || decoder.getTreeAttr() ||
      llvm::any_of(mtp.getHeads(), [&](FlatSymbolRefAttr head) {
        return head != mtp.getHeads().front();
      }))
    return {};
  auto function = symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(
      decoder, mtp.getHeads().front());
  auto role = function ? function->getAttrOfType<RoleAttr>(
                             SpecDialect::kRoleAttrName)
                       : RoleAttr();
  return role && role.getKind() == FunctionRole::MTPModule
             ? mtp.getHeads().front()
             : FlatSymbolRefAttr();
}

void ChooseGammaPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTableCollection symbolTable;
  bool failedAny = false;
  module.walk([&](DecoderOp decoder) {
    // A tree fixes a draft's gamma (its depth).
    if (auto draft = dyn_cast<DraftProposerAttr>(decoder.getProposer());
        draft && !decoder.getTreeAttr())
      failedAny |= failed(chooseFor(decoder, draft.getModel(), symbolTable));
    else if (FlatSymbolRefAttr chained =
                 getChainedModule(decoder, symbolTable))
      failedAny |= failed(chooseFor(decoder, chained, symbolTable));
  });
  if (failedAny)
    signalPassFailure();
}

LogicalResult ChooseGammaPass::chooseFor(DecoderOp decoder,
                                         FlatSymbolRefAttr proposer,
                                         SymbolTableCollection &symbolTable) {
  bool chain = isa<MTPProposerAttr>(decoder.getProposer());
  StringRef what = chain ? "MTP module" : "draft";
  double alpha;
  if (isSet(acceptanceRate))
    alpha = acceptanceRate;
  else if (FloatAttr rate = decoder.getAcceptanceRateAttr())
    alpha = rate.getValueAsDouble();
  else
    return decoder.emitError()
           << "no acceptance rate for decoder @" << decoder.getSymName()
           << "; set its acceptance_rate attribute or pass "
              "acceptance-rate=<0..1> to spec-choose-gamma";

  double ratio;
  std::string costReason;
  if (isSet(costRatio)) {
    ratio = costRatio;
    costReason = "given";
  } else {
    // The verifier has checked that both symbols name functions.
    auto target = symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(
        decoder, decoder.getTargetAttr());
    auto draftFn = symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(
        decoder, proposer);
    uint64_t targetBytes = weightBytes(target, symbolTable);
    uint64_t draftBytes = weightBytes(draftFn, symbolTable);
    if (targetBytes == 0 || draftBytes == 0)
      return decoder.emitError()
             << "cannot estimate the cost of "
             << (targetBytes == 0 ? "target " : what + " ")
             << (targetBytes == 0 ? decoder.getTargetAttr() : proposer)
             << ": it has no constant weights; pass cost-ratio=<" << what
             << " step / target step> to spec-choose-gamma";
    ratio = static_cast<double>(draftBytes) / static_cast<double>(targetBytes);
    // Weight bytes price a forward only where reading the weights bounds
    // it; the remark says so (small models in cache run faster than that).
    costReason = formatBytes(draftBytes) + " / " + formatBytes(targetBytes) +
                 " of weights, if weight reads bound both";
  }

  GammaChoice choice = chooseGamma(alpha, ratio, maxGamma, verifyCost);
  std::string numbers = llvm::formatv(
      "acceptance rate {0:F2}, {1}/target cost {2:F3} ({3})", alpha,
      chain ? "module" : "draft", ratio, costReason);
  // Given costs (measured by `spec-run --profile`) are shown even when the
  // verify cost is 0: a measured verify that costs no more than a step.
  if (verifyCost > 0.0 || isSet(costRatio))
    numbers += llvm::formatv(", verify cost {0:F3} per extra position",
                             static_cast<double>(verifyCost));
  StringRef count = chain ? "depth" : "gamma";
  if (choice.speedup <= 1.0) {
    decoder.emitWarning() << what << " " << proposer
                          << " does not pay: the best " << count << " ("
                          << choice.gamma << ") predicts a speedup of "
                          << llvm::formatv("{0:F2}", choice.speedup) << "x ("
                          << numbers << "); decoder left unchanged";
    return success();
  }

  if (chain)
    decoder.setProposerAttr(MTPProposerAttr::get(
        decoder.getContext(),
        SmallVector<FlatSymbolRefAttr>(choice.gamma, proposer)));
  else
    decoder.setProposerAttr(DraftProposerAttr::get(
        decoder.getContext(), proposer, choice.gamma,
        cast<DraftProposerAttr>(decoder.getProposer()).getMinConfidence()));
  decoder.emitRemark() << count << " = " << choice.gamma << ": "
                       << llvm::formatv("{0:F2}", choice.expectedTokens)
                       << " expected tokens per target step, predicted "
                          "speedup "
                       << llvm::formatv("{0:F2}", choice.speedup) << "x ("
                       << numbers << ")";
  return success();
}
