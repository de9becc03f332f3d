//===- CloneSharedFills.cpp - one fill per destination ------------------===//
//
// CSE merges identical `linalg.fill`s of `tensor.empty`s: the importer's
// zero accumulators of every same-shaped contraction and reduction become one
// fill. Bufferized, each op that accumulates into it in place then gets a
// buffer of its own and a copy of the shared one (41 of the example target's
// 55 copies per forward, each a kernel launch on the GPU). A fill per use is
// what the graph meant: it bufferizes in place, and the schedules fold it
// into the op that reads it.
//
//===----------------------------------------------------------------------===//

#include "passes/Common/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace specula {
#define GEN_PASS_DEF_SPECCLONESHAREDFILLS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
/// Whether `use` is a destination (init) operand of the op that owns it:
/// the op writes it, in place once bufferized.
bool isDestination(OpOperand &use) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
  return dps && dps.isDpsInit(&use);
}

/// A fill on tensors used more than once, as a destination at least once ->
/// a clone of the fill for each destination use, right before its user.
/// Other uses (reads) keep the original.
struct CloneSharedFill : OpRewritePattern<linalg::FillOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::FillOp fill,
                                PatternRewriter &rewriter) const override {
    if (!fill.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(fill, "not on tensors");
    Value result = fill.getResult(0);
    if (result.hasOneUse())
      return rewriter.notifyMatchFailure(fill, "used once");
    SmallVector<OpOperand *> destinations;
    for (OpOperand &use : result.getUses())
      if (isDestination(use))
        destinations.push_back(&use);
    if (destinations.empty())
      return rewriter.notifyMatchFailure(fill, "only read");
    for (OpOperand *use : destinations) {
      rewriter.setInsertionPoint(use->getOwner());
      Operation *clone = rewriter.clone(*fill);
      rewriter.modifyOpInPlace(use->getOwner(),
                               [&] { use->set(clone->getResult(0)); });
    }
    if (result.use_empty())
      rewriter.eraseOp(fill);
    return success();
  }
};

struct CloneSharedFillsPass
    : public specula::impl::SpecCloneSharedFillsBase<CloneSharedFillsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<CloneSharedFill>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
