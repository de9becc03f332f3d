//===- ChooseTree.cpp - pick the tree a Medusa decoder verifies -----------===//

#include "passes/Passes.h"
#include "passes/TreeCostModel.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

namespace specula {
#define GEN_PASS_DEF_SPECCHOOSETREE
#include "passes/Passes.h.inc"
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
  /// Chooses the tree of one decoder with Medusa heads; fails after a
  /// diagnostic.
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
    auto mtp = dyn_cast<MTPProposerAttr>(decoder.getProposer());
    if (!mtp || decoder.getTreeAttr())
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
  int64_t headCount = heads.getHeads().size();
  if (static_cast<int64_t>(table.size()) > headCount)
    return decoder.emitError()
           << "the acceptance covers " << table.size()
           << " depths but decoder @" << decoder.getSymName() << " has "
           << headCount << " Medusa heads";

  TreeChoice choice = chooseTree(table, verifyCost, maxNodes);
  std::string costs =
      llvm::formatv("verify cost {0:F3} per extra row, at most {1} "
                    "candidates",
                    static_cast<double>(verifyCost),
                    static_cast<int64_t>(maxNodes))
          .str();
  if (choice.tree.getNumNodes() == 0) {
    decoder.emitWarning() << "no tree of the Medusa heads' candidates "
                             "predicts a speedup above 1x ("
                          << costs << "); decoder left unchanged";
    return success();
  }

  int64_t depth = 0;
  for (int64_t node = 1; node <= choice.tree.getNumNodes(); ++node)
    depth = std::max(depth, choice.tree.getDepth(node));
  decoder.setProposerAttr(MTPProposerAttr::get(
      decoder.getContext(), heads.getHeads().take_front(depth)));
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
