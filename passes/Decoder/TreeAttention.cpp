//===- TreeAttention.cpp - verify a tree of candidates in one forward -----===//
//
// Rewrites a model's causal mask `key_pos > query_pos` into a tree mask the
// model takes as an argument, so that one forward verifies (target) or
// extends (draft) a tree of candidates: each row attends to the cache and
// to its ancestors.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/Passes.h"

#include "passes/Decoder/CausalMask.h"

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
  SmallVector<linalg::GenericOp> masks = findCausalMasks(func);
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
