//===- FoldShapeTensors.cpp - the graph's shape arithmetic as scalars -----===//
//
// ONNX graphs compute the shapes they reshape to as small integer tensors:
// Shape, Gather, Unsqueeze, Concat. Imported as tensor ops, each such shape
// becomes, per forward, a buffer filled by one strided copy per element
// (the runtime's memrefCopy) and read back element by element: the example
// target spent 47 copies and 8 allocations per forward on them. Here they
// become the scalars they are.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace specula {
#define GEN_PASS_DEF_SPECFOLDSHAPETENSORS
#include "passes/Passes.h.inc"
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

struct FoldShapeTensorsPass
    : public specula::impl::SpecFoldShapeTensorsBase<FoldShapeTensorsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<ConcatToFromElements>(context, maxElements);
    patterns.add<ExtractOfReshape>(context);
    // tensor.extract's folds: of from_elements, of a constant.
    tensor::ExtractOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
