//===- Common.cpp - building blocks shared by the operator handlers -------===//

#include "lib/ONNXImport/ops/Common.h"

#include <limits>

using namespace mlir;
using namespace specula::onnx_import;

Value specula::onnx_import::dimSize(OpBuilder &b, Location loc, Value tensor,
                                    int64_t dim) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(dim))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
  return tensor::DimOp::create(b, loc, tensor, dim);
}

Value specula::onnx_import::filledTensor(OpBuilder &b, Location loc,
                                         ArrayRef<int64_t> shape,
                                         ValueRange sizes, Value value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, value.getType(), sizes);
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

Value specula::onnx_import::emptyTensorLike(OpBuilder &b, Location loc,
                                            RankedTensorType type,
                                            ValueRange sources) {
  SmallVector<Value> dynamicSizes;
  int64_t rank = type.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d))
      continue;
    Value size;
    for (Value source : sources) {
      auto sourceType = cast<RankedTensorType>(source.getType());
      int64_t sd = d - (rank - sourceType.getRank());
      if (sd < 0 || sourceType.getDimSize(sd) == 1)
        continue;
      size = dimSize(b, loc, source, sd);
      break;
    }
    // Every source broadcasts here: the dimension is 1.
    dynamicSizes.push_back(size ? size
                                : arith::ConstantIndexOp::create(b, loc, 1));
  }
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType(), dynamicSizes);
}

Value specula::onnx_import::buildElementwise(OpBuilder &b, Location loc,
                                             ValueRange inputs,
                                             RankedTensorType resultType,
                                             ScalarBody body,
                                             std::optional<ValueRange> dynamicSizes) {
  MLIRContext *context = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps;
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t resultDim = d + rank - type.getRank();
      bool broadcast = type.getDimSize(d) == 1 &&
                       resultType.getDimSize(resultDim) != 1;
      exprs.push_back(broadcast ? getAffineConstantExpr(0, context)
                                : getAffineDimExpr(resultDim, context));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, context));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, context));
  Value init =
      dynamicSizes ? Value(tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                                   resultType.getElementType(),
                                                   *dynamicSizes))
                   : emptyTensorLike(b, loc, resultType, inputs);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value specula::onnx_import::scalarConstant(OpBuilder &b, Location loc,
                                           Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value specula::onnx_import::castScalar(OpBuilder &b, Location loc, Value value,
                                       Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, zero);
  }
  if (fromFloat && toFloat)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? Value(arith::ExtFOp::create(b, loc, to, value))
               : Value(arith::TruncFOp::create(b, loc, to, value));
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, value);
  // Booleans are 0/1, never -1: zero-extend them.
  if (toFloat)
    return from.isInteger(1) ? Value(arith::UIToFPOp::create(b, loc, to, value))
                             : Value(arith::SIToFPOp::create(b, loc, to, value));
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return from.isInteger(1) ? Value(arith::ExtUIOp::create(b, loc, to, value))
                             : Value(arith::ExtSIOp::create(b, loc, to, value));
  return arith::TruncIOp::create(b, loc, to, value);
}

FailureOr<int64_t> specula::onnx_import::normalizeAxis(NodeImporter &node,
                                                       int64_t axis,
                                                       int64_t rank) {
  if (axis < -rank || axis >= rank)
    return node.emitError() << "axis " << axis << " is out of range for rank "
                            << rank;
  return axis < 0 ? axis + rank : axis;
}

Value specula::onnx_import::extractIndex(OpBuilder &b, Location loc,
                                         Value tensor, int64_t i) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<Value> position;
  if (type.getRank() == 1)
    position.push_back(arith::ConstantIndexOp::create(b, loc, i));
  Value element = tensor::ExtractOp::create(b, loc, tensor, position);
  if (element.getType().isIndex())
    return element;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
}

SmallVector<int64_t> specula::onnx_import::broadcastShape(ValueRange inputs) {
  int64_t rank = 0;
  for (Value input : inputs)
    rank = std::max(rank, cast<RankedTensorType>(input.getType()).getRank());
  SmallVector<int64_t> shape(rank, 1);
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t &size = shape[d + rank - type.getRank()];
      int64_t other = type.getDimSize(d);
      // A dynamic size beside a static one other than 1 must equal it.
      if (other == 1 || (ShapedType::isDynamic(other) && size != 1))
        continue;
      if (size == 1 || ShapedType::isDynamic(size) || size == other)
        size = other;
      else
        size = ShapedType::kDynamic;
    }
  }
  return shape;
}

LogicalResult specula::onnx_import::checkBroadcastsTo(NodeImporter &node,
                                                     Value input,
                                                     StringRef name,
                                                     ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t offset = static_cast<int64_t>(shape.size()) - type.getRank();
  bool ok = offset >= 0;
  for (int64_t d = 0; ok && d < type.getRank(); ++d) {
    int64_t size = type.getDimSize(d), target = shape[d + offset];
    ok = size == 1 || ShapedType::isDynamic(size) ||
         ShapedType::isDynamic(target) || size == target;
  }
  if (ok)
    return success();
  auto shapeText = [](ArrayRef<int64_t> dims) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "[";
    llvm::interleaveComma(dims, os, [&](int64_t dim) {
      if (ShapedType::isDynamic(dim))
        os << "?";
      else
        os << dim;
    });
    os << "]";
    return text;
  };
  return node.emitError() << name << " has shape " << shapeText(type.getShape())
                          << ", which does not broadcast to "
                          << shapeText(shape);
}

LogicalResult specula::onnx_import::checkOperandRank(NodeImporter &node,
                                                    unsigned i, StringRef name,
                                                    int64_t minRank,
                                                    int64_t maxRank) {
  Value operand = node.operand(i);
  if (!operand)
    return success();
  int64_t rank = cast<RankedTensorType>(operand.getType()).getRank();
  if (rank >= minRank && rank <= maxRank)
    return success();
  InFlightDiagnostic diag = node.emitError() << name << " has rank " << rank
                                             << "; expected ";
  if (minRank == maxRank)
    diag << minRank;
  else if (maxRank == std::numeric_limits<int64_t>::max())
    diag << "at least " << minRank;
  else
    diag << minRank << " to " << maxRank;
  return diag;
}

SmallVector<int64_t> specula::onnx_import::dynamicShape(int64_t rank) {
  return SmallVector<int64_t>(rank, ShapedType::kDynamic);
}
