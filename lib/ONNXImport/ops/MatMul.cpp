//===- MatMul.cpp - ONNX MatMul and Gemm ----------------------------------===//
//
// Both become a linalg.generic with one reduction dimension, accumulated in
// order k = 0, 1, ...: a row's result never depends on how many rows are
// computed together, which keeps speculative verification batch-invariant.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

using namespace mlir;
using namespace specula::onnx_import;

namespace {
/// Where a matrix operand's row and column loops are: (m, k) or (k, n) for a
/// plain operand, swapped when it is transposed.
struct MatrixOperand {
  Value value;
  int64_t rowLoop, colLoop;
};

/// sum_k A[..., m, k] * B[..., k, n] over `resultType` (rank r: batch...,
/// m, n; loop r is k). Batch dimensions broadcast numpy-style.
Value buildContraction(OpBuilder &b, Location loc, MatrixOperand lhs,
                       MatrixOperand rhs, RankedTensorType resultType,
                       SmallVectorImpl<Value> &dynamicSizes) {
  MLIRContext *context = b.getContext();
  int64_t rank = resultType.getRank();
  auto operandMap = [&](const MatrixOperand &operand) {
    auto type = cast<RankedTensorType>(operand.value.getType());
    int64_t batch = type.getRank() - 2;
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < batch; ++d) {
      int64_t resultDim = d + (rank - 2) - batch;
      bool broadcast = type.getDimSize(d) == 1 &&
                       resultType.getDimSize(resultDim) != 1;
      exprs.push_back(broadcast ? getAffineConstantExpr(0, context)
                                : getAffineDimExpr(resultDim, context));
    }
    exprs.push_back(getAffineDimExpr(operand.rowLoop, context));
    exprs.push_back(getAffineDimExpr(operand.colLoop, context));
    return AffineMap::get(rank + 1, 0, exprs, context);
  };
  SmallVector<AffineMap> maps{operandMap(lhs), operandMap(rhs)};
  SmallVector<AffineExpr> resultExprs;
  for (int64_t d = 0; d < rank; ++d)
    resultExprs.push_back(getAffineDimExpr(d, context));
  maps.push_back(AffineMap::get(rank + 1, 0, resultExprs, context));

  Type elementType = resultType.getElementType();
  Value filled = filledTensor(b, loc, resultType.getShape(), dynamicSizes,
                              scalarConstant(b, loc, elementType, 0));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{lhs.value, rhs.value},
      ValueRange{filled}, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        Value product, sum;
        if (isa<FloatType>(elementType)) {
          product = arith::MulFOp::create(nested, l, args[0], args[1]);
          sum = arith::AddFOp::create(nested, l, args[2], product);
        } else {
          product = arith::MulIOp::create(nested, l, args[0], args[1]);
          sum = arith::AddIOp::create(nested, l, args[2], product);
        }
        linalg::YieldOp::create(nested, l, sum);
      });
  return generic.getResult(0);
}

/// The dynamic sizes of a contraction result: batch dimensions from either
/// operand, m from the lhs, n from the rhs.
SmallVector<Value> contractionSizes(OpBuilder &b, Location loc,
                                    RankedTensorType resultType,
                                    const MatrixOperand &lhs, int64_t lhsRowDim,
                                    const MatrixOperand &rhs,
                                    int64_t rhsColDim) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d))
      continue;
    if (d == rank - 2) {
      sizes.push_back(dimSize(b, loc, lhs.value, lhsRowDim));
      continue;
    }
    if (d == rank - 1) {
      sizes.push_back(dimSize(b, loc, rhs.value, rhsColDim));
      continue;
    }
    Value size;
    for (Value operand : {lhs.value, rhs.value}) {
      auto type = cast<RankedTensorType>(operand.getType());
      int64_t od = d - (rank - type.getRank());
      if (od >= 0 && type.getDimSize(od) != 1) {
        size = dimSize(b, loc, operand, od);
        break;
      }
    }
    sizes.push_back(size ? size : arith::ConstantIndexOp::create(b, loc, 1));
  }
  return sizes;
}

/// Checks that the contracted dims of the operands agree where both are
/// static (ONNX's Gemm inference does not).
LogicalResult checkContractedDims(NodeImporter &node, RankedTensorType a,
                                  int64_t aDim, RankedTensorType b,
                                  int64_t bDim) {
  int64_t k = a.getDimSize(aDim), other = b.getDimSize(bDim);
  if (ShapedType::isDynamic(k) || ShapedType::isDynamic(other) || k == other)
    return success();
  return node.emitError() << "the contracted dimensions differ: " << k
                          << " (dimension " << aDim << " of " << a << ") and "
                          << other << " (dimension " << bDim << " of " << b
                          << ")";
}

LogicalResult importMatMul(NodeImporter &node) {
  Value a = node.operand(0), b = node.operand(1);
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  if (aType.getRank() < 2 || bType.getRank() < 2)
    return node.emitError() << "1-D operands are not supported yet (got "
                            << aType << " and " << bType << ")";
  FailureOr<RankedTensorType> resultType = node.resultType(0, [&] {
    return dynamicShape(std::max(aType.getRank(), bType.getRank()));
  });
  if (failed(resultType))
    return failure();
  if (failed(checkContractedDims(node, aType, aType.getRank() - 1, bType,
                                 bType.getRank() - 2)))
    return failure();
  int64_t rank = resultType->getRank();
  // Loops: batch..., m = rank - 2, n = rank - 1, k = rank.
  MatrixOperand lhs{a, rank - 2, rank}, rhs{b, rank, rank - 1};
  OpBuilder &builder = node.builder();
  SmallVector<Value> sizes =
      contractionSizes(builder, node.loc(), *resultType, lhs,
                       aType.getRank() - 2, rhs, bType.getRank() - 1);
  node.setResult(0, buildContraction(builder, node.loc(), lhs, rhs,
                                     *resultType, sizes));
  return success();
}

/// Y = alpha * A' B' + beta * C, A' and B' optionally transposed.
LogicalResult importGemm(NodeImporter &node) {
  FailureOr<RankedTensorType> resultType = node.resultType(0);
  if (failed(resultType))
    return failure();
  Value a = node.operand(0), b = node.operand(1), c = node.operand(2);
  bool transA = node.intAttr("transA", 0), transB = node.intAttr("transB", 0);
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  if (aType.getRank() != 2 || bType.getRank() != 2 || resultType->getRank() != 2)
    return node.emitError() << "Gemm takes matrices (got " << aType << " and "
                            << bType << ")";
  if (failed(checkContractedDims(node, aType, transA ? 0 : 1, bType,
                                 transB ? 1 : 0)) ||
      (c && failed(checkBroadcastsTo(node, c, "C", resultType->getShape()))))
    return failure();
  float alpha = node.floatAttr("alpha", 1.0f), beta = node.floatAttr("beta", 1.0f);
  // Loops: m = 0, n = 1, k = 2.
  MatrixOperand lhs{a, transA ? 2 : 0, transA ? 0 : 2};
  MatrixOperand rhs{b, transB ? 1 : 2, transB ? 2 : 1};
  OpBuilder &builder = node.builder();
  Location loc = node.loc();
  SmallVector<Value> sizes = contractionSizes(
      builder, loc, *resultType, lhs, transA ? 1 : 0, rhs, transB ? 0 : 1);
  Value product = buildContraction(builder, loc, lhs, rhs, *resultType, sizes);
  if (alpha == 1.0f && (!c || beta == 0.0f)) {
    node.setResult(0, product);
    return success();
  }
  SmallVector<Value> inputs{product};
  if (c && beta != 0.0f)
    inputs.push_back(c);
  node.setResult(
      0, buildElementwise(
             builder, loc, inputs, *resultType,
             [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
               Type type = args[0].getType();
               Value y = args[0];
               if (alpha != 1.0f)
                 y = arith::MulFOp::create(nb, l, y,
                                           scalarConstant(nb, l, type, alpha));
               if (args.size() == 1)
                 return y;
               Value scaled = args[1];
               if (beta != 1.0f)
                 scaled = arith::MulFOp::create(
                     nb, l, scaled, scalarConstant(nb, l, type, beta));
               return arith::AddFOp::create(nb, l, y, scaled);
             }));
  return success();
}
} // namespace

void specula::onnx_import::registerMatMulHandlers(OpHandlerRegistry &registry) {
  registry.add("MatMul", 1, 13, importMatMul);
  registry.add("Gemm", 7, 13, importGemm);
}
