//===- Shape.cpp - ONNX constants, shape computation and data movement ----===//
//
// Constant, Shape, Reshape, Unsqueeze, Squeeze, Transpose, Concat, Gather.
// Shapes computed in the graph (Shape -> Gather -> Concat -> Reshape) stay
// runtime tensors of i64; reshapes go through tensor.reshape with a shape
// built from index values, which canonicalization folds when it is static.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

#include "llvm/ADT/SmallVectorExtras.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;
using namespace specula::onnx_import;

namespace {
Value toIndex(OpBuilder &b, Location loc, Value value) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
}

/// tensor.reshape of `source` to `resultType` with the given sizes.
Value reshapeTo(OpBuilder &b, Location loc, Value source,
                RankedTensorType resultType, ArrayRef<Value> sizes) {
  auto shape = tensor::FromElementsOp::create(
      b, loc,
      RankedTensorType::get({static_cast<int64_t>(sizes.size())},
                            b.getIndexType()),
      sizes);
  return tensor::ReshapeOp::create(b, loc, resultType, source, shape);
}

LogicalResult importConstant(NodeImporter &node) {
  FailureOr<RankedTensorType> resultType = node.resultType(0);
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Type elementType = resultType->getElementType();
  Attribute value;
  if (const onnx::AttributeProto *attr = node.attribute("value")) {
    std::string error;
    FailureOr<ElementsAttr> elements =
        convertTensor(attr->t(), *resultType, /*maxInlineElements=*/1 << 20,
                      error);
    if (failed(elements))
      return node.emitError() << "attribute 'value' " << error;
    value = *elements;
  } else if (const onnx::AttributeProto *attr = node.attribute("value_float")) {
    value = DenseElementsAttr::get(*resultType, b.getFloatAttr(elementType,
                                                               attr->f()));
  } else if (const onnx::AttributeProto *attr =
                 node.attribute("value_floats")) {
    SmallVector<float> floats(attr->floats().begin(), attr->floats().end());
    value = DenseElementsAttr::get(*resultType, ArrayRef<float>(floats));
  } else if (const onnx::AttributeProto *attr = node.attribute("value_int")) {
    value = DenseElementsAttr::get(*resultType,
                                   b.getIntegerAttr(elementType, attr->i()));
  } else if (std::optional<SmallVector<int64_t>> ints =
                 node.intsAttr("value_ints")) {
    value = DenseElementsAttr::get(*resultType, ArrayRef<int64_t>(*ints));
  } else {
    return node.emitError() << "needs one of the attributes value, "
                               "value_float(s) or value_int(s) (sparse and "
                               "string constants are not supported)";
  }
  node.setResult(0, arith::ConstantOp::create(b, node.loc(),
                                              cast<TypedAttr>(value)));
  return success();
}

/// Shape(data)[start:end] as a 1-D i64 tensor.
LogicalResult importShape(NodeImporter &node) {
  Value data = node.operand(0);
  auto type = cast<RankedTensorType>(data.getType());
  int64_t rank = type.getRank();
  auto clamp = [&](int64_t v) {
    v = v < 0 ? v + rank : v;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clamp(node.intAttr("start", 0));
  int64_t end = clamp(node.intAttr("end", rank));
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  SmallVector<Value> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                              dimSize(b, loc, data, d)));
  auto resultType = RankedTensorType::get(
      {std::max<int64_t>(end - start, 0)}, b.getI64Type());
  node.setResult(0, tensor::FromElementsOp::create(b, loc, resultType, dims));
  return success();
}

/// The element count of a static shape, if it fits in 63 bits.
std::optional<int64_t> staticElementCount(RankedTensorType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  int64_t count = 1;
  for (int64_t size : type.getShape())
    if (__builtin_mul_overflow(count, size, &count))
      return std::nullopt;
  return count;
}

/// Reshape(data, shape): 0 copies the input dimension (unless allowzero),
/// -1 takes what is left of the element count.
LogicalResult importReshape(NodeImporter &node) {
  Value data = node.operand(0), shape = node.operand(1);
  auto shapeType = cast<RankedTensorType>(shape.getType());
  if (shapeType.getRank() != 1 || shapeType.isDynamicDim(0))
    return node.emitError() << "the shape operand must be a 1-D tensor of "
                               "static length, got "
                            << shapeType;
  FailureOr<RankedTensorType> resultType = node.resultType(
      0, [&] { return dynamicShape(shapeType.getDimSize(0)); });
  if (failed(resultType))
    return failure();
  bool allowZero = node.intAttr("allowzero", 0);
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto dataType = cast<RankedTensorType>(data.getType());
  if (std::optional<int64_t> from = staticElementCount(dataType)) {
    std::optional<int64_t> to = staticElementCount(*resultType);
    if (resultType->hasStaticShape() && to != from)
      return node.emitError()
             << "reshapes " << *from << " elements into " << *resultType
             << (to ? " (" + std::to_string(*to) + " elements)"
                    : std::string(" (more than 2^63 elements)"));
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value minusOne = arith::ConstantIndexOp::create(b, loc, -1);
  Value count = one;
  for (int64_t d = 0; d < dataType.getRank(); ++d)
    count = arith::MulIOp::create(b, loc, count, dimSize(b, loc, data, d));

  int64_t rank = shapeType.getDimSize(0);
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < rank; ++i) {
    Value position = arith::ConstantIndexOp::create(b, loc, i);
    Value size = toIndex(
        b, loc, tensor::ExtractOp::create(b, loc, shape, ValueRange{position}));
    if (!allowZero && i < dataType.getRank()) {
      Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           size, zero);
      size = arith::SelectOp::create(b, loc, isZero, dimSize(b, loc, data, i),
                                     size);
    }
    sizes.push_back(size);
  }
  // At most one -1: it becomes count / (product of the other sizes).
  Value known = one;
  for (Value size : sizes) {
    Value isInferred = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             size, minusOne);
    known = arith::MulIOp::create(
        b, loc, known, arith::SelectOp::create(b, loc, isInferred, one, size));
  }
  Value inferred = arith::DivUIOp::create(b, loc, count, known);
  for (Value &size : sizes) {
    Value isInferred = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             size, minusOne);
    size = arith::SelectOp::create(b, loc, isInferred, inferred, size);
  }
  node.setResult(0, reshapeTo(b, loc, data, *resultType, sizes));
  return success();
}

/// Unsqueeze(data, axes): insert size-1 dimensions.
LogicalResult importUnsqueeze(NodeImporter &node) {
  FailureOr<SmallVector<int64_t>> axes = node.constantInts(1, "axes");
  if (failed(axes))
    return failure();
  Value data = node.operand(0);
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    return dynamicShape(cast<RankedTensorType>(data.getType()).getRank() +
                        axes->size());
  });
  if (failed(resultType))
    return failure();
  int64_t rank = resultType->getRank();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    FailureOr<int64_t> normalized = normalizeAxis(node, axis, rank);
    if (failed(normalized))
      return failure();
    inserted[*normalized] = true;
  }
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  SmallVector<Value> sizes;
  int64_t source = 0;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(inserted[d] ? arith::ConstantIndexOp::create(b, loc, 1)
                                : dimSize(b, loc, data, source++));
  node.setResult(0, reshapeTo(b, loc, data, *resultType, sizes));
  return success();
}

/// Squeeze(data, axes?): drop the listed (or all static) size-1 dimensions.
LogicalResult importSqueeze(NodeImporter &node) {
  Value data = node.operand(0);
  auto dataType = cast<RankedTensorType>(data.getType());
  SmallVector<bool> dropped(dataType.getRank(), false);
  if (node.operand(1)) {
    FailureOr<SmallVector<int64_t>> axes = node.constantInts(1, "axes");
    if (failed(axes))
      return failure();
    for (int64_t axis : *axes) {
      FailureOr<int64_t> normalized =
          normalizeAxis(node, axis, dataType.getRank());
      if (failed(normalized))
        return failure();
      dropped[*normalized] = true;
    }
  } else {
    for (int64_t d = 0; d < dataType.getRank(); ++d)
      dropped[d] = dataType.getDimSize(d) == 1;
  }
  // Without axes, the dimensions known to be 1 here must be the ones
  // libonnx's inference dropped: the fallback's rank is checked against it.
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < dataType.getRank(); ++d)
      if (!dropped[d])
        shape.push_back(dataType.getDimSize(d));
    return shape;
  });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < dataType.getRank(); ++d)
    if (!dropped[d])
      sizes.push_back(dimSize(b, loc, data, d));
  node.setResult(0, reshapeTo(b, loc, data, *resultType, sizes));
  return success();
}

/// Flatten(data): [prod(dims[:axis]), prod(dims[axis:])].
LogicalResult importFlatten(NodeImporter &node) {
  Value data = node.operand(0);
  auto type = cast<RankedTensorType>(data.getType());
  int64_t rank = type.getRank();
  int64_t axis = node.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return node.emitError() << "axis " << node.intAttr("axis", 1)
                            << " is out of range for rank " << rank;
  FailureOr<RankedTensorType> resultType =
      node.resultType(0, [] { return dynamicShape(2); });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value outer = arith::ConstantIndexOp::create(b, loc, 1);
  Value inner = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = 0; d < rank; ++d) {
    Value &product = d < axis ? outer : inner;
    product = arith::MulIOp::create(b, loc, product, dimSize(b, loc, data, d));
  }
  node.setResult(0, reshapeTo(b, loc, data, *resultType, {outer, inner}));
  return success();
}

LogicalResult importTranspose(NodeImporter &node) {
  Value data = node.operand(0);
  auto dataType = cast<RankedTensorType>(data.getType());
  int64_t rank = dataType.getRank();
  SmallVector<int64_t> perm;
  if (std::optional<SmallVector<int64_t>> attr = node.intsAttr("perm"))
    perm = *attr;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank ||
      !isPermutationVector(perm))
    return node.emitError() << "perm must be a permutation of 0.." << rank - 1;
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    return applyPermutation(dataType.getShape(), perm);
  });
  if (failed(resultType))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  // linalg.transpose wants the sizes on both sides equally static: a size
  // the result states and the input does not is cast into the input.
  SmallVector<int64_t> dataShape(dataType.getShape());
  for (int64_t d = 0; d < rank; ++d)
    dataShape[perm[d]] = resultType->getDimSize(d);
  if (dataShape != dataType.getShape())
    data = tensor::CastOp::create(b, loc, dataType.clone(dataShape), data);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    if (resultType->isDynamicDim(d))
      sizes.push_back(dimSize(b, loc, data, perm[d]));
  Value init = tensor::EmptyOp::create(b, loc, resultType->getShape(),
                                       resultType->getElementType(), sizes);
  node.setResult(
      0, linalg::TransposeOp::create(b, loc, data, init, perm).getResult()[0]);
  return success();
}

/// What Concat's inputs tell of its result: the first input's rank, a size
/// any input states off the axis, and the sum along it when every input
/// states its size there.
SmallVector<int64_t> concatShape(ValueRange inputs, int64_t axis) {
  auto firstType = dyn_cast<RankedTensorType>(inputs.front().getType());
  int64_t rank = firstType ? firstType.getRank() : 0;
  SmallVector<int64_t> shape = dynamicShape(rank);
  if (axis < -rank || axis >= rank)
    return shape;
  axis = axis < 0 ? axis + rank : axis;
  int64_t sum = 0;
  for (Value input : inputs) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type || type.getRank() != rank)
      return dynamicShape(rank);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && !type.isDynamicDim(d))
        shape[d] = type.getDimSize(d);
    if (type.isDynamicDim(axis) || ShapedType::isDynamic(sum) ||
        __builtin_add_overflow(sum, type.getDimSize(axis), &sum))
      sum = ShapedType::kDynamic;
  }
  shape[axis] = sum;
  return shape;
}

/// Concat's inputs must agree on every dimension but `axis`, also an input
/// empty along it, which the import drops (found by onnx-import-fuzzer: a
/// [2147483647, 0] input beside a [3, 2] one).
LogicalResult checkConcatSizes(NodeImporter &node, ArrayRef<Value> inputs,
                               int64_t axis) {
  auto first = cast<RankedTensorType>(inputs.front().getType());
  for (int64_t d = 0; d < first.getRank(); ++d) {
    if (d == axis)
      continue;
    std::optional<std::pair<size_t, int64_t>> known;
    for (auto [i, input] : llvm::enumerate(inputs)) {
      int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(d);
      if (ShapedType::isDynamic(size))
        continue;
      if (known && known->second != size)
        return node.emitError()
               << "input " << i << " has size " << size << " in dimension "
               << d << " where input " << known->first << " has "
               << known->second << "; Concat's inputs differ only along "
               << "the axis";
      known = {i, size};
    }
  }
  return success();
}

LogicalResult importConcat(NodeImporter &node) {
  // tensor.concat reads its inputs' types: none may be missing, or of
  // another rank (found by onnx-import-fuzzer).
  if (node.numOperands() == 0)
    return node.emitError() << "Concat needs at least one input";
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.numOperands(); ++i) {
    inputs.push_back(node.operand(i));
    if (!inputs.back())
      return node.emitError() << "input " << i << " is missing";
  }
  int64_t axisAttr = node.intAttr("axis", 0);
  FailureOr<RankedTensorType> resultType =
      node.resultType(0, [&] { return concatShape(inputs, axisAttr); });
  if (failed(resultType))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(node, axisAttr, resultType->getRank());
  if (failed(axis))
    return failure();
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type || type.getRank() != resultType->getRank())
      return node.emitError()
             << "input " << i << " is " << input.getType()
             << "; Concat's inputs have the output's rank "
             << resultType->getRank();
  }
  if (failed(checkConcatSizes(node, inputs, *axis)))
    return failure();
  OpBuilder &b = node.builder();
  // Joining shape pieces (elements or constants): one from_elements, whose
  // extracts canonicalization folds.
  if (resultType->getRank() == 1 && resultType->hasStaticShape()) {
    SmallVector<Value> elements;
    for (Value input : inputs) {
      if (auto fromElements = input.getDefiningOp<tensor::FromElementsOp>()) {
        llvm::append_range(elements, fromElements.getElements());
        continue;
      }
      DenseElementsAttr constant;
      if (!matchPattern(input, m_Constant(&constant)))
        break;
      for (Attribute element : constant.getValues<Attribute>())
        elements.push_back(
            arith::ConstantOp::create(b, node.loc(), cast<TypedAttr>(element)));
    }
    if (static_cast<int64_t>(elements.size()) == resultType->getDimSize(0)) {
      node.setResult(0, tensor::FromElementsOp::create(b, node.loc(),
                                                       *resultType, elements));
      return success();
    }
  }
  // An input empty along the axis adds nothing, and its insertion at the
  // end of the result (offset == size) is refused by memref.subview's bounds
  // check once bufferized: torch's partial rotary concatenates x[..., d:]
  // with d the head size.
  if (inputs.size() > 1) {
    SmallVector<Value> nonEmpty = llvm::filter_to_vector(inputs, [&](Value v) {
      return cast<RankedTensorType>(v.getType()).getDimSize(*axis) != 0;
    });
    if (!nonEmpty.empty())
      inputs = std::move(nonEmpty);
  }
  // tensor.concat infers its result from the inputs; cast it to the shape
  // inference's (possibly more static) type.
  Value concat = inputs.size() == 1
                     ? inputs.front()
                     : tensor::ConcatOp::create(b, node.loc(), *axis, inputs)
                           .getResult();
  if (concat.getType() != *resultType)
    concat = tensor::CastOp::create(b, node.loc(), *resultType, concat);
  node.setResult(0, concat);
  return success();
}

/// Gather(data, indices, axis): result[..., i..., ...] =
/// data[..., indices[i...], ...], negative indices counting from the end.
/// Gather of constant positions of a 1-D tensor (the shape subgraphs'
/// Gather): extracts, which canonicalization folds with Shape.
static Value gatherConstantPositions(OpBuilder &b, Location loc, Value data,
                                     DenseElementsAttr positions,
                                     RankedTensorType resultType) {
  SmallVector<Value> elements;
  for (const APInt &index : positions.getValues<APInt>()) {
    int64_t i = index.getSExtValue();
    Value position =
        i >= 0 ? Value(arith::ConstantIndexOp::create(b, loc, i))
               : Value(arith::AddIOp::create(
                     b, loc, dimSize(b, loc, data, 0),
                     arith::ConstantIndexOp::create(b, loc, i)));
    elements.push_back(
        tensor::ExtractOp::create(b, loc, data, ValueRange{position}));
  }
  return tensor::FromElementsOp::create(b, loc, resultType, elements);
}

/// Gather as a linalg.generic over the result: data's dimensions before
/// `axis`, the indices' (negative ones counted from the end), data's after.
static Value gatherGeneric(OpBuilder &b, Location loc, Value data,
                           Value indices, int64_t axis,
                           RankedTensorType resultType) {
  MLIRContext *context = b.getContext();
  int64_t rank = resultType.getRank();
  int64_t indexRank = cast<RankedTensorType>(indices.getType()).getRank();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d))
      continue;
    if (d < axis)
      sizes.push_back(dimSize(b, loc, data, d));
    else if (d < axis + indexRank)
      sizes.push_back(dimSize(b, loc, indices, d - axis));
    else
      sizes.push_back(dimSize(b, loc, data, d - indexRank + 1));
  }
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType(), sizes);
  SmallVector<AffineExpr> indexExprs;
  for (int64_t d = 0; d < indexRank; ++d)
    indexExprs.push_back(getAffineDimExpr(axis + d, context));
  SmallVector<AffineMap> maps{
      AffineMap::get(rank, 0, indexExprs, context),
      AffineMap::getMultiDimIdentityMap(rank, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value axisSize = dimSize(b, loc, data, axis);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{indices}, ValueRange{init},
      maps, iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value index = toIndex(nb, l, args[0]);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value negative = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::slt, index, zero);
        index = arith::SelectOp::create(
            nb, l, negative, arith::AddIOp::create(nb, l, index, axisSize),
            index);
        SmallVector<Value> position;
        for (int64_t d = 0; d < axis; ++d)
          position.push_back(linalg::IndexOp::create(nb, l, d));
        position.push_back(index);
        for (int64_t d = axis + indexRank; d < rank; ++d)
          position.push_back(linalg::IndexOp::create(nb, l, d));
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, data, position).getResult());
      });
  return generic.getResult(0);
}

LogicalResult importGather(NodeImporter &node) {
  if (failed(checkOperandRank(node, 0, "data", 1,
                              std::numeric_limits<int64_t>::max())))
    return failure();
  Value data = node.operand(0), indices = node.operand(1);
  auto dataType = cast<RankedTensorType>(data.getType());
  auto indicesType = cast<RankedTensorType>(indices.getType());
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    return dynamicShape(dataType.getRank() + indicesType.getRank() - 1);
  });
  if (failed(resultType))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(node, node.intAttr("axis", 0), dataType.getRank());
  if (failed(axis))
    return failure();
  if (DenseElementsAttr constant = node.constantOperand(1);
      constant && dataType.getRank() == 1 && resultType->hasStaticShape()) {
    node.setResult(0, gatherConstantPositions(node.builder(), node.loc(), data,
                                              constant, *resultType));
    return success();
  }
  node.setResult(0, gatherGeneric(node.builder(), node.loc(), data, indices,
                                  *axis, *resultType));
  return success();
}
} // namespace

void specula::onnx_import::registerShapeHandlers(OpHandlerRegistry &registry) {
  registry.add("Constant", 1, 13, importConstant);
  registry.add("Shape", 1, 15, importShape);
  registry.add("Reshape", 5, 14, importReshape);
  registry.add("Unsqueeze", 13, 13, importUnsqueeze);
  registry.add("Squeeze", 13, 13, importSqueeze);
  registry.add("Transpose", 1, 13, importTranspose);
  registry.add("Flatten", 1, 13, importFlatten);
  registry.add("Concat", 4, 13, importConcat);
  registry.add("Gather", 1, 13, importGather);
}
