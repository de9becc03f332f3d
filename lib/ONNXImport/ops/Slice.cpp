//===- Slice.cpp - ONNX Slice and Split -----------------------------------===//
//
// Both become tensor.extract_slice; bounds computed in the graph stay
// runtime index values, clamped as ONNX specifies.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

using namespace mlir;
using namespace specula::onnx_import;

namespace {
/// extract_slice, then a cast to the type shape inference gave.
Value extractSlice(OpBuilder &b, Location loc, Value source,
                   RankedTensorType resultType, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes,
                   ArrayRef<OpFoldResult> strides) {
  // A slice of a tensor with no elements has none: tensor.extract_slice's
  // verifier refuses even offset 0 into a dimension of size 0.
  if (llvm::is_contained(cast<RankedTensorType>(source.getType()).getShape(),
                         0)) {
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < resultType.getRank(); ++d)
      if (resultType.isDynamicDim(d))
        dynamicSizes.push_back(getValueOrCreateConstantIndexOp(b, loc, sizes[d]));
    return tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                   resultType.getElementType(), dynamicSizes);
  }
  Value slice =
      tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes, strides);
  if (slice.getType() != resultType)
    slice = tensor::CastOp::create(b, loc, resultType, slice);
  return slice;
}

/// The first, last-exclusive bound and length of one sliced dimension, per
/// ONNX: negative bounds count from the end; then starts clamp to [0, dim]
/// and ends to [0, dim] for positive steps, to [0, dim - 1] and [-1, dim - 1]
/// for negative ones.
struct SliceBounds {
  Value start, length;
};

SliceBounds sliceBounds(OpBuilder &b, Location loc, Value start, Value end,
                        Value step, Value dim) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value minusOne = arith::ConstantIndexOp::create(b, loc, -1);
  Value dimMinusOne = arith::AddIOp::create(b, loc, dim, minusOne);
  Value negativeStep =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, step, zero);
  auto wrap = [&](Value bound) {
    Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           bound, zero);
    return arith::SelectOp::create(
        b, loc, negative, arith::AddIOp::create(b, loc, bound, dim), bound);
  };
  auto clamp = [&](Value bound, Value low, Value high) {
    return arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, bound, low), high);
  };
  Value first = arith::SelectOp::create(
      b, loc, negativeStep, clamp(wrap(start), zero, dimMinusOne),
      clamp(wrap(start), zero, dim));
  Value last = arith::SelectOp::create(
      b, loc, negativeStep, clamp(wrap(end), minusOne, dimMinusOne),
      clamp(wrap(end), zero, dim));
  // A step of 0 (invalid ONNX, possible at run time) must not trap in the
  // division: it slices like a step of 1.
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value nonzeroStep = arith::SelectOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, step, zero),
      one, step);
  Value length = arith::MaxSIOp::create(
      b, loc,
      arith::CeilDivSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, last, first), nonzeroStep),
      zero);
  // An empty slice may start at the end of the dimension (x[..., 16:] of 16
  // elements), which a memref.subview refuses as out of bounds; any offset
  // reads nothing, and 0 is always valid.
  Value empty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, length, zero);
  return {arith::SelectOp::create(b, loc, empty, zero, first), length};
}

/// What Slice's axes and steps operands say: constant axes (normalized)
/// and steps where they are constants (unset when known only at run time),
/// and how many axes are sliced.
struct SliceAxes {
  int64_t count = 0;
  std::optional<SmallVector<int64_t>> axes, steps;
};

FailureOr<SliceAxes> readSliceAxes(NodeImporter &node, int64_t rank) {
  auto startsType = cast<RankedTensorType>(node.operand(1).getType());
  if (startsType.isDynamicDim(0))
    return node.emitError() << "starts must have a static length";
  SliceAxes result;
  int64_t count = result.count = startsType.getDimSize(0);
  // Each axis is sliced at most once; more bounds than the rank would cost
  // IR without meaning anything.
  if (count > rank)
    return node.emitError() << "starts has " << count
                            << " elements; the data has rank " << rank
                            << " (each axis may be sliced once)";
  if (!node.operand(3)) {
    result.axes.emplace();
    for (int64_t i = 0; i < count; ++i)
      result.axes->push_back(i);
  } else if (node.constantOperand(3)) {
    FailureOr<SmallVector<int64_t>> values = node.constantInts(3, "axes");
    if (failed(values))
      return failure();
    result.axes = *values;
    for (int64_t &axis : *result.axes) {
      FailureOr<int64_t> normalized = normalizeAxis(node, axis, rank);
      if (failed(normalized))
        return failure();
      axis = *normalized;
    }
  }
  if (!node.operand(4)) {
    result.steps = SmallVector<int64_t>(count, 1);
  } else if (node.constantOperand(4)) {
    FailureOr<SmallVector<int64_t>> values = node.constantInts(4, "steps");
    if (failed(values))
      return failure();
    result.steps = *values;
    if (llvm::is_contained(*result.steps, 0))
      return node.emitError() << "steps must not be 0";
  }
  if ((result.axes && static_cast<int64_t>(result.axes->size()) != count) ||
      (result.steps && static_cast<int64_t>(result.steps->size()) != count))
    return node.emitError() << "starts, ends, axes and steps must have the "
                               "same length";
  return result;
}

/// Each dimension's offset, size and stride in the data.
struct SliceWindow {
  SmallVector<Value> offsets, sizes, strides;
};

SliceWindow buildSliceWindow(NodeImporter &node, const SliceAxes &sliced) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value data = node.operand(0);
  int64_t rank = cast<RankedTensorType>(data.getType()).getRank();
  SliceWindow window;
  for (int64_t d = 0; d < rank; ++d) {
    window.offsets.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    window.sizes.push_back(dimSize(b, loc, data, d));
    window.strides.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value rankValue = arith::ConstantIndexOp::create(b, loc, rank);
  for (int64_t i = 0; i < sliced.count; ++i) {
    Value step =
        sliced.steps
            ? Value(arith::ConstantIndexOp::create(b, loc, (*sliced.steps)[i]))
            : extractIndex(b, loc, node.operand(4), i);
    // Steps known only at run time are checked then: a step of 0 is
    // reported to the caller (spec-lower-checks), and slices like a step of
    // 1 meanwhile (sliceBounds), so the code stays in bounds.
    if (!sliced.steps)
      cf::AssertOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, step, zero),
          node.describe() + ": steps must not be 0");
    Value start = extractIndex(b, loc, node.operand(1), i);
    Value end = extractIndex(b, loc, node.operand(2), i);
    // A constant axis sets its dimension; one known only at run time
    // updates every dimension it may be.
    Value axis;
    if (!sliced.axes) {
      axis = extractIndex(b, loc, node.operand(3), i);
      Value negative =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, axis, zero);
      axis = arith::SelectOp::create(
          b, loc, negative, arith::AddIOp::create(b, loc, axis, rankValue),
          axis);
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (sliced.axes && (*sliced.axes)[i] != d)
        continue;
      Value here;
      if (axis)
        here = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, axis,
                                     arith::ConstantIndexOp::create(b, loc, d));
      SliceBounds bounds = sliceBounds(b, loc, start, end, step,
                                       dimSize(b, loc, data, d));
      auto choose = [&](Value sliced, Value old) -> Value {
        return here ? arith::SelectOp::create(b, loc, here, sliced, old)
                    : sliced;
      };
      window.offsets[d] = choose(bounds.start, window.offsets[d]);
      window.sizes[d] = choose(bounds.length, window.sizes[d]);
      window.strides[d] = choose(step, window.strides[d]);
    }
  }
  return window;
}

/// The slice read element by element: steps that may be negative, or axes
/// known only at run time.
Value gatherSlice(OpBuilder &b, Location loc, Value data,
                  RankedTensorType resultType, const SliceWindow &window) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < rank; ++d)
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(window.sizes[d]);
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType(),
                                       dynamicSizes);
  MLIRContext *context = b.getContext();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{}, ValueRange{init},
      SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, context)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> position;
        for (int64_t d = 0; d < rank; ++d)
          position.push_back(arith::AddIOp::create(
              nb, l, window.offsets[d],
              arith::MulIOp::create(nb, l, linalg::IndexOp::create(nb, l, d),
                                    window.strides[d])));
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, data, position).getResult());
      });
  return generic.getResult(0);
}

/// Slice(data, starts, ends, axes?, steps?). Constant axes and positive
/// constant steps give a tensor.extract_slice; otherwise (axes or steps
/// computed at run time, negative steps) a linalg.generic reads
/// data[start + i * step] in every dimension.
LogicalResult importSlice(NodeImporter &node) {
  static constexpr StringLiteral kOperands[] = {"data", "starts", "ends",
                                               "axes", "steps"};
  for (unsigned i = 0; i < std::size(kOperands); ++i)
    if (failed(checkOperandRank(node, i, kOperands[i], 1,
                                i == 0 ? std::numeric_limits<int64_t>::max()
                                       : 1)))
      return failure();
  Value data = node.operand(0);
  int64_t rank = cast<RankedTensorType>(data.getType()).getRank();
  FailureOr<RankedTensorType> resultType =
      node.resultType(0, [&] { return dynamicShape(rank); });
  if (failed(resultType))
    return failure();
  FailureOr<SliceAxes> sliced = readSliceAxes(node, rank);
  if (failed(sliced))
    return failure();
  SliceWindow window = buildSliceWindow(node, *sliced);
  OpBuilder &b = node.builder();
  bool positiveConstantSteps =
      sliced->axes && sliced->steps &&
      llvm::all_of(*sliced->steps, [](int64_t s) { return s > 0; });
  if (!positiveConstantSteps) {
    node.setResult(0, gatherSlice(b, node.loc(), data, *resultType, window));
    return success();
  }
  SmallVector<OpFoldResult> staticStrides(rank, b.getIndexAttr(1));
  for (int64_t i = 0; i < sliced->count; ++i)
    staticStrides[(*sliced->axes)[i]] = b.getIndexAttr((*sliced->steps)[i]);
  node.setResult(0, extractSlice(b, node.loc(), data, *resultType,
                                 getAsOpFoldResult(window.offsets),
                                 getAsOpFoldResult(window.sizes),
                                 staticStrides));
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
  if (node.operand(1)) {
    if (failed(checkOperandRank(node, 1, "split", 1, 1)))
      return failure();
    int64_t length =
        cast<RankedTensorType>(node.operand(1).getType()).getDimSize(0);
    if (!ShapedType::isDynamic(length) && length != parts)
      return node.emitError() << "split has " << length << " sizes for "
                              << parts << " outputs";
  }
  SmallVector<Value> partSizes;
  // Constant sizes give the parts static sizes along the axis.
  SmallVector<int64_t> staticSizes(parts, ShapedType::kDynamic);
  if (DenseElementsAttr split = node.constantOperand(1)) {
    int64_t total = 0;
    for (auto [i, size] : llvm::enumerate(split.getValues<APInt>())) {
      if (size.isNegative() || size.getActiveBits() > 62)
        return node.emitError() << "split size " << size.getSExtValue()
                                << " is out of range";
      if (i < parts)
        staticSizes[i] = size.getSExtValue();
      if (__builtin_add_overflow(total, size.getSExtValue(), &total))
        return node.emitError() << "the split sizes overflow";
    }
    if (!type.isDynamicDim(*axis) && total != type.getDimSize(*axis))
      return node.emitError() << "the split sizes add up to " << total
                              << ", not the input's " << type.getDimSize(*axis);
  }
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
    // Each part has the input's rank and sizes but along the axis (libonnx
    // gives no shape when the sizes are computed at run time).
    FailureOr<RankedTensorType> resultType = node.resultType(i, [&] {
      SmallVector<int64_t> shape(type.getShape());
      shape[*axis] = staticSizes[i];
      return shape;
    });
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
