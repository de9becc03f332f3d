//===- TreeAttention.cpp - verify a tree of candidates in one forward -----===//
//
// Rewrites a model's causal mask `key_pos > query_pos` into a tree mask the
// model takes as an argument, so that one forward verifies (target) or
// extends (draft) a tree of candidates: each row attends to the cache and
// to its ancestors.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"

namespace specula {
#define GEN_PASS_DEF_SPECTREEATTENTION
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

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

/// Whether `generic` computes `future[q][k] = key_pos[k] > query_pos[q]` as
/// a `queries x keys` i1 tensor: one comparison of an operand that varies
/// with the keys (loop dimension 1) against one that varies with the
/// queries (dimension 0).
static bool isCausalMask(linalg::GenericOp generic) {
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

/// Whether every use of `mask` (but its shape's) is `Where(mask, -inf,
/// scores)`, and there is one.
static bool masksScores(Value mask) {
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

/// Makes `mask` `not tree[q][k - past]` for the keys the tree covers: its
/// m columns are the last m keys (k >= past = keys - m), the forward's own
/// n rows and the m - n rows cached just before them; earlier keys keep the
/// comparison.
static void rewriteMask(linalg::GenericOp mask, Value tree) {
  ImplicitLocOpBuilder b(mask.getLoc(), mask);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value init = mask.getDpsInitOperand(0)->get();
  Value rows = tensor::DimOp::create(b, init, zero);
  Value keys = tensor::DimOp::create(b, init, one);
  // tree must be rows x m, rows <= m <= keys, for the reads below to stay
  // inside it and the forward's own rows to be among its columns.
  Value treeRows = tensor::DimOp::create(b, tree, zero);
  Value treeColumns = tensor::DimOp::create(b, tree, one);
  Value past = arith::SubIOp::create(b, keys, treeColumns);
  Value rowsMatch =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, treeRows, rows);
  Value coversRows =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sle, rows, treeColumns);
  Value withinKeys =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sle, treeColumns, keys);
  cf::AssertOp::create(
      b,
      arith::AndIOp::create(b, rowsMatch,
                            arith::AndIOp::create(b, coversRows, withinKeys)),
      "the tree mask is not rows x m of the forward, rows <= m <= keys "
      "(spec-tree-attention)");
  Value trueValue = arith::ConstantOp::create(b, b.getBoolAttr(true));

  Block *body = mask.getBody();
  Operation *yield = body->getTerminator();
  b.setInsertionPoint(yield);
  Value causal = yield->getOperand(0);
  Value query = linalg::IndexOp::create(b, 0);
  Value key = linalg::IndexOp::create(b, 1);
  Value covered =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sge, key, past);
  Value relative = arith::SubIOp::create(b, key, past);
  Value column = arith::SelectOp::create(b, covered, relative, zero);
  Value visible =
      tensor::ExtractOp::create(b, tree, ValueRange{query, column});
  Value hidden = arith::XOrIOp::create(b, visible, trueValue);
  Value future = arith::SelectOp::create(b, covered, hidden, causal);
  yield->setOperand(0, future);
}

namespace {
struct TreeAttentionPass
    : public specula::impl::SpecTreeAttentionBase<TreeAttentionPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult rewrite(func::FuncOp func);
};
} // namespace

LogicalResult TreeAttentionPass::rewrite(func::FuncOp func) {
  if (findArgument(func, IOKind::TreeMask))
    return func.emitError() << "@" << func.getSymName()
                            << " already takes a tree mask";
  SmallVector<linalg::GenericOp> masks;
  func.walk([&](linalg::GenericOp generic) {
    if (isCausalMask(generic) && masksScores(generic.getResult(0)))
      masks.push_back(generic);
  });
  if (masks.empty())
    return func.emitError()
           << "@" << func.getSymName()
           << " has no causal attention mask to make a tree mask of: none "
              "of the form Where(key_pos > query_pos, -inf, scores)";
  MLIRContext *context = func.getContext();
  auto type = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                                    IntegerType::get(context, 1));
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, type, {}, func.getLoc())))
    return func.emitError() << "cannot add a tree mask argument to @"
                            << func.getSymName();
  setArgumentIO(func, index, IOKind::TreeMask);
  for (linalg::GenericOp mask : masks)
    rewriteMask(mask, func.getArgument(index));
  return success();
}

void TreeAttentionPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SetVector<func::FuncOp> functions;
  if (!function.empty()) {
    auto named = symbols.lookup<func::FuncOp>(function);
    if (!named) {
      module.emitError() << "spec-tree-attention: no function named @"
                         << function;
      return signalPassFailure();
    }
    functions.insert(named);
  }
  for (auto decoder : module.getOps<DecoderOp>()) {
    TreeAttr tree = decoder.getTreeAttr();
    if (!function.empty() || !tree)
      continue;
    if (auto target = symbols.lookup<func::FuncOp>(decoder.getTarget()))
      functions.insert(target);
    // A draft proposes below the first depth from forwards over the tree.
    if (auto draft = dyn_cast<DraftProposerAttr>(decoder.getProposer());
        draft && tree.getMaxDepth() > 1)
      if (auto model =
              symbols.lookup<func::FuncOp>(draft.getModel().getValue()))
        functions.insert(model);
  }
  for (func::FuncOp func : functions)
    if (failed(rewrite(func)))
      return signalPassFailure();
}
