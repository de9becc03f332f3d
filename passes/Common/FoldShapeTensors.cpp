//===- FoldShapeTensors.cpp - the graph's shape arithmetic as scalars -----===//
//
// ONNX graphs compute the shapes they reshape to as small integer tensors:
// Shape, Gather, Unsqueeze, Concat. Imported as tensor ops, each such shape
// becomes, per forward, a buffer filled by one strided copy per element
// (the runtime's memrefCopy) and read back element by element: the example
// target spent 47 copies and 8 allocations per forward on them. Elementwise
// ops on them (Equal, Where, Div) were GPU kernels whose results the host
// read back. Here they become the scalars they are.
//
//===----------------------------------------------------------------------===//

#include "passes/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace specula {
#define GEN_PASS_DEF_SPECFOLDSHAPETENSORS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
/// The constant values of `indices`, or nothing.
std::optional<SmallVector<int64_t>> constantIndices(ValueRange indices) {
  SmallVector<int64_t> values;
  for (Value index : indices) {
    std::optional<int64_t> value = getConstantIntValue(index);
    if (!value)
      return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

/// `tensor.concat` of rank-1 integer tensors with at most `maxElements`
/// elements in all -> `tensor.from_elements` of their elements. The
/// elements' extracts then fold into the scalars they came from.
struct ConcatToFromElements : OpRewritePattern<tensor::ConcatOp> {
  ConcatToFromElements(MLIRContext *context, int64_t maxElements)
      : OpRewritePattern(context), maxElements(maxElements) {}

  LogicalResult matchAndRewrite(tensor::ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = concat.getResultType();
    if (type.getRank() != 1 || !type.hasStaticShape() ||
        type.getNumElements() > maxElements ||
        !type.getElementType().isIntOrIndex())
      return rewriter.notifyMatchFailure(concat, "not a small shape tensor");
    // The result's size may be static where an input's is not.
    if (!llvm::all_of(concat.getInputs(), [](Value input) {
          return cast<RankedTensorType>(input.getType()).hasStaticShape();
        }))
      return rewriter.notifyMatchFailure(concat, "an input's size is dynamic");
    Location loc = concat.getLoc();
    SmallVector<Value> elements;
    for (Value input : concat.getInputs()) {
      int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(0);
      for (int64_t i = 0; i < size; ++i) {
        Value index = arith::ConstantIndexOp::create(rewriter, loc, i);
        elements.push_back(
            tensor::ExtractOp::create(rewriter, loc, input, ValueRange{index}));
      }
    }
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(concat, type, elements);
    return success();
  }

  int64_t maxElements;
};

/// `tensor.extract` at constant indices of a `tensor.reshape` between static
/// shapes -> the element of the reshape's source at the same linear index
/// (an Unsqueeze of a scalar is a reshape of a 0-d tensor).
struct ExtractOfReshape : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract,
                                PatternRewriter &rewriter) const override {
    auto reshape = extract.getTensor().getDefiningOp<tensor::ReshapeOp>();
    if (!reshape)
      return rewriter.notifyMatchFailure(extract, "not of a tensor.reshape");
    auto sourceType = cast<RankedTensorType>(reshape.getSource().getType());
    auto resultType = cast<RankedTensorType>(reshape.getResult().getType());
    if (!sourceType.hasStaticShape() || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(extract, "dynamic shapes");
    std::optional<SmallVector<int64_t>> indices =
        constantIndices(extract.getIndices());
    if (!indices)
      return rewriter.notifyMatchFailure(extract, "indices not constant");
    // Out of bounds (an empty tensor included): nothing to fold to.
    for (auto [index, size] : llvm::zip(*indices, resultType.getShape()))
      if (index < 0 || index >= size)
        return rewriter.notifyMatchFailure(extract, "index out of bounds");
    int64_t linear = 0;
    for (auto [index, size] : llvm::zip(*indices, resultType.getShape()))
      linear = linear * size + index;
    SmallVector<Value> sourceIndices(sourceType.getRank());
    for (int64_t d = sourceType.getRank() - 1; d >= 0; --d) {
      int64_t size = sourceType.getDimSize(d);
      sourceIndices[d] = arith::ConstantIndexOp::create(
          rewriter, extract.getLoc(), linear % size);
      linear /= size;
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractOp>(extract, reshape.getSource(),
                                                   sourceIndices);
    return success();
  }
};

/// A `linalg.fill` on tensors, or nothing.
linalg::FillOp tensorFill(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  return fill && fill.hasPureTensorSemantics() ? fill : linalg::FillOp();
}

/// Whether `value` is a tensor whose elements are scalars known here: a
/// `tensor.from_elements`, a fill or a constant.
bool hasScalarElements(Value value) {
  return value.getDefiningOp<tensor::FromElementsOp>() || tensorFill(value) ||
         matchPattern(value, m_Constant());
}

/// An elementwise `linalg.generic` on small static integer tensors whose
/// operands are scalars known here (`tensor.from_elements`, fills,
/// constants) -> its body once per element, on the scalars, into
/// `tensor.from_elements`. ONNX computes shapes this way (Expand's
/// `Where(Equal(shape, -1), 1, shape)`, a size divided by the head count): as
/// linalg ops they would be kernels on the GPU whose results the host reads
/// back before it can allocate, a synchronization each.
struct ElementwiseOnScalars : OpRewritePattern<linalg::GenericOp> {
  ElementwiseOnScalars(MLIRContext *context, int64_t maxElements)
      : OpRewritePattern(context), maxElements(maxElements) {}

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics() ||
        generic.getNumReductionLoops() != 0)
      return rewriter.notifyMatchFailure(generic, "not elementwise on tensors");
    for (Value operand : generic->getOperands()) {
      auto type = cast<RankedTensorType>(operand.getType());
      if (!type.hasStaticShape() || type.getNumElements() > maxElements ||
          !type.getElementType().isIntOrIndex())
        return rewriter.notifyMatchFailure(generic, "not a small shape tensor");
    }
    Block &body = generic.getRegion().front();
    for (OpOperand &operand : generic->getOpOperands())
      if (!body.getArgument(operand.getOperandNumber()).use_empty() &&
          !hasScalarElements(operand.get()))
        return rewriter.notifyMatchFailure(generic,
                                           "an operand read is not scalars");
    std::optional<SmallVector<int64_t>> ranges = generic.getStaticLoopRanges();
    if (!ranges || llvm::any_of(*ranges, ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(generic, "dynamic loop ranges");
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    for (AffineMap map : maps)
      if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
        return rewriter.notifyMatchFailure(generic, "not a projection");

    // The loop nest's iterations in row-major order are the results'
    // elements in row-major order only where the results' maps are
    // identities.
    for (OpOperand &init : generic.getDpsInitsMutable())
      if (!maps[init.getOperandNumber()].isIdentity())
        return rewriter.notifyMatchFailure(generic, "a result is permuted");

    Location loc = generic.getLoc();
    int64_t iterations = 1;
    for (int64_t range : *ranges)
      iterations *= range;
    SmallVector<SmallVector<Value>> elements(generic.getNumResults());
    SmallVector<int64_t> point(ranges->size(), 0);
    for (int64_t iteration = 0; iteration < iterations; ++iteration) {
      IRMapping mapping;
      for (OpOperand &operand : generic->getOpOperands()) {
        BlockArgument argument = body.getArgument(operand.getOperandNumber());
        if (argument.use_empty())
          continue;
        if (linalg::FillOp fill = tensorFill(operand.get())) {
          mapping.map(argument, fill.value());
          continue;
        }
        SmallVector<Value> indices;
        for (int64_t index : maps[operand.getOperandNumber()].compose(point))
          indices.push_back(
              arith::ConstantIndexOp::create(rewriter, loc, index));
        mapping.map(argument, tensor::ExtractOp::create(
                                  rewriter, loc, operand.get(), indices));
      }
      for (Operation &op : body.without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(op)) {
          mapping.map(index.getResult(),
                      arith::ConstantIndexOp::create(rewriter, loc,
                                                     point[index.getDim()]));
          continue;
        }
        rewriter.clone(op, mapping);
      }
      for (auto [result, yielded] :
           llvm::enumerate(body.getTerminator()->getOperands()))
        elements[result].push_back(mapping.lookupOrDefault(yielded));
      // The next point, the innermost loop fastest.
      for (int64_t d = static_cast<int64_t>(point.size()) - 1; d >= 0; --d) {
        if (++point[d] < (*ranges)[d])
          break;
        point[d] = 0;
      }
    }
    SmallVector<Value> results;
    for (auto [type, values] : llvm::zip(generic.getResultTypes(), elements))
      results.push_back(
          tensor::FromElementsOp::create(rewriter, loc, type, values));
    rewriter.replaceOp(generic, results);
    return success();
  }

  int64_t maxElements;
};

struct FoldShapeTensorsPass
    : public specula::impl::SpecFoldShapeTensorsBase<FoldShapeTensorsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (maxElements < 1)
      return emitError(UnknownLoc::get(context))
             << "spec-fold-shape-tensors: max-elements must be positive, got "
             << static_cast<int64_t>(maxElements);
    return success();
  }

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<ConcatToFromElements>(context, maxElements);
    patterns.add<ExtractOfReshape>(context);
    patterns.add<ElementwiseOnScalars>(context, maxElements);
    // tensor.extract's folds: of from_elements, of a constant.
    tensor::ExtractOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
