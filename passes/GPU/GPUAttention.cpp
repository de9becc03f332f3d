//===- GPUAttention.cpp - the importer's attention in two GPU kernels -----===//
//
// On the GPU each op of the importer's attention chain is a kernel launch:
// the keys' and values' grouped-query expansions and the keys' transpose
// copy the cached prefix, and softmax makes four passes over the scores.
// This pass computes the scores from the cached key rows in place and
// softmax with the product with the values in one op, cloning the bodies
// of the ops it replaces so that the arithmetic stays the same.
//
//===----------------------------------------------------------------------===//

#include "passes/Common/AttentionMatch.h"
#include "passes/Common/IndexingMaps.h"
#include "passes/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

namespace specula {
#define GEN_PASS_DEF_SPECGPUATTENTION
#include "passes/GPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// `op`'s body on `args` (its first block arguments): the value it yields.
static Value cloneBody(OpBuilder &b, linalg::GenericOp op, ValueRange args) {
  Block *body = op.getBody();
  IRMapping mapping;
  for (auto [arg, value] : llvm::zip(body->getArguments(), args))
    mapping.map(arg, value);
  for (Operation &inner : body->without_terminator())
    b.clone(inner, mapping);
  return mapping.lookupOrDefault(body->getTerminator()->getOperand(0));
}

/// The value a linalg.fill writes into `init` (the matcher checked it is
/// one).
static Value fillValue(Value init) {
  return init.getDefiningOp<linalg::FillOp>().value();
}

/// [b, h, positions, k] of rows that query head h reads as kv head
/// h / repeat, for loops (b, h, s, positions, k) or (b, h, s, d).
static AffineMap rowsMap(MLIRContext *ctx, unsigned loops, int64_t repeat,
                         unsigned positionLoop, unsigned columnLoop) {
  AffineExpr head = getAffineDimExpr(1, ctx);
  return AffineMap::get(
      loops, 0,
      {getAffineDimExpr(0, ctx), repeat == 1 ? head : head.floorDiv(repeat),
       getAffineDimExpr(positionLoop, ctx), getAffineDimExpr(columnLoop, ctx)},
      ctx);
}

/// out[b, h, s, t] = sum_k q[b, h, s, k] * rows[b, h / repeat, t, k]: the
/// scores from the key rows in place, by the original contraction's body.
static Value buildScores(ImplicitLocOpBuilder &b, Attention &attention,
                         bool foldTransposes) {
  MLIRContext *ctx = b.getContext();
  auto dims = [&](ArrayRef<unsigned> loops) {
    SmallVector<AffineExpr> exprs;
    for (unsigned loop : loops)
      exprs.push_back(getAffineDimExpr(loop, ctx));
    return AffineMap::get(5, 0, exprs, ctx);
  };
  Value query = attention.query;
  AffineMap queryMap = dims({0, 1, 2, 4});
  if (auto transpose = query.getDefiningOp<linalg::TransposeOp>();
      transpose && foldTransposes) {
    query = transpose.getInput();
    queryMap = throughTranspose(queryMap, transpose.getPermutation());
  }
  linalg::GenericOp scores = attention.scores;
  AffineMap keysMap = rowsMap(ctx, 5, attention.keys.repeat, 3, 4);
  SmallVector<AffineMap> maps = {queryMap, keysMap, dims({0, 1, 2, 3})};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  // The accumulators anew, sized by the operands the loops read (the
  // importer's sizes are the same at run time, but other values): the
  // fill's loop nest is then the scores' one, one kernel on the GPU.
  auto type = cast<RankedTensorType>(scores.getResult(0).getType());
  SmallVector<Value> sizes;
  for (int64_t loop = 0; loop < type.getRank(); ++loop) {
    if (!type.isDynamicDim(loop))
      continue;
    AffineExpr expr = getAffineDimExpr(loop, ctx);
    if (std::optional<unsigned> dim = queryMap.getResultPosition(expr))
      sizes.push_back(tensor::DimOp::create(b, query, *dim));
    else
      sizes.push_back(tensor::DimOp::create(b, attention.keys.rows,
                                            *keysMap.getResultPosition(expr)));
  }
  Value empty =
      tensor::EmptyOp::create(b, type.getShape(), type.getElementType(), sizes);
  Value accumulators =
      linalg::FillOp::create(b, fillValue(scores.getDpsInits()[0]), empty)
          .getResult(0);
  auto fused = linalg::GenericOp::create(
      b, scores.getResultTypes(), ValueRange{query, attention.keys.rows},
      ValueRange{accumulators}, maps, iterators,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        linalg::YieldOp::create(nb, loc, cloneBody(nb, scores, args));
      });
  return fused.getResult(0);
}

/// The modifier's value at `indices` (the scores' loops), by its body on
/// its operands' elements there. (The match made sure it can: elementwise,
/// its operands read at loop indices or constants, its output not read.)
static Value modifierAt(ImplicitLocOpBuilder &b, linalg::GenericOp modifier,
                        ArrayRef<Value> indices) {
  SmallVector<Value> args;
  for (OpOperand *input : modifier.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(input->get().getType())) {
      args.push_back(input->get());
      continue;
    }
    SmallVector<Value> at;
    for (AffineExpr e : modifier.getMatchingIndexingMap(input).getResults())
      at.push_back(isa<AffineDimExpr>(e)
                       ? indices[cast<AffineDimExpr>(e).getPosition()]
                       : Value(arith::ConstantIndexOp::create(
                             b, cast<AffineConstantExpr>(e).getValue())));
    args.push_back(tensor::ExtractOp::create(b, input->get(), at));
  }
  // The output's element, which the body does not read.
  args.push_back(args.front());
  return cloneBody(b, modifier, args);
}

/// The product's output and the map it writes it by: the layout's init
/// through its permutation when the output is transposed, else a new
/// tensor of the output's shape.
static std::pair<Value, AffineMap> productOutput(ImplicitLocOpBuilder &b,
                                                 Attention &attention,
                                                 Value scores,
                                                 linalg::TransposeOp layout) {
  MLIRContext *ctx = b.getContext();
  auto outType =
      cast<RankedTensorType>(attention.output.getResult(0).getType());
  Value init;
  AffineMap outMap = AffineMap::getMultiDimIdentityMap(4, ctx);
  if (layout) {
    init = layout.getInit();
    SmallVector<AffineExpr> exprs;
    for (int64_t dim : layout.getPermutation())
      exprs.push_back(getAffineDimExpr(dim, ctx));
    outMap = AffineMap::get(4, 0, exprs, ctx);
  } else {
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < 4; ++d)
      if (outType.isDynamicDim(d))
        sizes.push_back(
            d < 3 ? Value(tensor::DimOp::create(b, scores, d))
                  : Value(arith::ConstantIndexOp::create(
                        b, cast<RankedTensorType>(attention.query.getType())
                               .getDimSize(3))));
    init = tensor::EmptyOp::create(b, outType.getShape(),
                                   outType.getElementType(), sizes);
  }
  return {init, outMap};
}

/// out[b, h, s, d] = sum_t (exp(x_t - m) / l) * rows[b, h / repeat, t, d]
/// with m = max_t x_t and l = sum_t exp(x_t - m): three passes over the
/// positions per output element, each by the body of the op it replaces.
/// x is the modifier's value, computed where each pass reads a score (not
/// a kernel of its own).
static Value buildSoftmaxProduct(ImplicitLocOpBuilder &b, Attention &attention,
                                 Value scores, Value positions,
                                 linalg::TransposeOp layout) {
  linalg::GenericOp modifier = attention.modifier;
  Value init;
  AffineMap outMap;
  std::tie(init, outMap) = productOutput(b, attention, scores, layout);
  Value maxInit = fillValue(attention.maximum.getDpsInits()[0]);
  Value sumInit = fillValue(attention.sum.getDpsInits()[0]);
  Value outInit = fillValue(attention.output.getDpsInits()[0]);
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value values = attention.values.rows;
  int64_t repeat = attention.values.repeat;

  auto product = linalg::GenericOp::create(
      b, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{outMap},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location loc, ValueRange) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value batch = linalg::IndexOp::create(ib, 0);
        Value head = linalg::IndexOp::create(ib, 1);
        Value row = linalg::IndexOp::create(ib, 2);
        Value column = linalg::IndexOp::create(ib, 3);
        Value kvHead =
            repeat == 1
                ? head
                : Value(arith::DivUIOp::create(
                      ib, head, arith::ConstantIndexOp::create(ib, repeat)));
        // One pass over the positions carrying `init`; `step` gives the
        // next value from the score at position t.
        auto pass =
            [&](Value initial,
                function_ref<Value(ImplicitLocOpBuilder &, Value, Value, Value)>
                    step) {
              auto loop = scf::ForOp::create(
                  ib, c0, positions, c1, ValueRange{initial},
                  [&](OpBuilder &lb, Location l, Value t, ValueRange carried) {
                    ImplicitLocOpBuilder tb(l, lb);
                    Value score =
                        modifier
                            ? modifierAt(tb, modifier, {batch, head, row, t})
                            : Value(tensor::ExtractOp::create(
                                  tb, scores, ValueRange{batch, head, row, t}));
                    scf::YieldOp::create(tb, step(tb, t, score, carried[0]));
                  });
              return loop.getResult(0);
            };
        Value maximum = pass(maxInit, [&](ImplicitLocOpBuilder &tb, Value,
                                          Value score, Value carried) {
          return cloneBody(tb, attention.maximum, {score, carried});
        });
        Value sum = pass(sumInit, [&](ImplicitLocOpBuilder &tb, Value,
                                      Value score, Value carried) {
          Value weight = cloneBody(tb, attention.exps, {score, maximum});
          return cloneBody(tb, attention.sum, {weight, carried});
        });
        Value out = pass(outInit, [&](ImplicitLocOpBuilder &tb, Value t,
                                      Value score, Value carried) {
          Value weight = cloneBody(tb, attention.exps, {score, maximum});
          Value probability = cloneBody(tb, attention.divide, {weight, sum});
          Value value = tensor::ExtractOp::create(
              tb, values, ValueRange{c0, kvHead, t, column});
          return cloneBody(tb, attention.output, {probability, value, carried});
        });
        linalg::YieldOp::create(ib, out);
      });
  return product.getResult(0);
}

namespace {
struct GPUAttentionPass
    : public specula::impl::SpecGPUAttentionBase<GPUAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Attention> attentions = findAttentions(func);
    for (Attention &attention : attentions) {
      ImplicitLocOpBuilder b(attention.scores.getLoc(), attention.scores);
      Value scores = buildScores(b, attention, foldTransposes);
      attention.scores.getResult(0).replaceAllUsesWith(scores);

      // The output in its consumer's layout, built where that consumer's
      // init is defined.
      linalg::TransposeOp layout;
      Value result = attention.output.getResult(0);
      if (foldTransposes && result.hasOneUse())
        layout = dyn_cast<linalg::TransposeOp>(*result.getUsers().begin());
      b.setInsertionPoint(layout ? layout.getOperation()
                                 : attention.output.getOperation());
      b.setLoc(attention.output.getLoc());
      Value positions = tensor::DimOp::create(b, attention.keys.rows, 2);
      emitAttentionChecks(b, attention, positions, "spec-gpu-attention");
      Value product =
          buildSoftmaxProduct(b, attention, scores, positions, layout);
      (layout ? layout->getResult(0) : result).replaceAllUsesWith(product);
    }
    // What only fed the replaced ops: softmax, the expanded and transposed
    // keys and values.
    IRRewriter rewriter(func.getContext());
    (void)runRegionDCE(rewriter, func->getRegions());
    if (!attentions.empty())
      readPastDisjointWrites(func);
  }
};
} // namespace
