//===- AttentionMatch.cpp - the importer's attention, found in the IR -----===//

#include "passes/Common/AttentionMatch.h"


#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;
using namespace specula;

static bool hasMaps(linalg::GenericOp op, ArrayRef<AffineMap> maps) {
  return llvm::equal(op.getIndexingMapsArray(), maps);
}

static AffineMap dimsMap(MLIRContext *ctx, unsigned count,
                         ArrayRef<unsigned> results) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : results)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(count, 0, exprs, ctx);
}

/// (d0, d1, d2, d3) -> (d0, d1, d2, 0): a row reduction's result.
static AffineMap rowMap(MLIRContext *ctx) {
  return AffineMap::get(4, 0,
                        {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                         getAffineDimExpr(2, ctx),
                         getAffineConstantExpr(0, ctx)},
                        ctx);
}

static Value stripCasts(Value v) {
  while (auto cast = v.getDefiningOp<tensor::CastOp>())
    v = cast.getSource();
  return v;
}

/// The constant a linalg.fill writes into `init`, if it is one.
static std::optional<double> fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  FloatAttr value;
  if (!fill || !matchPattern(fill.value(), m_Constant(&value)))
    return std::nullopt;
  return value.getValueAsDouble();
}

/// Whether the body yields `OpTy(args...)` of its block arguments, in this
/// order, and nothing else.
template <typename OpTy>
static bool yields(linalg::GenericOp op, ArrayRef<unsigned> args) {
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto inner = yield.getOperand(0).getDefiningOp<OpTy>();
  if (!inner || inner->getNumOperands() != args.size() ||
      body->getOperations().size() != 2)
    return false;
  for (auto [operand, arg] : llvm::zip(inner->getOperands(), args))
    if (operand != body->getArgument(arg))
      return false;
  return true;
}

/// A contraction `out += a * b` with the given maps, from zero.
static bool isContraction(linalg::GenericOp op, ArrayRef<AffineMap> maps) {
  if (!op || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !hasMaps(op, maps) ||
      fillValue(op.getDpsInits()[0]) != std::optional<double>(0.0))
    return false;
  Block *body = op.getBody();
  auto add = cast<linalg::YieldOp>(body->getTerminator())
                 .getOperand(0)
                 .getDefiningOp<arith::AddFOp>();
  if (!add || body->getOperations().size() != 3)
    return false;
  Value out = body->getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  auto mul = product.getDefiningOp<arith::MulFOp>();
  Value a = body->getArgument(0), b = body->getArgument(1);
  return mul && (add.getLhs() == out || add.getRhs() == out) &&
         ((mul.getLhs() == a && mul.getRhs() == b) ||
          (mul.getLhs() == b && mul.getRhs() == a));
}

/// A reduction of `input` over its last dimension (a row of scores) whose
/// body is `OpTy(out, in)` (either order), from `init`.
template <typename OpTy>
static bool isRowReduction(linalg::GenericOp op, Value input, double init) {
  if (!op || op.getNumDpsInputs() != 1 || op.getDpsInputs()[0] != input)
    return false;
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(4, ctx),
                                 rowMap(ctx)};
  return hasMaps(op, maps) && op.getNumReductionLoops() == 1 &&
         op.getIteratorTypesArray()[3] == utils::IteratorType::reduction &&
         fillValue(op.getDpsInits()[0]) == std::optional<double>(init) &&
         (yields<OpTy>(op, {1, 0}) || yields<OpTy>(op, {0, 1}));
}

/// A 4-d elementwise op of a full tensor and a row value (its reduction).
static bool isRowElementwise(linalg::GenericOp op) {
  if (!op || op.getNumDpsInputs() != 2 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(4, ctx),
                                 rowMap(ctx),
                                 AffineMap::getMultiDimIdentityMap(4, ctx)};
  return hasMaps(op, maps);
}

/// Follows a [batch, heads, positions, head_dim] operand back to the rows
/// it copies: itself, or (grouped-query attention) a reshape of a broadcast
/// copy of a reshape of [1, kv_heads, positions, head_dim] rows, as torch
/// exports `k[:, :, None].expand(...).reshape(...)`. The reshapes' sizes
/// are computed in the graph; the ones the fused loops rely on are checked
/// at run time.
static std::optional<RowSource> traceRows(Value operand, int64_t heads,
                                          int64_t headDim) {
  Value value = stripCasts(operand);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 4 ||
      (!type.isDynamicDim(1) && type.getDimSize(1) != heads) ||
      (!type.isDynamicDim(3) && type.getDimSize(3) != headDim))
    return std::nullopt;
  RowSource source;
  auto reshape = value.getDefiningOp<tensor::ReshapeOp>();
  auto broadcast =
      reshape
          ? stripCasts(reshape.getSource()).getDefiningOp<linalg::GenericOp>()
          : linalg::GenericOp();
  if (!broadcast) {
    // The rows themselves, one kv head per query head.
    if (type.getDimSize(1) != heads || type.getDimSize(3) != headDim)
      return std::nullopt;
    source.rows = value;
    source.checks.push_back({value, 0, Expect::Batch});
    return source;
  }
  // [b, g, 1, t, d] -> [b, g, r, t, d], a copy (with one kv head, g is
  // broadcast too).
  MLIRContext *ctx = value.getContext();
  auto expand = [&](bool oneGroup) {
    AffineExpr zero = getAffineConstantExpr(0, ctx);
    return AffineMap::get(5, 0,
                          {getAffineDimExpr(0, ctx),
                           oneGroup ? zero : getAffineDimExpr(1, ctx), zero,
                           getAffineDimExpr(3, ctx), getAffineDimExpr(4, ctx)},
                          ctx);
  };
  AffineMap identity = AffineMap::getMultiDimIdentityMap(5, ctx);
  Block *body = broadcast.getBody();
  if (broadcast.getNumDpsInputs() != 1 ||
      broadcast.getNumParallelLoops() != 5 ||
      (!hasMaps(broadcast, {expand(false), identity}) &&
       !hasMaps(broadcast, {expand(true), identity})) ||
      cast<linalg::YieldOp>(body->getTerminator()).getOperand(0) !=
          body->getArgument(0))
    return std::nullopt;
  Value expanded = stripCasts(broadcast.getDpsInputs()[0]);
  auto inner = expanded.getDefiningOp<tensor::ReshapeOp>();
  if (!inner)
    return std::nullopt;
  Value rows = stripCasts(inner.getSource());
  auto rowsType = cast<RankedTensorType>(rows.getType());
  if (rowsType.getRank() != 4 || rowsType.isDynamicDim(1) ||
      rowsType.getDimSize(3) != headDim || heads % rowsType.getDimSize(1))
    return std::nullopt;
  if (hasMaps(broadcast, {expand(true), identity}) &&
      rowsType.getDimSize(1) != 1)
    return std::nullopt;
  source.rows = rows;
  source.repeat = heads / rowsType.getDimSize(1);
  // rows [1, g, t, d] -> [1, g, 1, t, d] -> [1, g, r, t, d] -> [1, g*r, t, d]
  // is the row-major identity on the rows when these sizes hold.
  source.checks = {{rows, 0, Expect::Batch},
                   {expanded, 0, Expect::Batch},
                   {expanded, 1, Expect::Groups},
                   {expanded, 2, Expect::One},
                   {expanded, 3, Expect::Positions},
                   {expanded, 4, Expect::HeadDim},
                   {broadcast.getResult(0), 2, Expect::Repeat},
                   {value, 0, Expect::Batch},
                   {value, 1, Expect::Heads},
                   {value, 2, Expect::Positions},
                   {value, 3, Expect::HeadDim}};
  return source;
}

/// p = e / sum(e), e = exp(x - max(x)), read backwards from p's divide:
/// sets `attention`'s softmax ops and returns x (null if no match).
static Value matchSoftmax(linalg::GenericOp divide, Attention &attention) {
  if (!isRowElementwise(divide) || !yields<arith::DivFOp>(divide, {0, 1}))
    return {};
  Value exps = divide.getDpsInputs()[0];
  auto sum = divide.getDpsInputs()[1].getDefiningOp<linalg::GenericOp>();
  if (!isRowReduction<arith::AddFOp>(sum, exps, 0.0))
    return {};
  auto exp = exps.getDefiningOp<linalg::GenericOp>();
  if (!isRowElementwise(exp) || exp.getBody()->getOperations().size() != 3)
    return {};
  auto expOp = cast<linalg::YieldOp>(exp.getBody()->getTerminator())
                   .getOperand(0)
                   .getDefiningOp<math::ExpOp>();
  auto sub = expOp ? expOp.getOperand().getDefiningOp<arith::SubFOp>()
                   : arith::SubFOp();
  if (!sub || sub.getLhs() != exp.getBody()->getArgument(0) ||
      sub.getRhs() != exp.getBody()->getArgument(1))
    return {};
  Value scoresIn = exp.getDpsInputs()[0];
  auto max = exp.getDpsInputs()[1].getDefiningOp<linalg::GenericOp>();
  double negInf = -std::numeric_limits<double>::infinity();
  if (!isRowReduction<arith::MaximumFOp>(max, scoresIn, negInf) &&
      !isRowReduction<arith::MaxNumFOp>(max, scoresIn, negInf))
    return {};
  attention.maximum = max;
  attention.exps = exp;
  attention.sum = sum;
  attention.divide = divide;
  return scoresIn;
}

/// q . k^T (keys transposed in the graph, or read as [b, h, t, d]).
static SmallVector<AffineMap> scoresMaps(MLIRContext *ctx, bool transposed) {
  return {dimsMap(ctx, 5, {0, 1, 2, 4}),
          dimsMap(ctx, 5, transposed ? ArrayRef<unsigned>{0, 1, 4, 3}
                                     : ArrayRef<unsigned>{0, 1, 3, 4}),
          dimsMap(ctx, 5, {0, 1, 2, 3})};
}

/// x = modify(q . k^T, ...) or the scores themselves: sets `attention`'s
/// scores and modifier.
static bool matchScores(Value scoresIn, Attention &attention) {
  MLIRContext *ctx = scoresIn.getContext();
  auto isScores = [&](Value v) {
    auto op = v.getDefiningOp<linalg::GenericOp>();
    return isContraction(op, scoresMaps(ctx, true)) ||
                   isContraction(op, scoresMaps(ctx, false))
               ? op
               : linalg::GenericOp();
  };
  if ((attention.scores = isScores(scoresIn)))
    return true;
  auto modifier = scoresIn.getDefiningOp<linalg::GenericOp>();
  if (!modifier || modifier.getNumDpsInits() != 1 ||
      modifier.getNumLoops() != 4 || modifier.getNumParallelLoops() != 4 ||
      !modifier.getMatchingIndexingMap(modifier.getDpsInitOperand(0))
           .isIdentity() ||
      !modifier.getBody()->getArgument(modifier.getNumDpsInputs()).use_empty())
    return false;
  for (OpOperand *input : modifier.getDpsInputOperands()) {
    AffineMap map = modifier.getMatchingIndexingMap(input);
    if (!attention.scores && map.isIdentity() &&
        (attention.scores = isScores(input->get())))
      continue;
    for (AffineExpr expr : map.getResults()) {
      auto constant = dyn_cast<AffineConstantExpr>(expr);
      if (!isa<AffineDimExpr>(expr) && !(constant && constant.getValue() == 0))
        return false;
    }
  }
  for (Operation &op : modifier.getBody()->without_terminator())
    if (op.getNumRegions() || !isPure(&op))
      return false;
  attention.modifier = modifier;
  return bool(attention.scores);
}

/// The query, and the rows the keys and values are read from.
static bool matchOperands(linalg::GenericOp output, Attention &attention) {
  attention.query = attention.scores.getDpsInputs()[0];
  auto queryType = cast<RankedTensorType>(attention.query.getType());
  if (queryType.isDynamicDim(1) || queryType.isDynamicDim(3) ||
      !queryType.getElementType().isF32())
    return false;
  int64_t heads = queryType.getDimSize(1), headDim = queryType.getDimSize(3);
  Value keys = attention.scores.getDpsInputs()[1];
  if (attention.scores.getIndexingMapsArray()[1] ==
      scoresMaps(output.getContext(), true)[1]) {
    auto transpose = keys.getDefiningOp<linalg::TransposeOp>();
    if (!transpose ||
        transpose.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
      return false;
    keys = transpose.getInput();
  }
  std::optional<RowSource> keyRows = traceRows(keys, heads, headDim);
  std::optional<RowSource> valueRows =
      traceRows(output.getDpsInputs()[1], heads, headDim);
  if (!keyRows || !valueRows)
    return false;
  attention.keys = std::move(*keyRows);
  attention.values = std::move(*valueRows);
  return true;
}

/// Matches the attention whose last op is `output`.
std::optional<Attention> specula::matchAttention(linalg::GenericOp output) {
  // out[b, h, s, d] += p[b, h, s, t] * v[b, h, t, d]
  if (!isContraction(output, scoresMaps(output.getContext(), true)))
    return std::nullopt;
  Attention attention;
  attention.output = output;
  Value scoresIn = matchSoftmax(
      output.getDpsInputs()[0].getDefiningOp<linalg::GenericOp>(), attention);
  if (!scoresIn || !matchScores(scoresIn, attention) ||
      !matchOperands(output, attention))
    return std::nullopt;
  return attention;
}

SmallVector<Attention> specula::findAttentions(func::FuncOp func) {
  SmallVector<Attention> attentions;
  func.walk([&](linalg::GenericOp op) {
    if (std::optional<Attention> attention = matchAttention(op))
      attentions.push_back(std::move(*attention));
  });
  return attentions;
}

/// The size of `value`'s dimension `dim`, read where it does not keep the
/// value alive: a reshape's shape operand, a linalg op's init.
static Value sizeOf(ImplicitLocOpBuilder &b, Value value, int64_t dim) {
  value = stripCasts(value);
  if (auto reshape = value.getDefiningOp<tensor::ReshapeOp>()) {
    Value size = tensor::ExtractOp::create(
        b, reshape.getShape(),
        ValueRange{arith::ConstantIndexOp::create(b, dim)});
    return size.getType().isIndex()
               ? size
               : arith::IndexCastOp::create(b, b.getIndexType(), size);
  }
  if (auto linalgOp = value.getDefiningOp<linalg::LinalgOp>())
    return sizeOf(
        b,
        linalgOp.getDpsInitOperand(cast<OpResult>(value).getResultNumber())
            ->get(),
        dim);
  return tensor::DimOp::create(b, value, dim);
}

void specula::emitAttentionChecks(ImplicitLocOpBuilder &b,
                                  const Attention &attention, Value positions,
                                  StringRef pass, Value batch) {
  auto queryType = cast<RankedTensorType>(attention.query.getType());
  int64_t heads = queryType.getDimSize(1), headDim = queryType.getDimSize(3);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  auto check = [&](const RowSource &source, StringRef what) {
    int64_t groups =
        cast<RankedTensorType>(source.rows.getType()).getDimSize(1);
    for (const DimCheck &dimCheck : source.checks) {
      Value expected;
      switch (dimCheck.expected) {
      case Expect::One:
        expected = c1;
        break;
      case Expect::Batch:
        expected = batch ? batch : c1;
        break;
      case Expect::Groups:
        expected = arith::ConstantIndexOp::create(b, groups);
        break;
      case Expect::Heads:
        expected = arith::ConstantIndexOp::create(b, heads);
        break;
      case Expect::Repeat:
        expected = arith::ConstantIndexOp::create(b, source.repeat);
        break;
      case Expect::Positions:
        expected = positions;
        break;
      case Expect::HeadDim:
        expected = arith::ConstantIndexOp::create(b, headDim);
        break;
      }
      Value actual = sizeOf(b, dimCheck.shaped, dimCheck.dim);
      cf::AssertOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, actual, expected),
          (pass + ": the " + what +
           " do not have the sizes the attention was fused for")
              .str());
    }
  };
  check(attention.keys, "keys");
  check(attention.values, "values");
  cf::AssertOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                            tensor::DimOp::create(b, attention.values.rows, 2),
                            positions),
      (pass + ": keys and values of different lengths").str());
  if (!batch)
    cf::AssertOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                              tensor::DimOp::create(b, attention.query, 0),
                              c1),
        (pass + ": the queries' batch is not 1").str());
}

/// Whether two slices of one tensor are disjoint in some dimension whose
/// offsets and sizes are constants (a cache's keys and values, its layers).
static bool disjointSlices(OffsetSizeAndStrideOpInterface a,
                           OffsetSizeAndStrideOpInterface b) {
  for (unsigned d = 0, e = a.getMixedOffsets().size(); d < e; ++d) {
    std::optional<int64_t> offsetA =
                               getConstantIntValue(a.getMixedOffsets()[d]),
                           sizeA = getConstantIntValue(a.getMixedSizes()[d]),
                           offsetB =
                               getConstantIntValue(b.getMixedOffsets()[d]),
                           sizeB = getConstantIntValue(b.getMixedSizes()[d]);
    if (offsetA && sizeA && offsetB && sizeB &&
        (*offsetA + *sizeA <= *offsetB || *offsetB + *sizeB <= *offsetA))
      return true;
  }
  return false;
}

/// The tensor `user` writes into `read`'s source when every element it
/// writes lies outside `read`'s slice: an insert_slice, or a loop over a
/// batch that carries the source and inserts one slice per iteration (a
/// cache of slots, spec.cache.write_slots).
static Value disjointWrite(Operation *user, tensor::ExtractSliceOp read) {
  if (auto write = dyn_cast<tensor::InsertSliceOp>(user))
    return write.getDest() == read.getSource() && disjointSlices(read, write)
               ? write.getResult()
               : Value();
  auto loop = dyn_cast<scf::ForOp>(user);
  if (!loop || loop.getNumRegionIterArgs() != 1 ||
      loop.getInitArgs()[0] != read.getSource())
    return {};
  Value carried = loop.getRegionIterArgs()[0];
  auto insert = carried.hasOneUse()
                    ? dyn_cast<tensor::InsertSliceOp>(*carried.user_begin())
                    : tensor::InsertSliceOp();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (!insert || insert.getDest() != carried ||
      yield.getOperand(0) != insert.getResult() ||
      !disjointSlices(read, insert))
    return {};
  return loop.getResult(0);
}

/// The fused loops read a layer's keys after its values were written into
/// the cache: without this, bufferization would copy the keys' whole prefix
/// to keep the slice from before the write.
void specula::readPastDisjointWrites(func::FuncOp func) {
  bool changed = true;
  while (changed) {
    changed = false;
    func.walk([&](tensor::ExtractSliceOp read) {
      Block *block = read->getBlock();
      for (Operation *write : read.getSource().getUsers()) {
        Value written = disjointWrite(write, read);
        if (!written || write->getBlock() != block ||
            !read->isBeforeInBlock(write) ||
            !llvm::all_of(read->getUsers(), [&](Operation *use) {
              Operation *at = block->findAncestorOpInBlock(*use);
              return at && write->isBeforeInBlock(at);
            }))
          continue;
        OpBuilder b(write->getContext());
        b.setInsertionPointAfter(write);
        Value moved = tensor::ExtractSliceOp::create(
            b, read.getLoc(), read.getType(), written,
            read.getMixedOffsets(), read.getMixedSizes(),
            read.getMixedStrides());
        read.getResult().replaceAllUsesWith(moved);
        read->erase();
        changed = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
  }
}
