//===- FuseElementwise.cpp - elementwise fusion without recomputation ----===//

#include "passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace specula {
#define GEN_PASS_DEF_SPECFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// Fuse a single-use producer only when the consumer visits each element of
/// the fused operand once: its indexing map uses every consumer loop. A
/// consumer with loops the operand does not depend on (a reduction over
/// other operands, a broadcast) would recompute the producer in each of
/// their iterations.
static bool fusesWithoutRecomputing(OpOperand *fusedOperand) {
  Operation *producer = fusedOperand->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fusedOperand->getOwner());
  if (!consumer)
    return true;
  AffineMap map = consumer.getMatchingIndexingMap(fusedOperand);
  for (unsigned loop = 0; loop < map.getNumDims(); ++loop)
    if (!map.isFunctionOfDim(loop))
      return false;
  return true;
}

namespace {
/// A generic whose every element is the same constant is that constant: the
/// importer computes shape arithmetic (a rotary embedding's half width) in
/// generics whose bodies fold to constants, and reshapes, extracts and the
/// slices they size fold only once the constant is one.
struct FoldConstantGeneric : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() != 1 || !op.hasPureTensorSemantics())
      return failure();
    auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return failure();
    auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
    Attribute value;
    if (!matchPattern(yield.getValues()[0], m_Constant(&value)))
      return failure();
    auto element = dyn_cast<TypedAttr>(value);
    if (!element || element.getType() != type.getElementType())
      return failure();
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, DenseElementsAttr::get(type, element));
    return success();
  }
};

struct FuseElementwisePass
    : public specula::impl::SpecFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    // What upstream's linalg-fuse-elementwise-ops applies, with the control
    // function above instead of "the producer has one use".
    linalg::populateElementwiseOpsFusionPatterns(patterns,
                                                 fusesWithoutRecomputing);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns,
                                                      fusesWithoutRecomputing);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns,
                                                 fusesWithoutRecomputing);
    patterns.add<FoldConstantGeneric>(context);
    if (failed(applyPatternsGreedily(
            getOperation(), std::move(patterns),
            GreedyRewriteConfig().setUseTopDownTraversal(true))))
      signalPassFailure();
  }
};
} // namespace
