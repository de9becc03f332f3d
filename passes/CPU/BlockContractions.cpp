//===- BlockContractions.cpp - register-blocked contractions, CPU ---------===//
//
// Tiles contractions whose second operand all rows share (weight matrices,
// one head's keys or values) on tensors so that one load of a vector of it
// serves every row of a tile, vectorizes the tiles, and keeps each tile's
// accumulators in registers across the reduction loop.
//
//===----------------------------------------------------------------------===//

#include "passes/CPU/ColumnPanels.h"
#include "passes/CPU/Passes.h"
#include "passes/Common/WeightContraction.h"

#include "dialects/spec/SpecDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorTransforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/Support/MathExtras.h"

namespace specula {
#define GEN_PASS_DEF_SPECBLOCKCONTRACTIONS
#include "passes/CPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// Marks the ops being blocked while tiling and peeling clone them.
static constexpr llvm::StringLiteral kBlockMarker = "__spec_block__";

/// Tiles `op` by `sizes` (0: not tiled), loops ordered by `order`; returns
/// the loops, outermost first, or failure.
static FailureOr<SmallVector<scf::ForOp>> tile(RewriterBase &rewriter,
                                               linalg::LinalgOp op,
                                               ArrayRef<int64_t> sizes,
                                               ArrayRef<int64_t> order) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(op.getContext(), sizes));
  // A full permutation: the tiled loops in `order`, then the others.
  SmallVector<int64_t> interchange(order);
  for (int64_t loop = 0, e = sizes.size(); loop < e; ++loop)
    if (!llvm::is_contained(order, loop))
      interchange.push_back(loop);
  options.setInterchange(interchange);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  SmallVector<scf::ForOp> loops;
  for (LoopLikeOpInterface loop : tiled->loops)
    loops.push_back(cast<scf::ForOp>(loop.getOperation()));
  return loops;
}

/// The marked ops under `root`, in order.
static SmallVector<linalg::LinalgOp> markedOps(Operation *root) {
  SmallVector<linalg::LinalgOp> ops;
  root->walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kBlockMarker))
      ops.push_back(op);
  });
  return ops;
}

/// Every canonicalization pattern, and the scf ones that fold tile sizes
/// `min(t, ub - iv)` in loops stepping by t: they fold the constants peeling
/// leaves in tile sizes, so that the tiles of full iterations get static
/// shapes.
static FrozenRewritePatternSet tileSizeFolding(MLIRContext *context) {
  RewritePatternSet patterns(context);
  for (Dialect *dialect : context->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : context->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, context);
  mlir::scf::populateSCFForLoopCanonicalizationPatterns(patterns);
  return FrozenRewritePatternSet(std::move(patterns));
}

/// Rewrites `affine.apply` as arith ops. The row count of a peeled partial
/// tile is `affine.apply (ub - iv)`; tiling it again would fold that map into
/// the new tile sizes, and peeling could then no longer prove the full tiles
/// full. As an opaque value it stays the loop bound that peeling reasons
/// about.
static void expandAffineApplies(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<affine::AffineApplyOp> applies;
  func.walk([&](affine::AffineApplyOp apply) { applies.push_back(apply); });
  for (affine::AffineApplyOp apply : applies) {
    rewriter.setInsertionPoint(apply);
    std::optional<SmallVector<Value, 8>> expanded =
        affine::expandAffineMap(rewriter, apply.getLoc(), apply.getAffineMap(),
                                llvm::to_vector<4>(apply.getMapOperands()));
    if (expanded)
      rewriter.replaceOp(apply, *expanded);
  }
}

namespace {
struct BlockContractionsPass
    : public specula::impl::SpecBlockContractionsBase<BlockContractionsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    auto check = [&](StringRef name, int64_t value,
                     int64_t most) -> LogicalResult {
      if (value >= 1 && value <= most && llvm::isPowerOf2_64(value))
        return success();
      return emitError(UnknownLoc::get(context))
             << "spec-block-contractions: " << name
             << " must be a power of two in [1, " << most << "], got " << value;
    };
    if (failed(check("rows", rows, 16)) ||
        failed(check("columns", columns, 128)) ||
        failed(check("depth", depth, 64)))
      return failure();
    if (maxTileElements < 0)
      return emitError(UnknownLoc::get(context))
             << "spec-block-contractions: max-tile-elements must be 0 (no "
                "limit) or positive, got "
             << static_cast<int64_t>(maxTileElements);
    canonicalPatterns = tileSizeFolding(context);
    return success();
  }

  void runOnOperation() override;

private:
  LogicalResult tileOuterLoops(func::FuncOp func, IRRewriter &rewriter);
  LogicalResult
  tileByHalves(func::FuncOp func, IRRewriter &rewriter,
               llvm::function_ref<unsigned(const ContractionDims &)> role,
                            int64_t size, bool everyHalf,
                            StringRef marker = {}, StringRef rowMarker = {});
  LogicalResult narrowColumnsOfRowTiles(func::FuncOp func,
                                        IRRewriter &rewriter);
  LogicalResult vectorizeTiles(func::FuncOp func, IRRewriter &rewriter);
  LogicalResult hoistAccumulators(func::FuncOp func, IRRewriter &rewriter);
  LogicalResult packPanels(func::FuncOp func, IRRewriter &rewriter) {
    if (!panels || !packColumnPanels(markedOps(func), rewriter))
      return success();
    return canonicalize(func);
  }
  LogicalResult canonicalize(func::FuncOp func) {
    return applyPatternsGreedily(func, canonicalPatterns);
  }

  FrozenRewritePatternSet canonicalPatterns;
};
} // namespace

/// Tiles the outer loops (batch loops, row loops but the innermost) by one.
LogicalResult BlockContractionsPass::tileOuterLoops(func::FuncOp func,
                                                    IRRewriter &rewriter) {
  for (linalg::LinalgOp op : markedOps(func)) {
    std::optional<ContractionDims> dims = matchWeightContraction(op);
    if (!dims)
      return op.emitOpError("is no longer a contraction the pass can block");
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::all_of(dims->outer,
                     [&](unsigned loop) { return ranges[loop] == 1; }))
      continue;
    SmallVector<int64_t> sizes(op.getNumLoops(), 0), order;
    for (unsigned loop : dims->outer) {
      sizes[loop] = 1;
      order.push_back(loop);
    }
    if (failed(tile(rewriter, op, sizes, order)))
      return op.emitOpError("could not be tiled by its outer loops");
  }
  if (failed(canonicalize(func)))
    return func.emitError("tile sizes did not converge");
  return success();
}

/// The tile size for the dynamic remainder of tiles of `size` (0: none).
/// Rows halve (8, 4, 2, 1): a verify's rows are all remainder. Columns and
/// reductions go to 8, then 1: fewer tile shapes (compile time, code size)
/// for remainders that are a small part of the work.
static int64_t nextTileSize(int64_t size, bool everyHalf) {
  if (size <= 1)
    return 0;
  // Rows: 6 between 8 and 4, so that a verify of gamma = 5 proposals (the
  // default) is one tile, one pass over the weights, not a 4- and a 2-row
  // tile.
  if (everyHalf)
    return size == 8 ? 6 : size == 6 ? 4 : size / 2;
  return size > 8 ? 8 : 1;
}

/// Tiles loop `role(dims)` of every marked op by `size` and peels the last,
/// partial tile off. A static remainder is a tile of its own; a dynamic one
/// (the rows of a forward, the cached positions of an attention) is tiled
/// again by `nextTileSize`, down to one, so that every tile has static
/// sizes: r rows take the full tiles and one tile per set bit of
/// `r mod size`.
LogicalResult BlockContractionsPass::tileByHalves(
    func::FuncOp func, IRRewriter &rewriter,
    llvm::function_ref<unsigned(const ContractionDims &)> role, int64_t size,
    bool everyHalf, StringRef marker, StringRef rowMarker) {
  for (int64_t half = size; half >= 1; half = nextTileSize(half, everyHalf)) {
    for (linalg::LinalgOp op : markedOps(func)) {
      std::optional<ContractionDims> dims = matchWeightContraction(op);
      if (!dims)
        return op.emitOpError("is no longer a contraction the pass can block");
      unsigned loop = role(*dims);
      int64_t range = op.getStaticLoopRanges()[loop];
      // Static ranges are split once, by `size`.
      if (!ShapedType::isDynamic(range) && (range <= size || half < size))
        continue;
      SmallVector<int64_t> sizes(op.getNumLoops(), 0);
      sizes[loop] = half;
      FailureOr<SmallVector<scf::ForOp>> loops =
          tile(rewriter, op, sizes, {static_cast<int64_t>(loop)});
      if (failed(loops))
        return op.emitOpError("could not be tiled");
      scf::ForOp partial;
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, loops->back(), partial);
      // Only the full tiles of a static range: a loop worth splitting.
      if (!marker.empty() && !ShapedType::isDynamic(range))
        loops->back()->setAttr(marker, rewriter.getUnitAttr());
      if (!rowMarker.empty()) {
        loops->back()->setAttr(rowMarker, rewriter.getUnitAttr());
        if (partial)
          partial->setAttr(rowMarker, rewriter.getUnitAttr());
      }
    }
    if (failed(canonicalize(func)))
      return func.emitError("tile sizes did not converge");
    expandAffineApplies(func, rewriter);
  }
  return success();
}

/// Splits the column tile of every row tile whose accumulators (rows x
/// columns elements) exceed `maxTileElements` into narrower ones: a one-row
/// tile keeps the full width, whose many independent multiply-add chains
/// hide the latency of each, while a tile of many rows, whose rows already
/// give it as many chains, gets fewer columns and keeps its accumulators in
/// registers. Each element's chain over `k` is unchanged.
LogicalResult
BlockContractionsPass::narrowColumnsOfRowTiles(func::FuncOp func,
                                               IRRewriter &rewriter) {
  if (maxTileElements == 0)
    return success();
  for (linalg::LinalgOp op : markedOps(func)) {
    std::optional<ContractionDims> dims = matchWeightContraction(op);
    if (!dims)
      return op.emitOpError("is no longer a contraction the pass can block");
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rowCount = ranges[dims->rows], columnCount = ranges[dims->columns];
    if (ShapedType::isDynamic(rowCount) || ShapedType::isDynamic(columnCount))
      return op.emitOpError("tile has dynamic sizes after blocking");
    int64_t width = columns;
    while (width > 1 && rowCount * width > maxTileElements)
      width /= 2;
    if (columnCount <= width)
      continue;
    SmallVector<int64_t> sizes(op.getNumLoops(), 0);
    sizes[dims->columns] = width;
    FailureOr<SmallVector<scf::ForOp>> loops =
        tile(rewriter, op, sizes, {static_cast<int64_t>(dims->columns)});
    if (failed(loops))
      return op.emitOpError("could not be tiled");
    scf::ForOp partial;
    (void)scf::peelForLoopAndSimplifyBounds(rewriter, loops->back(), partial);
  }
  if (failed(canonicalize(func)))
    return func.emitError("tile sizes did not converge");
  expandAffineApplies(func, rewriter);
  return success();
}

/// Marks the contractions to block; fails on bufferized ones. Returns
/// whether there is any.
static FailureOr<bool> markContractions(func::FuncOp func) {
  bool any = false;
  WalkResult walk = func.walk([&](linalg::LinalgOp op) {
    if (!matchWeightContraction(op))
      return WalkResult::advance();
    if (!op.hasPureTensorSemantics()) {
      op.emitOpError("is bufferized; spec-block-contractions schedules ops "
                     "on tensors: run it before bufferization");
      return WalkResult::interrupt();
    }
    op->setAttr(kBlockMarker, UnitAttr::get(func.getContext()));
    any = true;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return any;
}

/// Every tile has static sizes after tiling: vectorizes it without masks,
/// then turns broadcast-multiply-reduce into vector.contract on the tile's
/// rows x depth and depth x columns vectors.
LogicalResult BlockContractionsPass::vectorizeTiles(func::FuncOp func,
                                                    IRRewriter &rewriter) {
  for (linalg::LinalgOp op : markedOps(func)) {
    if (!op.hasPureTensorSemantics() ||
        llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
      return op.emitOpError("tile has dynamic sizes after blocking");
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::VectorizationResult> vectorized =
        linalg::vectorize(rewriter, op);
    if (failed(vectorized))
      return op.emitOpError("tile could not be vectorized");
    rewriter.replaceOp(op, vectorized->replacements);
  }
  RewritePatternSet patterns(func.getContext());
  vector::populateVectorReductionToContractPatterns(patterns);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  // A 16-bit weight is widened in the tile's body: widen the vector read
  // once, then broadcast it to the rows (the contraction takes the
  // broadcast into its indexing maps), rather than widening every row's
  // copy.
  vector::populateSinkVectorOpsPatterns(patterns);
  if (failed(applyPatternsGreedily(func, std::move(patterns))))
    return failure();
  return canonicalize(func);
}

/// The accumulators: read before and written after the reduction loop, not
/// in every iteration.
LogicalResult BlockContractionsPass::hoistAccumulators(func::FuncOp func,
                                                       IRRewriter &rewriter) {
  SmallVector<scf::ForOp> reductionLoops;
  func.walk([&](scf::ForOp loop) {
    if (!loop.getOps<vector::ContractionOp>().empty())
      reductionLoops.push_back(loop);
  });
  for (scf::ForOp loop : reductionLoops) {
    moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
    hoistLoopInvariantSubsets(rewriter,
                              cast<LoopLikeOpInterface>(loop.getOperation()));
  }
  RewritePatternSet patterns(func.getContext());
  vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
  if (failed(applyPatternsGreedily(func, std::move(patterns))))
    return failure();
  return canonicalize(func);
}

void BlockContractionsPass::runOnOperation() {
  func::FuncOp func = getOperation();
  IRRewriter rewriter(func.getContext());
  FailureOr<bool> any = markContractions(func);
  if (failed(any))
    return signalPassFailure();
  if (!*any)
    return;
  // Loops from outermost to innermost: outer, columns, rows, reduction.
  // Columns outside rows: the row tiles of a forward (a 6-row verify is a
  // 4-row and a 2-row tile) read the same column tile of the weights one
  // after the other, from cache, so the weights come from memory once per
  // forward whatever its row count.
  if (failed(tileOuterLoops(func, rewriter)) ||
      failed(tileByHalves(
          func, rewriter, [](const ContractionDims &d) { return d.columns; },
          columns, /*everyHalf=*/false,
          spec::SpecDialect::kColumnTilesAttrName)) ||
      failed(packPanels(func, rewriter)) ||
      failed(tileByHalves(
          func, rewriter, [](const ContractionDims &d) { return d.rows; }, rows,
          /*everyHalf=*/true, /*marker=*/{},
          spec::SpecDialect::kRowTilesAttrName)) ||
      failed(narrowColumnsOfRowTiles(func, rewriter)) ||
      failed(tileByHalves(
          func, rewriter, [](const ContractionDims &d) { return d.depth; },
          depth, /*everyHalf=*/false)) ||
      failed(vectorizeTiles(func, rewriter)) ||
      failed(hoistAccumulators(func, rewriter)))
    return signalPassFailure();
}
