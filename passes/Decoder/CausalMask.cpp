//===- CausalMask.cpp - the causal mask a model computes ------------------===//

#include "passes/Decoder/CausalMask.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

/// The loop dimension an operand of `generic` varies with, when it varies
/// with exactly one (broadcast along the others).
static std::optional<unsigned> variesWith(linalg::GenericOp generic,
                                          unsigned operand) {
  std::optional<unsigned> dim;
  for (AffineExpr result :
       generic.getIndexingMapsArray()[operand].getResults()) {
    if (isa<AffineConstantExpr>(result))
      continue;
    auto d = dyn_cast<AffineDimExpr>(result);
    if (!d || (dim && *dim != d.getPosition()))
      return std::nullopt;
    dim = d.getPosition();
  }
  return dim;
}

bool specula::isCausalMask(linalg::GenericOp generic) {
  auto type = dyn_cast<RankedTensorType>(generic.getResultTypes().front());
  if (generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != 2 || !type || type.getRank() != 2 ||
      !type.getElementType().isInteger(1) ||
      !generic.getIndexingMapsArray()[2].isIdentity())
    return false;
  Block *body = generic.getBody();
  auto compare = dyn_cast<arith::CmpIOp>(body->front());
  if (!compare || body->getOperations().size() != 2 ||
      body->getTerminator()->getOperand(0) != compare.getResult())
    return false;
  auto lhs = dyn_cast<BlockArgument>(compare.getLhs());
  auto rhs = dyn_cast<BlockArgument>(compare.getRhs());
  if (!lhs || !rhs || lhs.getOwner() != body || rhs.getOwner() != body ||
      lhs.getArgNumber() > 1 || rhs.getArgNumber() > 1)
    return false;
  std::optional<unsigned> lhsDim = variesWith(generic, lhs.getArgNumber());
  std::optional<unsigned> rhsDim = variesWith(generic, rhs.getArgNumber());
  if (!lhsDim || !rhsDim)
    return false;
  switch (compare.getPredicate()) {
  case arith::CmpIPredicate::sgt:
  case arith::CmpIPredicate::ugt: // key > query
    return *lhsDim == 1 && *rhsDim == 0;
  case arith::CmpIPredicate::slt:
  case arith::CmpIPredicate::ult: // query < key
    return *lhsDim == 0 && *rhsDim == 1;
  default:
    return false;
  }
}

/// Whether `value`, used in `generic`'s body, is -inf: a constant, or an
/// input that is a constant.
static bool isNegativeInfinity(Value value, linalg::GenericOp generic) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner() != generic.getBody() ||
        arg.getArgNumber() >= generic.getNumDpsInputs())
      return false;
    value = generic.getDpsInputOperand(arg.getArgNumber())->get();
  }
  Attribute constant;
  if (!matchPattern(value, m_Constant(&constant)))
    return false;
  if (auto scalar = dyn_cast<FloatAttr>(constant))
    return scalar.getValue().isNegInfinity();
  auto elements = dyn_cast<DenseFPElementsAttr>(constant);
  return elements && elements.isSplat() &&
         elements.getSplatValue<APFloat>().isNegInfinity();
}

bool specula::masksScores(Value mask) {
  bool selects = false;
  for (OpOperand &use : mask.getUses()) {
    if (isa<tensor::DimOp>(use.getOwner()))
      continue;
    selects = true;
    auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!generic || !generic.isDpsInput(&use))
      return false;
    BlockArgument condition = generic.getMatchingBlockArgument(&use);
    if (condition.use_empty())
      return false;
    for (Operation *user : condition.getUsers()) {
      auto select = dyn_cast<arith::SelectOp>(user);
      if (!select || select.getCondition() != condition ||
          !isNegativeInfinity(select.getTrueValue(), generic))
        return false;
    }
  }
  return selects;
}

SmallVector<linalg::GenericOp> specula::findCausalMasks(Operation *func) {
  SmallVector<linalg::GenericOp> masks;
  func->walk([&](linalg::GenericOp generic) {
    if (isCausalMask(generic) && masksScores(generic.getResult(0)))
      masks.push_back(generic);
  });
  return masks;
}
