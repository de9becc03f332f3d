//===- WeightContraction.cpp - contractions whose rows share an operand ---===//

#include "passes/Common/WeightContraction.h"

using namespace mlir;
using namespace specula;

std::optional<ContractionDims>
specula::matchWeightContraction(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || op.getNumParallelLoops() < 2 ||
      !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  auto outputType =
      dyn_cast<ShapedType>(op.getDpsInitOperand(0)->get().getType());
  if (!outputType || !outputType.getElementType().isF32())
    return std::nullopt;
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  unsigned depth = reductions.front();

  AffineMap output = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!output.isProjectedPermutation() || output.getNumResults() < 2)
    return std::nullopt;
  unsigned columns = output.getDimPosition(output.getNumResults() - 1);

  // `w` is the input indexed by n, `a` the other.
  OpOperand *weight = nullptr, *rowsOperand = nullptr;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation())
      return std::nullopt;
    (map.isFunctionOfDim(columns) ? weight : rowsOperand) = input;
  }
  if (!weight || !rowsOperand)
    return std::nullopt;
  AffineMap w = op.getMatchingIndexingMap(weight);
  AffineMap a = op.getMatchingIndexingMap(rowsOperand);
  if (!w.isFunctionOfDim(depth) || !a.isFunctionOfDim(depth))
    return std::nullopt;

  ContractionDims dims;
  dims.columns = columns;
  dims.depth = depth;
  dims.weight = weight->getOperandNumber();
  SmallVector<unsigned> rowLoops;
  for (unsigned i = 0; i + 1 < output.getNumResults(); ++i) {
    unsigned loop = output.getDimPosition(i);
    if (!a.isFunctionOfDim(loop))
      return std::nullopt;
    if (w.isFunctionOfDim(loop))
      dims.outer.push_back(loop);
    else
      rowLoops.push_back(loop);
  }
  if (rowLoops.empty() ||
      dims.outer.size() + rowLoops.size() + 2 != op.getNumLoops())
    return std::nullopt;
  dims.rows = rowLoops.back();
  dims.outer.append(rowLoops.begin(), rowLoops.end() - 1);
  return dims;
}
