//===- Slice.cpp - ONNX Slice and Split -----------------------------------===//
//
// Both become tensor.extract_slice; bounds computed in the graph stay
// runtime index values, clamped as ONNX specifies.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

using namespace mlir;
using namespace specula::onnx_import;

namespace {
/// extract_slice, then a cast to the type shape inference gave.
Value extractSlice(OpBuilder &b, Location loc, Value source,
                   RankedTensorType resultType, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes,
                   ArrayRef<OpFoldResult> strides) {
  Value slice =
      tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes, strides);
  if (slice.getType() != resultType)
    slice = tensor::CastOp::create(b, loc, resultType, slice);
  return slice;
}

/// Slice(data, starts, ends, axes?, steps?) with positive steps.
LogicalResult importSlice(NodeImporter &node) {
  Value data = node.operand(0), starts = node.operand(1),
        ends = node.operand(2);
  auto dataType = cast<RankedTensorType>(data.getType());
  FailureOr<RankedTensorType> resultType = node.resultType(
      0, [&] { return dynamicShape(dataType.getRank()); });
  if (failed(resultType))
    return failure();
  int64_t rank = dataType.getRank();
  auto startsType = cast<RankedTensorType>(starts.getType());
  if (startsType.isDynamicDim(0))
    return node.emitError() << "starts must have a static length";
  int64_t count = startsType.getDimSize(0);

  SmallVector<int64_t> axes;
  if (node.operand(3)) {
    FailureOr<SmallVector<int64_t>> constantAxes =
        node.constantInts(3, "axes");
    if (failed(constantAxes))
      return failure();
    axes = *constantAxes;
  } else {
    for (int64_t i = 0; i < count; ++i)
      axes.push_back(i);
  }
  SmallVector<int64_t> steps(count, 1);
  if (node.operand(4)) {
    FailureOr<SmallVector<int64_t>> constantSteps =
        node.constantInts(4, "steps");
    if (failed(constantSteps))
      return failure();
    steps = *constantSteps;
  }
  if (static_cast<int64_t>(axes.size()) != count ||
      static_cast<int64_t>(steps.size()) != count)
    return node.emitError() << "starts, ends, axes and steps must have the "
                               "same length";

  OpBuilder &b = node.builder();
  Location loc = node.loc();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(dataType.isDynamicDim(d)
                        ? OpFoldResult(dimSize(b, loc, data, d))
                        : OpFoldResult(b.getIndexAttr(dataType.getDimSize(d))));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t i = 0; i < count; ++i) {
    FailureOr<int64_t> axis = normalizeAxis(node, axes[i], rank);
    if (failed(axis))
      return failure();
    if (steps[i] <= 0)
      return node.emitError() << "only positive steps are supported, got "
                              << steps[i];
    Value dim = dimSize(b, loc, data, *axis);
    // Negative bounds count from the end; then clamp to [0, dim].
    auto clamp = [&](Value bound) {
      Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                             bound, zero);
      bound = arith::SelectOp::create(
          b, loc, negative, arith::AddIOp::create(b, loc, bound, dim), bound);
      return arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, bound, zero), dim);
    };
    Value start = clamp(extractIndex(b, loc, starts, i));
    Value end = clamp(extractIndex(b, loc, ends, i));
    Value step = arith::ConstantIndexOp::create(b, loc, steps[i]);
    Value length = arith::CeilDivSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, end, start), step);
    offsets[*axis] = start;
    sizes[*axis] = OpFoldResult(arith::MaxSIOp::create(b, loc, length, zero));
    strides[*axis] = b.getIndexAttr(steps[i]);
  }
  node.setResult(0, extractSlice(b, loc, data, *resultType, offsets, sizes,
                                 strides));
  return success();
}

/// Split(input, split?) along `axis`: given sizes, or equal parts.
LogicalResult importSplit(NodeImporter &node) {
  Value input = node.operand(0);
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = normalizeAxis(node, node.intAttr("axis", 0), rank);
  if (failed(axis))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  unsigned parts = node.numResults();
  SmallVector<Value> partSizes;
  if (node.operand(1)) {
    for (unsigned i = 0; i < parts; ++i)
      partSizes.push_back(extractIndex(b, loc, node.operand(1), i));
  } else {
    Value dim = dimSize(b, loc, input, *axis);
    Value part = arith::CeilDivUIOp::create(
        b, loc, dim, arith::ConstantIndexOp::create(b, loc, parts));
    for (unsigned i = 0; i < parts; ++i)
      partSizes.push_back(part);
  }
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(OpFoldResult(dimSize(b, loc, input, d)));
  Value offset = arith::ConstantIndexOp::create(b, loc, 0);
  for (unsigned i = 0; i < parts; ++i) {
    FailureOr<RankedTensorType> resultType = node.resultType(i);
    if (failed(resultType))
      return failure();
    offsets[*axis] = offset;
    sizes[*axis] = partSizes[i];
    node.setResult(i, extractSlice(b, loc, input, *resultType, offsets, sizes,
                                   strides));
    offset = arith::AddIOp::create(b, loc, offset, partSizes[i]);
  }
  return success();
}
} // namespace

void specula::onnx_import::registerSliceHandlers(OpHandlerRegistry &registry) {
  registry.add("Slice", 10, 13, importSlice);
  registry.add("Split", 13, 13, importSplit);
}
