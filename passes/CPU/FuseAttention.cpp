//===- FuseAttention.cpp - one pass over the cache per query row ----------===//
//
// The importer's attention is a chain of tensor ops, each a full pass over
// [heads x rows x positions]: the keys expanded to every query head (GQA)
// and transposed, the scores, the mask, softmax's max, exp, sum and divide,
// and the product with the values expanded again. This pass replaces the
// chain by loops that read each cached key and value row in place once per
// query row, with softmax computed online (running maximum and sum).
//
//===----------------------------------------------------------------------===//

#include "passes/Common/AttentionMatch.h"
#include "passes/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include <limits>

namespace specula {
#define GEN_PASS_DEF_SPECFUSEATTENTION
#include "passes/CPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// The f32 lanes of one AVX2 register: the attention's scores are computed
/// this many positions at a time.
static constexpr int64_t kLanes = 8;
static_assert(kLanes == 8, "the scores' pairwise sums are written for 8 lanes");

namespace {
/// Where a value is read, per dimension of its tensor: a dimension of the
/// scores (b, h, row, position) or the constant 0.
using Place = SmallVector<AffineExpr, 4>;

/// A block of positions as the modifier's vectorized body sees it.
struct BlockContext {
  ArrayRef<Value> ivs; // b, h, row; [3] unused
  Value first, positionLanes;
  ArrayRef<Value> clamped;
};

/// The fused loops: for each head and query row, one pass over the cached
/// positions with a running maximum m, sum l and weighted sum acc:
///   x = modify(q . k_t); m' = max(m, x)
///   acc = acc * exp(m - m') + exp(x - m') * v_t; l likewise.
/// A row's reduction order depends only on the positions, never on how many
/// rows the forward has (batch invariance).
class FusedAttentionBuilder {
public:
  FusedAttentionBuilder(ImplicitLocOpBuilder &b, Attention &attention,
                        int64_t positionsPerBlock);
  /// The fused attention's result, replacing `attention.output`'s.
  Value build(int64_t rowsPerGroup);
  Value buildHeads(ImplicitLocOpBuilder &sb, int64_t rowsPerGroup, Value out);

private:
  Value readRow(ImplicitLocOpBuilder &lb, Value source, ValueRange indices);
  Value lanes(ImplicitLocOpBuilder &tb, Value scalar);
  Value treeSum(ImplicitLocOpBuilder &tb, Value v);
  Value foldProducts(ImplicitLocOpBuilder &tb, Value q, Value k);
  Value blockMaximum(ImplicitLocOpBuilder &tb, Value v);
  Value modify(ImplicitLocOpBuilder &tb, Value score, ArrayRef<Value> ivs);
  Value scalarIndex(const BlockContext &at, AffineExpr expr, Value position);
  Value vectorizeBody(ImplicitLocOpBuilder &tb, const BlockContext &at,
                      linalg::GenericOp op, ArrayRef<AffineExpr> dims,
                      IRMapping &mapping);
  Value gather(ImplicitLocOpBuilder &tb, const BlockContext &at, Value tensor,
               ArrayRef<AffineExpr> place, int depth);
  Value modifyBlock(ImplicitLocOpBuilder &tb, const BlockContext &at,
                    Value scores);
  Value blockScores(ImplicitLocOpBuilder &tb, Value query, ArrayRef<Value> keys);
  SmallVector<Value> updateRow(ImplicitLocOpBuilder &tb, Value xs,
                               Value valueHead, ArrayRef<Value> clamped,
                               ValueRange rowState);
  SmallVector<Value> updateBlock(ImplicitLocOpBuilder &tb, Value first,
                                 Value head, Value keyHead, Value valueHead,
                                 ArrayRef<Value> rowIndices,
                                 ArrayRef<Value> queries, ValueRange state);
  Value buildRows(ImplicitLocOpBuilder &ib, Value firstRow, int64_t rowCount,
                  Value head, Value keyHead, Value valueHead, Value out);

  ImplicitLocOpBuilder &b;
  Attention &attention;
  int64_t heads, headDim, block;
  Type f32;
  VectorType vectorType, blockType, indexBlockType;
  Value c0, c1, positions, rows, init, zero, negInf, zeros;
  /// The batch row (sequence) the loops being built are for.
  Value sequence;
  Value lastPosition, blockOffsets, blockZeros, blockNegInf, positionsLanes,
      lastPositionLanes, blockCount;
  /// Whether the scores are computed kLanes positions at once (head_dim and
  /// the block whole registers), and the modifier applied to whole blocks.
  bool registerScores, blockModifier;
};
} // namespace

/// A vector's halves.
static std::pair<Value, Value> halves(ImplicitLocOpBuilder &tb, Value v,
                                      int64_t width) {
  Value low = vector::ExtractStridedSliceOp::create(tb, v, {0}, {width}, {1});
  Value high =
      vector::ExtractStridedSliceOp::create(tb, v, {width}, {width}, {1});
  return std::make_pair(low, high);
}

/// [x0+x1, x2+x3, y0+y1, y2+y3 | x4+x5, x6+x7, y4+y5, y6+y7]
static Value pairSums(ImplicitLocOpBuilder &tb, Value x, Value y) {
  Value evens = vector::ShuffleOp::create(
      tb, x, y, ArrayRef<int64_t>{0, 2, 8, 10, 4, 6, 12, 14});
  Value odds = vector::ShuffleOp::create(
      tb, x, y, ArrayRef<int64_t>{1, 3, 9, 11, 5, 7, 13, 15});
  return arith::AddFOp::create(tb, evens, odds).getResult();
}

/// kLanes registers of products reduced together by pairwise sums within
/// each half, as vhaddps does, so that the scores land in one register with
/// no reduction per position. Position j's lanes are always summed
/// ((0+1)+(2+3)) + ((4+5)+(6+7)).
static Value laneScores(ImplicitLocOpBuilder &tb, ArrayRef<Value> folded) {
  Value h01 = pairSums(tb, folded[0], folded[1]);
  Value h23 = pairSums(tb, folded[2], folded[3]);
  Value h45 = pairSums(tb, folded[4], folded[5]);
  Value h67 = pairSums(tb, folded[6], folded[7]);
  // [a0..a3 over lanes 0-3 | a0..a3 over lanes 4-7], then a4..a7.
  Value low = pairSums(tb, h01, h23), high = pairSums(tb, h45, h67);
  Value firstHalves = vector::ShuffleOp::create(
      tb, low, high, ArrayRef<int64_t>{0, 1, 2, 3, 8, 9, 10, 11});
  Value secondHalves = vector::ShuffleOp::create(
      tb, low, high, ArrayRef<int64_t>{4, 5, 6, 7, 12, 13, 14, 15});
  return arith::AddFOp::create(tb, firstHalves, secondHalves).getResult();
}

/// max(a, b) as x86's maxps computes it (one instruction, where
/// arith.maximumf's NaN and signed-zero rules take a dozen). A NaN score
/// may be passed over here; its weight is NaN all the same.
static Value larger(ImplicitLocOpBuilder &tb, Value x, Value y) {
  return arith::SelectOp::create(
      tb, arith::CmpFOp::create(tb, arith::CmpFPredicate::OGT, x, y), x, y);
}

/// Whether `op`'s body can be cloned on lanes: its ops are elementwise on
/// scalars.
static bool isVectorizable(linalg::GenericOp op) {
  auto isScalar = [](Type type) { return type.isIntOrIndexOrFloat(); };
  return llvm::all_of(op.getBody()->without_terminator(), [&](Operation &o) {
    if (isa<linalg::IndexOp>(o))
      return true;
    // Lanes past the end compute on padding: nothing that can trap.
    if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
            arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(o))
      return false;
    if (!llvm::all_of(o.getResultTypes(), isScalar) ||
        !llvm::all_of(o.getOperandTypes(), isScalar))
      return false;
    return o.getNumOperands() == 0 ? o.hasTrait<OpTrait::ConstantLike>()
                                   : OpTrait::hasElementwiseMappableTraits(&o);
  });
}

/// The all-parallel generic computing `tensor` elementwise, so that its body
/// can be cloned on lanes; null if it is not one.
static linalg::GenericOp elementwiseProducer(Value tensor) {
  auto op = tensor.getDefiningOp<linalg::GenericOp>();
  if (!op || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity() ||
      !op.getBody()->getArgument(op.getNumDpsInputs()).use_empty() ||
      !isVectorizable(op))
    return {};
  for (OpOperand *input : op.getDpsInputOperands())
    for (AffineExpr expr : op.getMatchingIndexingMap(input).getResults())
      if (!isa<AffineDimExpr>(expr) &&
          !(isa<AffineConstantExpr>(expr) &&
            cast<AffineConstantExpr>(expr).getValue() == 0))
        return {};
  return op;
}

static bool isPosition(AffineExpr expr) {
  auto dim = dyn_cast<AffineDimExpr>(expr);
  return dim && dim.getPosition() == 3;
}

FusedAttentionBuilder::FusedAttentionBuilder(ImplicitLocOpBuilder &b,
                                             Attention &attention,
                                             int64_t positionsPerBlock)
    : b(b), attention(attention), block(positionsPerBlock) {
  auto queryType = cast<RankedTensorType>(attention.query.getType());
  heads = queryType.getDimSize(1);
  headDim = queryType.getDimSize(3);
  f32 = b.getF32Type();
  vectorType = VectorType::get({headDim}, f32);
  c0 = arith::ConstantIndexOp::create(b, 0);
  c1 = arith::ConstantIndexOp::create(b, 1);
  positions = tensor::DimOp::create(b, attention.keys.rows, 2);

  emitAttentionChecks(b, attention, positions, "spec-fuse-attention",
                      tensor::DimOp::create(b, attention.query, 0));

  rows = tensor::DimOp::create(b, attention.query, 2);
  auto outType =
      cast<RankedTensorType>(attention.output.getResult(0).getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < 4; ++d)
    if (outType.isDynamicDim(d))
      dynamicSizes.push_back(tensor::DimOp::create(b, attention.query, d));
  init = tensor::EmptyOp::create(b, outType.getShape(), f32, dynamicSizes);
  zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  negInf = arith::ConstantOp::create(
      b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  zeros = vector::BroadcastOp::create(b, vectorType, zero);

  registerScores = headDim % kLanes == 0 && block % kLanes == 0;
  blockType = VectorType::get({block}, f32);
  blockModifier = attention.modifier && isVectorizable(attention.modifier);
  lastPosition = arith::SubIOp::create(b, positions, c1);
  indexBlockType = VectorType::get({block}, b.getIndexType());
  SmallVector<int64_t> offsets = llvm::to_vector(llvm::seq<int64_t>(0, block));
  blockOffsets = arith::ConstantOp::create(
      b, DenseElementsAttr::get(indexBlockType,
                                llvm::map_to_vector(offsets, [&](int64_t o) {
                                  return Attribute(b.getIndexAttr(o));
                                })));
  blockZeros = vector::BroadcastOp::create(b, blockType, zero);
  blockNegInf = vector::BroadcastOp::create(b, blockType, negInf);
  positionsLanes = vector::BroadcastOp::create(b, indexBlockType, positions);
  lastPositionLanes =
      vector::BroadcastOp::create(b, indexBlockType, lastPosition);
  blockCount = arith::CeilDivUIOp::create(
      b, positions, arith::ConstantIndexOp::create(b, block));
}

Value FusedAttentionBuilder::readRow(ImplicitLocOpBuilder &lb, Value source,
                                     ValueRange indices) {
  static const bool kInBounds[] = {true};
  return vector::TransferReadOp::create(lb, vectorType, source, indices, zero,
                                        ArrayRef<bool>(kInBounds));
}

Value FusedAttentionBuilder::lanes(ImplicitLocOpBuilder &tb, Value scalar) {
  return vector::BroadcastOp::create(
      tb, VectorType::get({block}, scalar.getType()), scalar);
}

/// A vector's sum by halves, in a fixed tree (no reassociation left to
/// LLVM, so the order cannot depend on the surrounding code). Ops are
/// created in sequence, never two in one call's arguments, whose order of
/// evaluation differs between compilers (and the IR with it).
Value FusedAttentionBuilder::treeSum(ImplicitLocOpBuilder &tb, Value v) {
  int64_t width = cast<VectorType>(v.getType()).getDimSize(0);
  while (width > 1 && width % 2 == 0) {
    width /= 2;
    auto [low, high] = halves(tb, v, width);
    v = arith::AddFOp::create(tb, low, high);
  }
  return width == 1 ? Value(vector::ExtractOp::create(tb, v, 0))
                    : Value(vector::ReductionOp::create(
                          tb, vector::CombiningKind::ADD, v));
}

/// One position's products folded into one register by multiply-adds over
/// head_dim (chunks in order).
Value FusedAttentionBuilder::foldProducts(ImplicitLocOpBuilder &tb, Value q,
                                          Value k) {
  Value acc;
  for (int64_t c = 0; c < headDim; c += kLanes) {
    Value qc = vector::ExtractStridedSliceOp::create(tb, q, {c}, {kLanes}, {1});
    Value kc = vector::ExtractStridedSliceOp::create(tb, k, {c}, {kLanes}, {1});
    acc = acc ? Value(vector::FMAOp::create(tb, qc, kc, acc))
              : Value(arith::MulFOp::create(tb, qc, kc));
  }
  return acc;
}

/// A block's maximum by halves.
Value FusedAttentionBuilder::blockMaximum(ImplicitLocOpBuilder &tb, Value v) {
  int64_t width = block;
  while (width > 1 && width % 2 == 0) {
    width /= 2;
    auto [low, high] = halves(tb, v, width);
    v = larger(tb, low, high);
  }
  return width == 1 ? Value(vector::ExtractOp::create(tb, v, 0))
                    : Value(vector::ReductionOp::create(
                          tb, vector::CombiningKind::MAXNUMF, v));
}

/// The modifier's body on one element (b, h, s, t) of the scores.
Value FusedAttentionBuilder::modify(ImplicitLocOpBuilder &tb, Value score,
                                    ArrayRef<Value> ivs) {
  linalg::GenericOp modifier = attention.modifier;
  IRMapping mapping;
  for (OpOperand *input : modifier.getDpsInputOperands()) {
    BlockArgument arg = modifier.getMatchingBlockArgument(input);
    AffineMap map = modifier.getMatchingIndexingMap(input);
    if (input->get() == attention.scores.getResult(0) && map.isIdentity()) {
      mapping.map(arg, score);
      continue;
    }
    SmallVector<Value> indices;
    for (AffineExpr expr : map.getResults())
      indices.push_back(isa<AffineDimExpr>(expr)
                            ? ivs[cast<AffineDimExpr>(expr).getPosition()]
                            : c0);
    mapping.map(arg, tensor::ExtractOp::create(tb, input->get(), indices));
  }
  for (Operation &op : modifier.getBody()->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    tb.clone(op, mapping);
  }
  return mapping.lookup(modifier.getBody()->getTerminator()->getOperand(0));
}

Value FusedAttentionBuilder::scalarIndex(const BlockContext &at,
                                         AffineExpr expr, Value position) {
  auto dim = dyn_cast<AffineDimExpr>(expr);
  if (!dim)
    return c0;
  return dim.getPosition() == 3 ? position : at.ivs[dim.getPosition()];
}

/// Clones `op`'s body on lanes; `dims` says which dimension of the scores
/// each of its loops is.
Value FusedAttentionBuilder::vectorizeBody(ImplicitLocOpBuilder &tb,
                                           const BlockContext &at,
                                           linalg::GenericOp op,
                                           ArrayRef<AffineExpr> dims,
                                           IRMapping &mapping) {
  Block *body = op.getBody();
  for (Operation &o : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(o)) {
      AffineExpr dim = dims[index.getDim()];
      mapping.map(index.getResult(),
                  isPosition(dim) ? at.positionLanes
                                  : lanes(tb, scalarIndex(at, dim, Value())));
      continue;
    }
    if (o.getNumOperands() == 0) {
      mapping.map(o.getResult(0), lanes(tb, tb.clone(o)->getResult(0)));
      continue;
    }
    OperationState state(o.getLoc(), o.getName());
    state.addAttributes(o.getAttrs());
    for (Value operand : o.getOperands()) {
      Value mapped = mapping.lookupOrNull(operand);
      // Values from outside the body are scalars: one per block.
      state.addOperands(mapped ? mapped : lanes(tb, operand));
    }
    for (Type type : o.getResultTypes())
      state.addTypes(VectorType::get({block}, type));
    mapping.map(o.getResults(), tb.create(state)->getResults());
  }
  Value yielded = body->getTerminator()->getOperand(0);
  Value result = mapping.lookupOrNull(yielded);
  return result ? result : lanes(tb, yielded);
}

/// An input of the modifier on a block of positions: read as a vector where
/// it is contiguous, recomputed from its inputs where an elementwise
/// linalg.generic makes it (a causal mask from the positions), and gathered
/// per lane otherwise; an input that does not vary with the position is
/// read once and broadcast.
Value FusedAttentionBuilder::gather(ImplicitLocOpBuilder &tb,
                                    const BlockContext &at, Value tensor,
                                    ArrayRef<AffineExpr> place, int depth) {
  auto positionDims = llvm::count_if(place, isPosition);
  auto indicesAt = [&](Value position) {
    return llvm::map_to_vector(place, [&](AffineExpr expr) {
      return scalarIndex(at, expr, position);
    });
  };
  if (!positionDims)
    return lanes(tb, tensor::ExtractOp::create(tb, tensor, indicesAt({})));
  if (linalg::GenericOp producer = elementwiseProducer(tensor);
      producer && depth < 4) {
    IRMapping mapping;
    for (OpOperand *input : producer.getDpsInputOperands()) {
      Place inputPlace;
      for (AffineExpr expr : producer.getMatchingIndexingMap(input).getResults())
        inputPlace.push_back(isa<AffineDimExpr>(expr)
                                 ? place[cast<AffineDimExpr>(expr).getPosition()]
                                 : expr);
      mapping.map(producer.getMatchingBlockArgument(input),
                  gather(tb, at, input->get(), inputPlace, depth + 1));
    }
    return vectorizeBody(tb, at, producer, place, mapping);
  }
  Type elementType = cast<RankedTensorType>(tensor.getType()).getElementType();
  // Contiguous positions: one read from the block's first (lanes past the
  // end get padding). Not for i1, whose vectors are packed bits in memory
  // and whose tensors are not.
  if (positionDims == 1 && isPosition(place.back()) &&
      !elementType.isInteger(1)) {
    Value padding =
        arith::ConstantOp::create(tb, elementType, tb.getZeroAttr(elementType));
    return vector::TransferReadOp::create(
        tb, VectorType::get({block}, elementType), tensor,
        indicesAt(at.first), padding, ArrayRef<bool>{false});
  }
  SmallVector<Value> elements;
  for (Value position : at.clamped)
    elements.push_back(tensor::ExtractOp::create(tb, tensor, indicesAt(position)));
  return vector::FromElementsOp::create(
      tb, VectorType::get({block}, elementType), elements);
}

/// The modifier's body on a whole block of scores, when its ops are
/// elementwise.
Value FusedAttentionBuilder::modifyBlock(ImplicitLocOpBuilder &tb,
                                         const BlockContext &at, Value scores) {
  linalg::GenericOp modifier = attention.modifier;
  Place scoreDims;
  for (unsigned d = 0; d < 4; ++d)
    scoreDims.push_back(getAffineDimExpr(d, b.getContext()));
  IRMapping mapping;
  for (OpOperand *input : modifier.getDpsInputOperands()) {
    BlockArgument arg = modifier.getMatchingBlockArgument(input);
    AffineMap map = modifier.getMatchingIndexingMap(input);
    mapping.map(arg, input->get() == attention.scores.getResult(0) &&
                             map.isIdentity()
                         ? scores
                         : gather(tb, at, input->get(),
                                  Place(map.getResults()), 0));
  }
  return vectorizeBody(tb, at, modifier, scoreDims, mapping);
}

/// One row's scores of a block of positions: kLanes positions at once when
/// head_dim and the block are whole registers, else each a tree sum.
Value FusedAttentionBuilder::blockScores(ImplicitLocOpBuilder &tb, Value query,
                                         ArrayRef<Value> keys) {
  if (!registerScores) {
    SmallVector<Value> scores;
    for (int64_t j = 0; j < block; ++j)
      scores.push_back(treeSum(tb, arith::MulFOp::create(tb, query, keys[j])));
    return vector::FromElementsOp::create(tb, blockType, scores);
  }
  SmallVector<Value> groups;
  for (int64_t j = 0; j < block; j += kLanes) {
    SmallVector<Value> folded;
    for (int64_t l = 0; l < kLanes; ++l)
      folded.push_back(foldProducts(tb, query, keys[j + l]));
    groups.push_back(laneScores(tb, folded));
  }
  Value xs = groups.size() == 1 ? groups.front() : blockZeros;
  for (auto [g, group] : llvm::enumerate(groups))
    if (groups.size() > 1)
      xs = vector::InsertStridedSliceOp::create(tb, group, xs,
                                                {int64_t(g) * kLanes}, {1});
  return xs;
}

/// One row's state (running maximum, the weights' sums per lane, weighted
/// sum) after a block of scores `xs`.
SmallVector<Value> FusedAttentionBuilder::updateRow(ImplicitLocOpBuilder &tb,
                                                    Value xs, Value valueHead,
                                                    ArrayRef<Value> clamped,
                                                    ValueRange rowState) {
  Value maximum = rowState[0], sums = rowState[1], acc = rowState[2];
  Value newMax = larger(tb, maximum, blockMaximum(tb, xs));
  // While every score so far is -inf (masked), so is m': subtract 0
  // instead, so exp gives 0, not NaN.
  Value safeMax = arith::SelectOp::create(
      tb, arith::CmpFOp::create(tb, arith::CmpFPredicate::OEQ, newMax, negInf),
      zero, newMax);
  Value rescale =
      math::ExpOp::create(tb, arith::SubFOp::create(tb, maximum, safeMax));
  Value weights = math::ExpOp::create(
      tb, arith::SubFOp::create(
              tb, xs, vector::BroadcastOp::create(tb, blockType, safeMax)));
  // Weights are never -0, so zero ones leave the sums as they are.
  Value newSums = vector::FMAOp::create(
      tb, sums, vector::BroadcastOp::create(tb, blockType, rescale), weights);
  Value rescaled = arith::MulFOp::create(
      tb, acc, vector::BroadcastOp::create(tb, vectorType, rescale));
  // A zero weight (masked, absent or underflowed) leaves the weighted sum as
  // it is, also its sign of zero, whatever the value row holds: selected per
  // position, in the blocks that have one (the last ones of a row); the
  // others add every row.
  Value allWeighted = vector::ReductionOp::create(
      tb, vector::CombiningKind::AND,
      arith::CmpFOp::create(tb, arith::CmpFPredicate::UNE, weights,
                            blockZeros));
  auto weighAll = [&](OpBuilder &ob, Location loc, bool skipZeros) {
    ImplicitLocOpBuilder wb(loc, ob);
    Value sum = rescaled;
    for (int64_t j = 0; j < block; ++j) {
      // Each value row read where it is used: read with the keys, the rows
      // stayed live across the block's exp and were spilled.
      Value weight = vector::ExtractOp::create(wb, weights, j);
      Value valueRow =
          readRow(wb, attention.values.rows, {sequence, valueHead, clamped[j], c0});
      Value weighted = vector::FMAOp::create(
          wb, vector::BroadcastOp::create(wb, vectorType, weight), valueRow,
          sum);
      sum = skipZeros
                ? Value(arith::SelectOp::create(
                      wb,
                      arith::CmpFOp::create(wb, arith::CmpFPredicate::OEQ,
                                            weight, zero),
                      sum, weighted))
                : weighted;
    }
    scf::YieldOp::create(wb, sum);
  };
  auto weighted = scf::IfOp::create(
      tb, allWeighted,
      [&](OpBuilder &ob, Location loc) { weighAll(ob, loc, false); },
      [&](OpBuilder &ob, Location loc) { weighAll(ob, loc, true); });
  return {newMax, newSums, weighted.getResult(0)};
}

/// One block of `block` positions from `first` for the rows `rowIndices`:
/// the scores, the block's maximum, one rescale and a vector of weights per
/// row. Positions past the end (the last block) get the score -inf, as
/// masked ones do, and change nothing: a row's arithmetic is the same
/// whether a later position is masked or absent, so a one-row forward and a
/// longer one agree bit for bit.
SmallVector<Value> FusedAttentionBuilder::updateBlock(
    ImplicitLocOpBuilder &tb, Value first, Value head, Value keyHead,
    Value valueHead, ArrayRef<Value> rowIndices, ArrayRef<Value> queries,
    ValueRange state) {
  Value positionLanes = arith::AddIOp::create(
      tb, vector::BroadcastOp::create(tb, indexBlockType, first), blockOffsets);
  Value inRange = arith::CmpIOp::create(tb, arith::CmpIPredicate::ult,
                                        positionLanes, positionsLanes);
  Value clampedLanes =
      arith::MinUIOp::create(tb, positionLanes, lastPositionLanes);
  SmallVector<Value> keys, clamped;
  for (int64_t j = 0; j < block; ++j) {
    Value position =
        arith::AddIOp::create(tb, first, arith::ConstantIndexOp::create(tb, j));
    clamped.push_back(arith::MinUIOp::create(tb, position, lastPosition));
    keys.push_back(
        readRow(tb, attention.keys.rows, {sequence, keyHead, clamped.back(), c0}));
  }
  SmallVector<Value> next;
  for (auto [r, row] : llvm::enumerate(rowIndices)) {
    SmallVector<Value> ivs = {sequence, head, row, Value()};
    Value xs = blockScores(tb, queries[r], keys);
    if (blockModifier) {
      xs = modifyBlock(tb, BlockContext{ivs, first, clampedLanes, clamped}, xs);
    } else if (attention.modifier) {
      SmallVector<Value> modified;
      for (int64_t j = 0; j < block; ++j) {
        ivs[3] = clamped[j];
        modified.push_back(modify(tb, vector::ExtractOp::create(tb, xs, j), ivs));
      }
      xs = vector::FromElementsOp::create(tb, blockType, modified);
    }
    xs = arith::SelectOp::create(tb, inRange, xs, blockNegInf);
    llvm::append_range(next, updateRow(tb, xs, valueHead, clamped,
                                       state.slice(3 * r, 3)));
  }
  return next;
}

/// `rowCount` rows from `firstRow`: one pass over the position blocks, then
/// each row's weighted sum / sum written out.
Value FusedAttentionBuilder::buildRows(ImplicitLocOpBuilder &ib, Value firstRow,
                                       int64_t rowCount, Value head,
                                       Value keyHead, Value valueHead,
                                       Value out) {
  SmallVector<Value> rowIndices, queries, initial;
  for (int64_t r = 0; r < rowCount; ++r) {
    rowIndices.push_back(arith::AddIOp::create(
        ib, firstRow, arith::ConstantIndexOp::create(ib, r)));
    queries.push_back(
        readRow(ib, attention.query, {sequence, head, rowIndices.back(), c0}));
    initial.append({negInf, blockZeros, zeros});
  }
  auto blockLoop = scf::ForOp::create(
      ib, c0, blockCount, c1, initial,
      [&](OpBuilder &pb, Location loc, Value blockIndex, ValueRange state) {
        ImplicitLocOpBuilder tb(loc, pb);
        Value first = arith::MulIOp::create(
            tb, blockIndex, arith::ConstantIndexOp::create(tb, block));
        scf::YieldOp::create(tb, updateBlock(tb, first, head, keyHead,
                                             valueHead, rowIndices, queries,
                                             state));
      });
  static const bool kInBounds[] = {true};
  for (int64_t r = 0; r < rowCount; ++r) {
    Value result = arith::DivFOp::create(
        ib, blockLoop.getResult(3 * r + 2),
        vector::BroadcastOp::create(
            ib, vectorType, treeSum(ib, blockLoop.getResult(3 * r + 1))));
    out = vector::TransferWriteOp::create(
              ib, result, out, ValueRange{sequence, head, rowIndices[r], c0},
              ArrayRef<bool>(kInBounds))
              .getResult();
  }
  return out;
}

/// Each sequence of the batch (its own keys and values, at its own length:
/// one forward over a cache of slots), then each head.
Value FusedAttentionBuilder::build(int64_t rowsPerGroup) {
  auto batchLoop = scf::ForOp::create(
      b, c0, tensor::DimOp::create(b, attention.query, 0), c1,
      ValueRange{init},
      [&](OpBuilder &sb, Location loc, Value batchRow, ValueRange iter) {
        ImplicitLocOpBuilder lb(loc, sb);
        sequence = batchRow;
        scf::YieldOp::create(lb, buildHeads(lb, rowsPerGroup, iter[0]));
      });
  return batchLoop.getResult(0);
}

/// Rows in groups that share each key and value load, then the rest one by
/// one: the same arithmetic per row either way.
Value FusedAttentionBuilder::buildHeads(ImplicitLocOpBuilder &sb,
                                        int64_t rowsPerGroup, Value out) {
  int64_t group = rowsPerGroup;
  Value groupSize = arith::ConstantIndexOp::create(sb, group);
  Value groupedRows = arith::MulIOp::create(
      sb, arith::DivUIOp::create(sb, rows, groupSize), groupSize);
  auto headLoop = scf::ForOp::create(
      sb, c0, arith::ConstantIndexOp::create(sb, heads), c1, ValueRange{out},
      [&](OpBuilder &hb, Location loc, Value head, ValueRange headIter) {
        ImplicitLocOpBuilder lb(loc, hb);
        Value keyHead = arith::DivUIOp::create(
            lb, head, arith::ConstantIndexOp::create(lb, attention.keys.repeat));
        Value valueHead = arith::DivUIOp::create(
            lb, head,
            arith::ConstantIndexOp::create(lb, attention.values.repeat));
        Value out = headIter[0];
        for (auto [from, to, count] :
             {std::make_tuple(c0, groupedRows, group),
              std::make_tuple(groupedRows, rows, int64_t(1))}) {
          if (count == 1 && group == 1 && from == groupedRows)
            break;
          auto rowLoop = scf::ForOp::create(
              lb, from, to, arith::ConstantIndexOp::create(lb, count),
              ValueRange{out},
              [&, count = count](OpBuilder &rb, Location loc, Value firstRow,
                                 ValueRange rowIter) {
                ImplicitLocOpBuilder ib(loc, rb);
                scf::YieldOp::create(ib, buildRows(ib, firstRow, count, head,
                                                   keyHead, valueHead,
                                                   rowIter[0]));
              });
          out = rowLoop.getResult(0);
        }
        scf::YieldOp::create(lb, out);
      });
  return headLoop.getResult(0);
}

namespace {
struct FuseAttentionPass
    : public specula::impl::SpecFuseAttentionBase<FuseAttentionPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override {
    if (rowsPerGroup < 1 || rowsPerGroup > 16)
      return emitError(UnknownLoc::get(context))
             << "spec-fuse-attention: rows-per-group must be between 1 and "
                "16, got "
             << static_cast<int64_t>(rowsPerGroup);
    if (positionsPerBlock < 1 || positionsPerBlock > 64)
      return emitError(UnknownLoc::get(context))
             << "spec-fuse-attention: positions-per-block must be between 1 "
                "and 64, got "
             << static_cast<int64_t>(positionsPerBlock);
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Attention> attentions = findAttentions(func);
    for (Attention &attention : attentions) {
      ImplicitLocOpBuilder b(attention.output.getLoc(), attention.output);
      Value fused = FusedAttentionBuilder(b, attention, positionsPerBlock)
                        .build(rowsPerGroup);
      attention.output.getResult(0).replaceAllUsesWith(fused);
    }
    // What only fed the replaced ops: the scores, softmax, the expanded and
    // transposed keys and values.
    IRRewriter rewriter(func.getContext());
    (void)runRegionDCE(rewriter, func->getRegions());
    if (!attentions.empty())
      readPastDisjointWrites(func);
  }
};
} // namespace
