//===- FuseElementwise.cpp - elementwise fusion without recomputation ----===//

#include "passes/Common/IndexingMaps.h"
#include "passes/Common/Passes.h"

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
#include "passes/Common/Passes.h.inc"
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

/// A concatenation read by a linalg op along one of its parallel loops is
/// computed piecewise instead: one copy of the op per input of the
/// concatenation, each on its slice of that loop (the input itself, and
/// slices of the other operands and of the output), inserted into the
/// output. The importer's rotary embedding is `x * cos + concat(-x2, x1) *
/// sin`; bufferized, the concatenation allocated a buffer and copied both
/// halves into it (two strided copies per query and key, per layer and
/// forward). Piecewise, the halves are read where they are, and the
/// negation fuses into its piece.
struct ConcatToPieces : OpRewritePattern<linalg::GenericOp> {
  ConcatToPieces(MLIRContext *context, int64_t maxInputs)
      : OpRewritePattern(context), maxInputs(maxInputs) {}

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(op, "not on tensors");
    for (OpOperand *operand : op.getDpsInputOperands()) {
      Value read = operand->get();
      Value source = read;
      if (auto cast = source.getDefiningOp<tensor::CastOp>())
        source = cast.getSource();
      auto concat = source.getDefiningOp<tensor::ConcatOp>();
      if (!concat ||
          static_cast<int64_t>(concat.getInputs().size()) > maxInputs)
        continue;
      // Every use of it is this op's (through the cast, if any), or the
      // concatenation would still be built.
      auto onlyHere = [&](Value v) {
        return llvm::all_of(v.getUsers(),
                            [&](Operation *user) { return user == op; });
      };
      if (!onlyHere(read) || (read != source && !source.hasOneUse()))
        continue;
      std::optional<unsigned> loop = slicedLoop(op, operand, concat.getDim());
      if (!loop)
        continue;
      rewritePiecewise(op, read, concat, *loop, rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no concatenation to split");
  }

private:
  /// The loop that reads `operand` along `dim`, when it is parallel, the
  /// body does not read its index (a piece's indices start at 0), every
  /// operand indexes it by itself (a dimension `dN`, at most once) or not
  /// at all, and the outputs index it.
  static std::optional<unsigned> slicedLoop(linalg::GenericOp op,
                                            OpOperand *operand, int64_t dim) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    auto expr = dyn_cast<AffineDimExpr>(map.getResult(dim));
    if (!expr || op.getIteratorTypesArray()[expr.getPosition()] !=
                     utils::IteratorType::parallel)
      return std::nullopt;
    unsigned loop = expr.getPosition();
    if (llvm::any_of(
            op.getBody()->getOps<linalg::IndexOp>(),
            [&](linalg::IndexOp index) { return index.getDim() == loop; }))
      return std::nullopt;
    for (OpOperand &other : op->getOpOperands()) {
      std::optional<unsigned> position =
          slicedDim(op.getMatchingIndexingMap(&other), loop);
      bool isOutput = op.isDpsInit(&other);
      bool compound = llvm::any_of(
          op.getMatchingIndexingMap(&other).getResults(), [&](AffineExpr e) {
            return !isa<AffineDimExpr>(e) && e.isFunctionOfDim(loop);
          });
      if (compound || (isOutput && !position))
        return std::nullopt;
    }
    return loop;
  }

  /// The dimension of an operand that `loop` indexes, if one does (and
  /// only one).
  static std::optional<unsigned> slicedDim(AffineMap map, unsigned loop) {
    std::optional<unsigned> found;
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      auto dimExpr = dyn_cast<AffineDimExpr>(e);
      if (!dimExpr || dimExpr.getPosition() != loop)
        continue;
      if (found)
        return std::nullopt;
      found = i;
    }
    return found;
  }

  /// Where a result's pieces go: slices of `base` at `offsets` and
  /// `sizes`, result dimension r at dimension `dims[r]` of `base`. That is
  /// the result's own init or, when the result's one use inserts it into a
  /// larger tensor (a KV cache), that tensor: a piece written into a slice
  /// of the init and inserted would be copied.
  struct Destination {
    Value base;
    SmallVector<OpFoldResult> offsets, sizes;
    SmallVector<unsigned> dims;
    tensor::InsertSliceOp insert;
  };

  static Destination destinationOf(linalg::GenericOp op, unsigned i,
                                   PatternRewriter &rewriter) {
    Value result = op.getResult(i);
    int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
    Destination d;
    auto insert = dyn_cast<tensor::InsertSliceOp>(
        result.hasOneUse() ? *result.getUsers().begin() : nullptr);
    // One result only: the pieces are built where the insert is, after
    // everything it reads. A body that reads its output (a reduction's
    // initial value) must start from the init, not the larger tensor.
    if (insert && op.getNumResults() == 1 && insert.getSource() == result &&
        !op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)) &&
        llvm::all_of(insert.getMixedStrides(), [](OpFoldResult stride) {
          return isConstantIntValue(stride, 1);
        })) {
      d.base = insert.getDest();
      d.offsets = insert.getMixedOffsets();
      d.sizes = insert.getMixedSizes();
      llvm::SmallBitVector dropped = insert.getDroppedDims();
      for (unsigned dim = 0; dim < dropped.size(); ++dim)
        if (!dropped.test(dim))
          d.dims.push_back(dim);
      d.insert = insert;
      return d;
    }
    d.base = op.getDpsInits()[i];
    d.offsets.assign(rank, rewriter.getIndexAttr(0));
    d.sizes = tensor::getMixedSizes(rewriter, op.getLoc(), d.base);
    d.dims = llvm::to_vector(llvm::seq<unsigned>(0, rank));
    return d;
  }

  static void rewritePiecewise(linalg::GenericOp op, Value read,
                               tensor::ConcatOp concat, unsigned loop,
                               PatternRewriter &rewriter) {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto add = [&](OpFoldResult a, OpFoldResult b) {
      return affine::makeComposedFoldedAffineApply(
          rewriter, loc,
          getAffineSymbolExpr(0, context) + getAffineSymbolExpr(1, context),
          {a, b});
    };
    SmallVector<Destination> destinations;
    for (unsigned i = 0; i < op.getNumResults(); ++i)
      destinations.push_back(destinationOf(op, i, rewriter));
    OpBuilder::InsertionGuard guard(rewriter);
    if (destinations.front().insert)
      rewriter.setInsertionPoint(destinations.front().insert);
    OpFoldResult offset = rewriter.getIndexAttr(0);
    for (Value input : concat.getInputs()) {
      // The more static type: the piece's ops see the sizes.
      if (auto cast = input.getDefiningOp<tensor::CastOp>())
        input = cast.getSource();
      // A constant size as an attribute, so that the slices' types and
      // their static sizes agree.
      OpFoldResult size =
          tensor::getMixedSize(rewriter, loc, input, concat.getDim());
      if (auto value = dyn_cast<Value>(size))
        size = getAsOpFoldResult(value);
      SmallVector<Value> inputs, inits;
      for (OpOperand *operand : op.getDpsInputOperands()) {
        std::optional<unsigned> dim =
            slicedDim(op.getMatchingIndexingMap(operand), loop);
        if (operand->get() == read || !dim) {
          inputs.push_back(operand->get() == read ? input : operand->get());
          continue;
        }
        Value value = operand->get();
        int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
        SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes =
            tensor::getMixedSizes(rewriter, loc, value);
        offsets[*dim] = offset;
        sizes[*dim] = size;
        inputs.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, value, offsets, sizes,
            SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1))));
      }
      SmallVector<SmallVector<OpFoldResult>> pieceOffsets, pieceSizes;
      for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
        Destination &d = destinations[i];
        unsigned resultDim = *slicedDim(op.getMatchingIndexingMap(&init), loop);
        unsigned dim = d.dims[resultDim];
        pieceOffsets.push_back(d.offsets);
        pieceSizes.push_back(d.sizes);
        pieceOffsets.back()[dim] = add(d.offsets[dim], offset);
        pieceSizes.back()[dim] = size;
        // The piece's type: the result's, with this piece's size.
        auto type = cast<RankedTensorType>(op.getResult(i).getType());
        SmallVector<int64_t> shape(type.getShape());
        std::optional<int64_t> staticSize = getConstantIntValue(size);
        shape[resultDim] = staticSize ? *staticSize : ShapedType::kDynamic;
        int64_t baseRank = cast<RankedTensorType>(d.base.getType()).getRank();
        inits.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, type.clone(shape), d.base, pieceOffsets.back(),
            pieceSizes.back(),
            SmallVector<OpFoldResult>(baseRank, rewriter.getIndexAttr(1))));
      }
      auto piece = linalg::GenericOp::create(
          rewriter, loc, ValueRange(inits).getTypes(), inputs, inits,
          op.getIndexingMapsArray(), op.getIteratorTypesArray());
      rewriter.cloneRegionBefore(op.getRegion(), piece.getRegion(),
                                 piece.getRegion().end());
      for (auto [i, d] : llvm::enumerate(destinations)) {
        int64_t baseRank = cast<RankedTensorType>(d.base.getType()).getRank();
        d.base = tensor::InsertSliceOp::create(
            rewriter, loc, piece.getResult(i), d.base, pieceOffsets[i],
            pieceSizes[i],
            SmallVector<OpFoldResult>(baseRank, rewriter.getIndexAttr(1)));
      }
      offset = add(offset, size);
    }
    for (auto [i, d] : llvm::enumerate(destinations)) {
      if (d.insert) {
        // The insert's result is now the pieces' chain; the op's result
        // had no other use.
        rewriter.replaceOp(d.insert, d.base);
        continue;
      }
      Value result = d.base;
      if (result.getType() != op.getResult(i).getType())
        result = tensor::CastOp::create(rewriter, loc,
                                        op.getResult(i).getType(), result);
      rewriter.replaceAllUsesWith(op.getResult(i), result);
    }
    rewriter.eraseOp(op);
  }

  int64_t maxInputs;
};

/// A slice of a transpose is the transpose of the slice of its input, the
/// dimensions permuted: the importer's rotary embedding slices the
/// transposed queries and keys into halves, and so the transposes (a copy
/// kernel each on the GPU) reach the elementwise ops that read them.
struct SliceBeforeTranspose : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto transpose = slice.getSource().getDefiningOp<linalg::TransposeOp>();
    if (!transpose || !transpose.hasPureTensorSemantics() ||
        slice.getType().getRank() != slice.getSourceType().getRank())
      return rewriter.notifyMatchFailure(slice, "not a slice of a transpose");
    ArrayRef<int64_t> permutation = transpose.getPermutation();
    auto permute = [&](ArrayRef<OpFoldResult> values) {
      SmallVector<OpFoldResult> permuted(values.size());
      for (auto [i, dim] : llvm::enumerate(permutation))
        permuted[dim] = values[i];
      return permuted;
    };
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    Location loc = slice.getLoc();
    Value input = tensor::ExtractSliceOp::create(
        rewriter, loc, transpose.getInput(), permute(slice.getMixedOffsets()),
        permute(sizes), permute(slice.getMixedStrides()));
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         slice.getType().getElementType());
    Value result =
        linalg::TransposeOp::create(rewriter, loc, input, init, permutation)
            .getResult()[0];
    if (result.getType() != slice.getType())
      result = tensor::CastOp::create(rewriter, loc, slice.getType(), result);
    rewriter.replaceOp(slice, result);
    return success();
  }
};

/// An elementwise generic reads a transpose's input through the permuted
/// indexing map instead of the transpose's result; once no op reads the
/// result, the transpose is gone. (Only elementwise consumers: the
/// attention passes match the transposes their contractions read.)
struct ReadThroughTranspose : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() ||
        op.getNumParallelLoops() != op.getNumLoops())
      return rewriter.notifyMatchFailure(op, "not elementwise on tensors");
    SmallVector<Value> inputs = op.getDpsInputs();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    bool changed = false;
    for (auto [i, input] : llvm::enumerate(inputs)) {
      auto transpose = input.getDefiningOp<linalg::TransposeOp>();
      if (!transpose || !transpose.hasPureTensorSemantics())
        continue;
      inputs[i] = transpose.getInput();
      maps[i] = throughTranspose(maps[i], transpose.getPermutation());
      changed = true;
    }
    if (!changed)
      return rewriter.notifyMatchFailure(op, "reads no transpose");
    rewriter.modifyOpInPlace(op, [&] {
      op.getInputsMutable().assign(inputs);
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    return success();
  }
};

struct FuseElementwisePass
    : public specula::impl::SpecFuseElementwiseBase<FuseElementwisePass> {
  using SpecFuseElementwiseBase::SpecFuseElementwiseBase;

  LogicalResult initialize(MLIRContext *context) override {
    if (maxConcatInputs < 0)
      return emitError(UnknownLoc::get(context))
             << "spec-fuse-elementwise: max-concat-inputs must be 0 (none) or "
                "positive, got "
             << static_cast<int64_t>(maxConcatInputs);
    return success();
  }

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
    if (foldTransposes)
      patterns.add<SliceBeforeTranspose, ReadThroughTranspose>(context);
    if (maxConcatInputs > 0) {
      patterns.add<ConcatToPieces>(context, maxConcatInputs);
      // The pieces' sizes are dims of their inputs: folded to the sizes
      // they were made with, the dims no longer use the producers that
      // should fuse into the pieces.
      tensor::DimOp::getCanonicalizationPatterns(patterns, context);
    }
    if (failed(applyPatternsGreedily(
            getOperation(), std::move(patterns),
            GreedyRewriteConfig().setUseTopDownTraversal(true))))
      signalPassFailure();
  }
};
} // namespace
