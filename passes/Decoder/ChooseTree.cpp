//===- ChooseTree.cpp - pick the tree a decoder verifies -------------------===//

#include "passes/Decoder/Passes.h"
#include "passes/Decoder/TreeCostModel.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

namespace specula {
#define GEN_PASS_DEF_SPECCHOOSETREE
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
struct ChooseTreePass
    : public specula::impl::SpecChooseTreeBase<ChooseTreePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// Chooses the tree of one decoder with Medusa heads (`heads`) or a draft
  /// (`heads` null); fails after a diagnostic.
  LogicalResult chooseFor(DecoderOp decoder, MTPProposerAttr heads);

  TopKAcceptance table;
};
} // namespace

LogicalResult ChooseTreePass::initialize(MLIRContext *context) {
  auto emit = [&] {
    return emitError(UnknownLoc::get(context)) << "spec-choose-tree: ";
  };
  if (ranks < 1)
    return emit() << "ranks must be at least 1, got "
                  << static_cast<int64_t>(ranks);
  if (acceptance.empty())
    return emit() << "no acceptance given; pass acceptance=<a[1][0],...> "
                     "(per depth, `ranks` entries: the acceptance of each "
                     "rank of that depth's head)";
  if (acceptance.size() % ranks != 0)
    return emit() << "acceptance has " << acceptance.size()
                  << " entries, not a whole number of depths of "
                  << static_cast<int64_t>(ranks) << " ranks";
  for (double a : acceptance)
    if (!(a >= 0.0 && a <= 1.0))
      return emit() << "acceptance entries must lie in [0, 1], got " << a;
  if (verifyCost < 0.0)
    return emit() << "verify-cost must not be negative, got "
                  << static_cast<double>(verifyCost);
  if (draftCost < 0.0)
    return emit() << "draft-cost must not be negative, got "
                  << static_cast<double>(draftCost);
  if (maxNodes < 1)
    return emit() << "max-nodes must be at least 1, got "
                  << static_cast<int64_t>(maxNodes);
  table.clear();
  for (size_t start = 0; start < acceptance.size(); start += ranks)
    table.emplace_back(acceptance.begin() + start,
                       acceptance.begin() + start + ranks);
  return success();
}

void ChooseTreePass::runOnOperation() {
  SymbolTableCollection symbolTable;
  bool failedAny = false;
  getOperation().walk([&](DecoderOp decoder) {
    if (decoder.getTreeAttr())
      return;
    if (isa<DraftProposerAttr>(decoder.getProposer())) {
      failedAny |= failed(chooseFor(decoder, MTPProposerAttr()));
      return;
    }
    auto mtp = dyn_cast<MTPProposerAttr>(decoder.getProposer());
    if (!mtp)
      return;
    auto head = symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(
        decoder, mtp.getHeads().front());
    auto role = head ? head->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName)
                     : RoleAttr();
    if (role && role.getKind() == FunctionRole::MedusaHead)
      failedAny |= failed(chooseFor(decoder, mtp));
  });
  if (failedAny)
    signalPassFailure();
}

LogicalResult ChooseTreePass::chooseFor(DecoderOp decoder,
                                        MTPProposerAttr heads) {
  if (heads && table.size() > heads.getHeads().size())
    return decoder.emitError()
           << "the acceptance covers " << table.size()
           << " depths but decoder @" << decoder.getSymName() << " has "
           << heads.getHeads().size() << " Medusa heads";

  // Medusa heads propose inside the target's forward: no cost per depth.
  double depthCost = heads ? 0.0 : static_cast<double>(draftCost);
  TreeChoice choice = chooseTree(table, verifyCost, maxNodes, depthCost);
  std::string costs =
      llvm::formatv("verify cost {0:F3} per extra row, ",
                    static_cast<double>(verifyCost))
          .str();
  if (!heads)
    costs += llvm::formatv("draft cost {0:F3} per depth, ", depthCost).str();
  costs += llvm::formatv("at most {0} candidates",
                         static_cast<int64_t>(maxNodes))
               .str();
  StringRef proposer = heads ? "the Medusa heads'" : "the draft's";
  if (choice.tree.getNumNodes() == 0) {
    decoder.emitWarning() << "no tree of " << proposer
                          << " candidates predicts a speedup above 1x ("
                          << costs << "); decoder left unchanged";
    return success();
  }

  int64_t depth = 0;
  for (int64_t node = 1; node <= choice.tree.getNumNodes(); ++node)
    depth = std::max(depth, choice.tree.getDepth(node));
  if (heads)
    decoder.setProposerAttr(MTPProposerAttr::get(
        decoder.getContext(), heads.getHeads().take_front(depth)));
  else
    decoder.setProposerAttr(DraftProposerAttr::get(
        decoder.getContext(),
        cast<DraftProposerAttr>(decoder.getProposer()).getModel(), depth));
  bool chain = choice.tree.isTopOneChain();
  if (!chain)
    decoder.setTreeAttr(TreeAttr::get(decoder.getContext(), choice.tree.parents,
                                      choice.tree.ranks));
  decoder.emitRemark() << (chain ? "a chain of " : "a tree of ")
                       << choice.tree.getNumNodes()
                       << (choice.tree.getNumNodes() == 1 ? " candidate "
                                                          : " candidates ")
                       << formatPaths(choice.tree.getPaths()) << ": "
                       << llvm::formatv("{0:F2}", choice.expectedTokens)
                       << " expected tokens per target forward, predicted "
                          "speedup "
                       << llvm::formatv("{0:F2}", choice.speedup) << "x ("
                       << costs << ")";
  return success();
}
