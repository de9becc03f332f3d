//===- Generate.cpp - ONNX operators that create tensors from shapes ------===//
//
// Range, ConstantOfShape and Expand: the building blocks of causal masks and
// of grouped-query attention's key/value broadcast in decoder exports.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

using namespace mlir;
using namespace specula::onnx_import;

namespace {
/// Range(start, limit, delta): start + i * delta for i in
/// [0, max(ceil((limit - start) / delta), 0)).
LogicalResult importRange(NodeImporter &node) {
  FailureOr<RankedTensorType> resultType =
      node.resultType(0, [] { return dynamicShape(1); });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = resultType->getElementType();
  auto scalar = [&](unsigned i) {
    Value tensor = node.operand(i);
    SmallVector<Value> position(
        cast<RankedTensorType>(tensor.getType()).getRank(),
        arith::ConstantIndexOp::create(b, loc, 0));
    return tensor::ExtractOp::create(b, loc, tensor, position).getResult();
  };
  Value start = scalar(0), limit = scalar(1), delta = scalar(2);
  Value count;
  if (isa<FloatType>(elementType)) {
    Value steps = math::CeilOp::create(
        b, loc,
        arith::DivFOp::create(b, loc,
                              arith::SubFOp::create(b, loc, limit, start),
                              delta));
    count = arith::FPToSIOp::create(b, loc, b.getI64Type(), steps);
  } else {
    count = castScalar(
        b, loc,
        arith::CeilDivSIOp::create(b, loc,
                                   arith::SubIOp::create(b, loc, limit, start),
                                   delta),
        b.getI64Type());
  }
  count = arith::MaxSIOp::create(b, loc, count,
                                 scalarConstant(b, loc, b.getI64Type(), 0));
  SmallVector<Value> sizes;
  if (resultType->isDynamicDim(0))
    sizes.push_back(
        arith::IndexCastOp::create(b, loc, b.getIndexType(), count));
  Value init = tensor::EmptyOp::create(b, loc, resultType->getShape(),
                                       elementType, sizes);
  MLIRContext *context = b.getContext();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{*resultType}, ValueRange{}, ValueRange{init},
      SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(1, context)},
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value i = arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                             linalg::IndexOp::create(nb, l, 0));
        Value step = castScalar(nb, l, i, elementType);
        Value value =
            isa<FloatType>(elementType)
                ? Value(arith::AddFOp::create(
                      nb, l, start, arith::MulFOp::create(nb, l, step, delta)))
                : Value(arith::AddIOp::create(
                      nb, l, start, arith::MulIOp::create(nb, l, step, delta)));
        linalg::YieldOp::create(nb, l, value);
      });
  node.setResult(0, generic.getResult(0));
  return success();
}

/// ConstantOfShape(shape): a tensor of that shape filled with `value`
/// (float 0 by default).
LogicalResult importConstantOfShape(NodeImporter &node) {
  if (failed(checkOperandRank(node, 0, "shape", 1, 1)))
    return failure();
  int64_t rank = cast<RankedTensorType>(node.operand(0).getType()).getDimSize(0);
  if (ShapedType::isDynamic(rank))
    return node.emitError() << "the shape operand must have a static length";
  FailureOr<RankedTensorType> resultType =
      node.resultType(0, [&] { return dynamicShape(rank); });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = resultType->getElementType();
  Value fill = scalarConstant(b, loc, elementType, 0);
  if (const onnx::AttributeProto *attr = node.attribute("value")) {
    std::string error;
    FailureOr<ElementsAttr> value = convertTensor(
        attr->t(), RankedTensorType::get({1}, elementType), 1, error);
    if (failed(value))
      return node.emitError() << "attribute 'value' " << error;
    fill = arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(*cast<DenseElementsAttr>(*value)
                                     .getValues<Attribute>()
                                     .begin()));
  }
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < resultType->getRank(); ++d)
    if (resultType->isDynamicDim(d))
      sizes.push_back(extractIndex(b, loc, node.operand(0), d));
  node.setResult(0, filledTensor(b, loc, resultType->getShape(), sizes, fill));
  return success();
}

/// Expand(input, shape): numpy broadcast of input and shape.
LogicalResult importExpand(NodeImporter &node) {
  if (failed(checkOperandRank(node, 1, "shape", 1, 1)))
    return failure();
  Value input = node.operand(0), shape = node.operand(1);
  auto inputType = cast<RankedTensorType>(input.getType());
  auto shapeType = cast<RankedTensorType>(shape.getType());
  if (shapeType.isDynamicDim(0))
    return node.emitError() << "the shape operand must have a static length";
  int64_t shapeLength = shapeType.getDimSize(0);
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    return dynamicShape(std::max(inputType.getRank(), shapeLength));
  });
  if (failed(resultType))
    return failure();
  int64_t rank = resultType->getRank();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType->isDynamicDim(d))
      continue;
    // The result size is the shape's unless it is 1, then the input's.
    int64_t sd = d - (rank - shapeLength);
    int64_t id = d - (rank - inputType.getRank());
    Value fromInput = id >= 0 ? dimSize(b, loc, input, id) : one;
    if (sd < 0) {
      sizes.push_back(fromInput);
      continue;
    }
    Value fromShape = extractIndex(b, loc, shape, sd);
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        fromShape, one);
    sizes.push_back(arith::SelectOp::create(b, loc, isOne, fromInput, fromShape));
  }
  node.setResult(0, buildElementwise(
                        b, loc, {input}, *resultType,
                        [](OpBuilder &, Location, ValueRange args) {
                          return args[0];
                        },
                        ValueRange(sizes)));
  return success();
}
} // namespace

void specula::onnx_import::registerGenerateHandlers(
    OpHandlerRegistry &registry) {
  registry.add("Range", 11, 11, importRange);
  registry.add("ConstantOfShape", 9, 9, importConstantOfShape);
  registry.add("Expand", 8, 13, importExpand);
}
