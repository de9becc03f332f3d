//===- InterchangeContractions.cpp - reduction loops outside, for SIMD ----===//

#include "passes/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace specula {
#define GEN_PASS_DEF_SPECINTERCHANGECONTRACTIONS
#include "passes/CPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
/// (..., n, k) -> (..., k, n) for a generic whose only reduction k is the
/// last loop and whose output's innermost dimension is indexed by n.
struct ReductionBeforeInnermostOutputLoop
    : public OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    unsigned loops = op.getNumLoops();
    if (loops < 2 || op.getNumReductionLoops() != 1 ||
        op.getNumDpsInits() != 1)
      return rewriter.notifyMatchFailure(op, "not a single-reduction op");
    auto iterators = op.getIteratorTypesArray();
    if (iterators[loops - 1] != utils::IteratorType::reduction ||
        iterators[loops - 2] != utils::IteratorType::parallel)
      return rewriter.notifyMatchFailure(op, "reduction is not innermost");
    AffineMap output = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (output.getNumResults() == 0)
      return rewriter.notifyMatchFailure(op, "0-d output");
    auto innermost =
        dyn_cast<AffineDimExpr>(output.getResult(output.getNumResults() - 1));
    if (!innermost || innermost.getPosition() != loops - 2)
      return rewriter.notifyMatchFailure(
          op, "the output's innermost dimension is not the loop before the "
              "reduction");
    SmallVector<unsigned> permutation;
    for (unsigned i = 0; i + 2 < loops; ++i)
      permutation.push_back(i);
    permutation.push_back(loops - 1);
    permutation.push_back(loops - 2);
    if (failed(linalg::interchangeGenericOp(rewriter, op, permutation)))
      return rewriter.notifyMatchFailure(op, "interchange failed");
    return success();
  }
};

struct InterchangeContractionsPass
    : public specula::impl::SpecInterchangeContractionsBase<
          InterchangeContractionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReductionBeforeInnermostOutputLoop>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
