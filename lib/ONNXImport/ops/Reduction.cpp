//===- Reduction.cpp - ONNX reductions and normalizations -----------------===//
//
// ReduceMean, ReduceSum, ReduceMax, Softmax, LayerNormalization. Every
// reduction is a linalg.generic reducing in index order, so a row's result
// does not depend on how many rows are computed together.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

using namespace mlir;
using namespace specula::onnx_import;

namespace {
enum class Combine { Sum, Max };

/// The identity of a running maximum (-inf, or the smallest integer) or
/// minimum (+inf, or the largest integer) of `type`.
Value extremeIdentity(OpBuilder &b, Location loc, Type type, bool max) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(floatType,
                               APFloat::getInf(floatType.getFloatSemantics(),
                                               /*Negative=*/max)));
  unsigned width = type.getIntOrFloatBitWidth();
  return arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(type, max ? APInt::getSignedMinValue(width)
                                 : APInt::getSignedMaxValue(width)));
}

/// Reduces `input` over the dimensions marked in `reduced`, keeping them as
/// size 1. Returns the reduced tensor.
Value reduceKeepDims(OpBuilder &b, Location loc, Value input,
                     ArrayRef<bool> reduced, Combine combine) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      shape.push_back(1);
      outExprs.push_back(getAffineConstantExpr(0, context));
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    shape.push_back(type.getDimSize(d));
    if (type.isDynamicDim(d))
      sizes.push_back(dimSize(b, loc, input, d));
    outExprs.push_back(getAffineDimExpr(d, context));
    iterators.push_back(utils::IteratorType::parallel);
  }
  Type elementType = type.getElementType();
  auto resultType = RankedTensorType::get(shape, elementType);
  Value identity = combine == Combine::Sum
                       ? scalarConstant(b, loc, elementType, 0)
                       : extremeIdentity(b, loc, elementType, /*max=*/true);
  Value filled = filledTensor(b, loc, shape, sizes, identity);
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, context),
                              AffineMap::get(rank, 0, outExprs, context)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{input}, ValueRange{filled},
      maps, iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        bool isFloat = isa<FloatType>(elementType);
        Value result;
        if (combine == Combine::Sum)
          result = isFloat ? Value(arith::AddFOp::create(nb, l, args[1], args[0]))
                           : Value(arith::AddIOp::create(nb, l, args[1], args[0]));
        else
          result = isFloat
                       ? Value(arith::MaximumFOp::create(nb, l, args[1], args[0]))
                       : Value(arith::MaxSIOp::create(nb, l, args[1], args[0]));
        linalg::YieldOp::create(nb, l, result);
      });
  return generic.getResult(0);
}

/// The number of elements in the reduced dimensions, as a scalar of `type`.
Value reducedCount(OpBuilder &b, Location loc, Value input,
                   ArrayRef<bool> reduced, Type type) {
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [d, isReduced] : llvm::enumerate(reduced))
    if (isReduced)
      count = arith::MulIOp::create(b, loc, count, dimSize(b, loc, input, d));
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  return castScalar(b, loc, asInt, type);
}

/// The reduced dimensions of a Reduce* node: from the `axes` attribute
/// (before opset 18) or input 1; all of them when absent, unless
/// noop_with_empty_axes.
FailureOr<SmallVector<bool>> reducedDims(NodeImporter &node, int64_t rank,
                                         bool axesAsInput) {
  std::optional<SmallVector<int64_t>> axes;
  if (axesAsInput) {
    if (node.operand(1)) {
      FailureOr<SmallVector<int64_t>> ints = node.constantInts(1, "axes");
      if (failed(ints))
        return failure();
      axes = *ints;
    }
  } else {
    axes = node.intsAttr("axes");
  }
  SmallVector<bool> reduced(rank, false);
  if (!axes || axes->empty()) {
    if (!node.intAttr("noop_with_empty_axes", 0))
      reduced.assign(rank, true);
    return reduced;
  }
  for (int64_t axis : *axes) {
    FailureOr<int64_t> normalized = normalizeAxis(node, axis, rank);
    if (failed(normalized))
      return failure();
    reduced[*normalized] = true;
  }
  return reduced;
}

/// Gives a keep-dims reduction the node's result type: a cast when the node
/// keeps the dimensions, a reshape dropping them otherwise (keepdims = 0).
Value toResultType(OpBuilder &b, Location loc, Value reducedValue,
                   RankedTensorType resultType, ArrayRef<bool> reduced) {
  if (reducedValue.getType() == resultType)
    return reducedValue;
  if (resultType.getRank() == static_cast<int64_t>(reduced.size()))
    return tensor::CastOp::create(b, loc, resultType, reducedValue);
  SmallVector<Value> sizes;
  for (auto [d, isReduced] : llvm::enumerate(reduced))
    if (!isReduced)
      sizes.push_back(dimSize(b, loc, reducedValue, d));
  auto shape = tensor::FromElementsOp::create(
      b, loc,
      RankedTensorType::get({static_cast<int64_t>(sizes.size())},
                            b.getIndexType()),
      sizes);
  return tensor::ReshapeOp::create(b, loc, resultType, reducedValue, shape);
}

LogicalResult importReduce(NodeImporter &node, Combine combine, bool mean,
                           bool axesAsInput) {
  Value input = node.operand(0);
  auto type = cast<RankedTensorType>(input.getType());
  FailureOr<SmallVector<bool>> reduced =
      reducedDims(node, type.getRank(), axesAsInput);
  if (failed(reduced))
    return failure();
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    SmallVector<int64_t> shape;
    for (auto [d, isReduced] : llvm::enumerate(*reduced))
      if (!isReduced)
        shape.push_back(type.getDimSize(d));
      else if (node.intAttr("keepdims", 1))
        shape.push_back(1);
    return shape;
  });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value result = reduceKeepDims(b, loc, input, *reduced, combine);
  if (mean) {
    Value count = reducedCount(b, loc, input, *reduced, type.getElementType());
    result = buildElementwise(
        b, loc, {result}, cast<RankedTensorType>(result.getType()),
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          if (isa<FloatType>(args[0].getType()))
            return arith::DivFOp::create(nb, l, args[0], count);
          return arith::DivSIOp::create(nb, l, args[0], count);
        });
  }
  node.setResult(0, toResultType(b, loc, result, *resultType, *reduced));
  return success();
}

/// softmax(x) = exp(x - max) / sum(exp(x - max)) along `axis`.
LogicalResult importSoftmax(NodeImporter &node) {
  FailureOr<RankedTensorType> resultType = node.resultType(
      0, [&] { return broadcastShape(node.operand(0)); });
  if (failed(resultType))
    return failure();
  Value input = node.operand(0);
  int64_t rank = resultType->getRank();
  FailureOr<int64_t> axis = normalizeAxis(node, node.intAttr("axis", -1), rank);
  if (failed(axis))
    return failure();
  SmallVector<bool> reduced(rank, false);
  reduced[*axis] = true;
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value max = reduceKeepDims(b, loc, input, reduced, Combine::Max);
  Value exps = buildElementwise(
      b, loc, {input, max}, *resultType,
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
      });
  Value sums = reduceKeepDims(b, loc, exps, reduced, Combine::Sum);
  node.setResult(0, buildElementwise(
                        b, loc, {exps, sums}, *resultType,
                        [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                          return arith::DivFOp::create(nb, l, args[0], args[1]);
                        }));
  return success();
}

/// LayerNormalization's optional outputs: the mean and 1 / sqrt(variance +
/// epsilon), with the normalized dimensions kept as size 1.
static LogicalResult setLayerNormStatistics(NodeImporter &node, Value mean,
                                            Value variance, float epsilon) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = cast<RankedTensorType>(mean.getType()).getElementType();
  auto keptType = [&](Value reducedValue, unsigned result)
      -> FailureOr<RankedTensorType> {
    return node.resultType(result, [&] {
      return SmallVector<int64_t>(
          cast<RankedTensorType>(reducedValue.getType()).getShape());
    });
  };
  if (node.numResults() > 1 && !node.node().output(1).empty()) {
    FailureOr<RankedTensorType> type = keptType(mean, 1);
    if (failed(type))
      return failure();
    node.setResult(1, mean.getType() == *type
                          ? mean
                          : tensor::CastOp::create(b, loc, *type, mean));
  }
  if (node.numResults() > 2 && !node.node().output(2).empty()) {
    FailureOr<RankedTensorType> type = keptType(variance, 2);
    if (failed(type))
      return failure();
    Value invStdDev = buildElementwise(
        b, loc, {variance}, cast<RankedTensorType>(variance.getType()),
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value eps = scalarConstant(nb, l, elementType, epsilon);
          Value one = scalarConstant(nb, l, elementType, 1);
          return arith::DivFOp::create(
              nb, l, one,
              math::SqrtOp::create(nb, l,
                                   arith::AddFOp::create(nb, l, args[0], eps)));
        });
    node.setResult(2, invStdDev.getType() == *type
                          ? invStdDev
                          : tensor::CastOp::create(b, loc, *type, invStdDev));
  }
  return success();
}

/// LayerNormalization(X, Scale, B): normalizes over dimensions axis..rank-1.
LogicalResult importLayerNormalization(NodeImporter &node) {
  FailureOr<RankedTensorType> resultType = node.resultType(
      0, [&] { return broadcastShape(node.operand(0)); });
  if (failed(resultType))
    return failure();
  Value x = node.operand(0), scale = node.operand(1), bias = node.operand(2);
  int64_t rank = resultType->getRank();
  FailureOr<int64_t> axis = normalizeAxis(node, node.intAttr("axis", -1), rank);
  if (failed(axis))
    return failure();
  // ONNX's inference does not check Scale and B against the normalized
  // dimensions.
  ArrayRef<int64_t> normalized = resultType->getShape().drop_front(*axis);
  if (failed(checkBroadcastsTo(node, scale, "Scale", normalized)) ||
      (bias && failed(checkBroadcastsTo(node, bias, "B", normalized))))
    return failure();
  float epsilon = node.floatAttr("epsilon", 1e-5f);
  SmallVector<bool> reduced(rank, false);
  for (int64_t d = *axis; d < rank; ++d)
    reduced[d] = true;
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = resultType->getElementType();
  Value count = reducedCount(b, loc, x, reduced, elementType);
  auto divideByCount = [&](Value sum) {
    return buildElementwise(
        b, loc, {sum}, cast<RankedTensorType>(sum.getType()),
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(nb, l, args[0], count);
        });
  };
  Value mean = divideByCount(reduceKeepDims(b, loc, x, reduced, Combine::Sum));
  Value centered = buildElementwise(
      b, loc, {x, mean}, *resultType,
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::SubFOp::create(nb, l, args[0], args[1]);
      });
  Value squares = buildElementwise(
      b, loc, {centered}, *resultType,
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MulFOp::create(nb, l, args[0], args[0]);
      });
  Value variance =
      divideByCount(reduceKeepDims(b, loc, squares, reduced, Combine::Sum));
  if (failed(setLayerNormStatistics(node, mean, variance, epsilon)))
    return failure();
  SmallVector<Value> inputs{centered, variance, scale};
  if (bias)
    inputs.push_back(bias);
  node.setResult(
      0, buildElementwise(
             b, loc, inputs, *resultType,
             [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
               Value eps = scalarConstant(nb, l, elementType, epsilon);
               Value stddev = math::SqrtOp::create(
                   nb, l, arith::AddFOp::create(nb, l, args[1], eps));
               Value y = arith::MulFOp::create(
                   nb, l, arith::DivFOp::create(nb, l, args[0], stddev),
                   args[2]);
               return args.size() > 3 ? arith::AddFOp::create(nb, l, y, args[3])
                                      : y;
             }));
  return success();
}

/// Whether `candidate` replaces the running extreme `current`: greater (or
/// less) than it, or with select_last_index, not less (or not greater).
Value replacesExtreme(OpBuilder &b, Location loc, Value candidate,
                      Value current, bool max, bool last) {
  if (isa<FloatType>(candidate.getType()))
    return arith::CmpFOp::create(
        b, loc,
        max ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
            : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT),
        candidate, current);
  return arith::CmpIOp::create(
      b, loc,
      max ? (last ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sgt)
          : (last ? arith::CmpIPredicate::sle : arith::CmpIPredicate::slt),
      candidate, current);
}

/// ArgMax/ArgMin(data): the index of the first (or, with select_last_index,
/// the last) extreme value along `axis`, as int64.
LogicalResult importArgExtreme(NodeImporter &node, bool max) {
  Value input = node.operand(0);
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = normalizeAxis(node, node.intAttr("axis", 0), rank);
  if (failed(axis))
    return failure();
  bool keepDims = node.intAttr("keepdims", 1);
  bool last = node.intAttr("select_last_index", 0);
  SmallVector<bool> reduced(rank, false);
  reduced[*axis] = true;
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis)
        shape.push_back(type.getDimSize(d));
      else if (keepDims)
        shape.push_back(1);
    return shape;
  });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  MLIRContext *context = b.getContext();
  Type elementType = type.getElementType();
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    bool isAxis = d == *axis;
    shape.push_back(isAxis ? 1 : type.getDimSize(d));
    if (!isAxis && type.isDynamicDim(d))
      sizes.push_back(dimSize(b, loc, input, d));
    outExprs.push_back(isAxis ? getAffineConstantExpr(0, context)
                              : getAffineDimExpr(d, context));
    iterators.push_back(isAxis ? utils::IteratorType::reduction
                               : utils::IteratorType::parallel);
  }
  // The running extreme starts at the first element's value: use the
  // opposite infinity (or integer bound) and position 0.
  Value values = filledTensor(b, loc, shape, sizes,
                              extremeIdentity(b, loc, elementType, max));
  Value zero = scalarConstant(b, loc, b.getI64Type(), 0);
  Value indices = filledTensor(b, loc, shape, sizes, zero);
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, context),
                              AffineMap::get(rank, 0, outExprs, context),
                              AffineMap::get(rank, 0, outExprs, context)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{values.getType(), indices.getType()},
      ValueRange{input}, ValueRange{values, indices}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value position = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, *axis));
        Value better = replacesExtreme(nb, l, args[0], args[1], max, last);
        // The first element always replaces the identity.
        Value first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                            position, zero);
        better = arith::OrIOp::create(nb, l, better, first);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, better, args[0], args[1]),
                       arith::SelectOp::create(nb, l, better, position,
                                               args[2])});
      });
  node.setResult(0, toResultType(b, loc, generic.getResult(1), *resultType,
                                 reduced));
  return success();
}
} // namespace

void specula::onnx_import::registerReductionHandlers(
    OpHandlerRegistry &registry) {
  registry.add("ReduceMean", 1, 13, [](NodeImporter &node) {
    return importReduce(node, Combine::Sum, /*mean=*/true,
                        /*axesAsInput=*/false);
  });
  registry.add("ReduceMean", 18, 18, [](NodeImporter &node) {
    return importReduce(node, Combine::Sum, /*mean=*/true,
                        /*axesAsInput=*/true);
  });
  registry.add("ReduceSum", 1, 11, [](NodeImporter &node) {
    return importReduce(node, Combine::Sum, /*mean=*/false,
                        /*axesAsInput=*/false);
  });
  registry.add("ReduceSum", 13, 13, [](NodeImporter &node) {
    return importReduce(node, Combine::Sum, /*mean=*/false,
                        /*axesAsInput=*/true);
  });
  registry.add("ReduceMax", 1, 13, [](NodeImporter &node) {
    return importReduce(node, Combine::Max, /*mean=*/false,
                        /*axesAsInput=*/false);
  });
  registry.add("Softmax", 13, 13, importSoftmax);
  registry.add("ArgMax", 11, 13,
               [](NodeImporter &node) { return importArgExtreme(node, true); });
  registry.add("ArgMin", 11, 13,
               [](NodeImporter &node) { return importArgExtreme(node, false); });
  registry.add("LayerNormalization", 17, 17, importLayerNormalization);
}
