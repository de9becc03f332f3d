//===- LowerSteps.cpp - spec step and cache ops to tensors ----------------===//

#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace specula {
#define GEN_PASS_DEF_SPECLOWERSTEPS
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

/// The tensor a cache lowers to: keys and values of every layer.
static RankedTensorType cacheTensorType(KVCacheType cache) {
  SmallVector<int64_t> shape{2};
  llvm::append_range(shape, cache.getShape());
  return RankedTensorType::get(shape, cache.getElementType());
}

namespace {
/// vectorArgmaxRows' constants and steps.
class VectorArgmax {
public:
  VectorArgmax(OpBuilder &b, Location loc, Value rows, int64_t lanes);
  Value build();

private:
  SmallVector<Value> chunk(OpBuilder &cb, Value row, Value column,
                           ValueRange state, bool inBounds);
  Value rowArgmax(OpBuilder &rb, Value row);

  OpBuilder &b;
  Location loc;
  Value rows;
  RankedTensorType type;
  VectorType valuesType, indicesType;
  Value c0, c1, step, columns, fullColumns, negInf, negInfs, noColumns,
      lastColumns, laneOffsets, zeroToken;
};
} // namespace

VectorArgmax::VectorArgmax(OpBuilder &b, Location loc, Value rows,
                           int64_t lanes)
    : b(b), loc(loc), rows(rows),
      type(cast<RankedTensorType>(rows.getType())) {
  auto floatType = cast<FloatType>(type.getElementType());
  valuesType = VectorType::get({lanes}, floatType);
  indicesType = VectorType::get({lanes}, b.getI64Type());
  c0 = arith::ConstantIndexOp::create(b, loc, 0);
  c1 = arith::ConstantIndexOp::create(b, loc, 1);
  step = arith::ConstantIndexOp::create(b, loc, lanes);
  columns = tensor::DimOp::create(b, loc, rows, 1);
  fullColumns = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, columns, step), step);
  negInf = arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                /*Negative=*/true)));
  negInfs = vector::BroadcastOp::create(b, loc, valuesType, negInf);
  auto i64Splat = [&](int64_t value) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(indicesType, b.getI64IntegerAttr(value)));
  };
  noColumns = i64Splat(-1);
  lastColumns = i64Splat(INT64_MAX);
  laneOffsets = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          indicesType, llvm::map_to_vector(llvm::seq<int64_t>(0, lanes),
                                           [&](int64_t l) -> Attribute {
                                             return b.getI64IntegerAttr(l);
                                           })));
  zeroToken = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
}

/// One chunk of the lanes' count of columns from `column` into the lanes'
/// state (maximum, its column).
SmallVector<Value> VectorArgmax::chunk(OpBuilder &cb, Value row, Value column,
                                       ValueRange state, bool inBounds) {
  Value values = vector::TransferReadOp::create(
      cb, loc, valuesType, rows, ValueRange{row, column}, negInf,
      ArrayRef<bool>{inBounds});
  Value chunkColumns = arith::AddIOp::create(
      cb, loc,
      vector::BroadcastOp::create(
          cb, loc, indicesType,
          arith::IndexCastOp::create(cb, loc, cb.getI64Type(), column)),
      laneOffsets);
  Value take = arith::CmpFOp::create(cb, loc, arith::CmpFPredicate::OGT,
                                     values, state[0]);
  return {arith::SelectOp::create(cb, loc, take, values, state[0]),
          arith::SelectOp::create(cb, loc, take, chunkColumns, state[1])};
}

/// Row `row`'s first maximum, as a token.
Value VectorArgmax::rowArgmax(OpBuilder &rb, Value row) {
  auto chunkLoop = scf::ForOp::create(
      rb, loc, c0, fullColumns, step, ValueRange{negInfs, noColumns},
      [&](OpBuilder &cb, Location, Value column, ValueRange state) {
        scf::YieldOp::create(cb, loc, chunk(cb, row, column, state, true));
      });
  // The last, partial chunk reads -inf past the end: never taken.
  auto tail = scf::IfOp::create(
      rb, loc,
      arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, fullColumns,
                            columns),
      [&](OpBuilder &cb, Location) {
        scf::YieldOp::create(
            cb, loc, chunk(cb, row, fullColumns, chunkLoop.getResults(), false));
      },
      [&](OpBuilder &cb, Location) {
        scf::YieldOp::create(cb, loc, chunkLoop.getResults());
      });
  Value best = tail.getResult(0), bestColumns = tail.getResult(1);
  Value maximum = vector::ReductionOp::create(
      rb, loc, vector::CombiningKind::MAXNUMF, best);
  Value holding = arith::CmpFOp::create(
      rb, loc, arith::CmpFPredicate::OEQ, best,
      vector::BroadcastOp::create(rb, loc, valuesType, maximum));
  Value first = vector::ReductionOp::create(
      rb, loc, vector::CombiningKind::MINSI,
      arith::SelectOp::create(rb, loc, holding, bestColumns, lastColumns));
  Value firstValue =
      tensor::ExtractOp::create(rb, loc, rows, ValueRange{row, c0});
  Value keepFirst = arith::OrIOp::create(
      rb, loc,
      arith::CmpFOp::create(rb, loc, arith::CmpFPredicate::OEQ, maximum,
                            negInf),
      arith::CmpFOp::create(rb, loc, arith::CmpFPredicate::UNO, firstValue,
                            firstValue));
  return arith::SelectOp::create(rb, loc, keepFirst, zeroToken, first);
}

Value VectorArgmax::build() {
  Value numRows = tensor::DimOp::create(b, loc, rows, 0);
  SmallVector<Value> dynamicRows;
  if (type.isDynamicDim(0))
    dynamicRows.push_back(numRows);
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{type.getDimSize(0)}, b.getI64Type(),
      dynamicRows);
  auto rowLoop = scf::ForOp::create(
      b, loc, c0, numRows, c1, ValueRange{init},
      [&](OpBuilder &rb, Location, Value row, ValueRange rowIter) {
        Value token = rowArgmax(rb, row);
        scf::YieldOp::create(rb, loc,
                             ValueRange{tensor::InsertOp::create(
                                 rb, loc, token, rowIter[0], ValueRange{row})});
      });
  return rowLoop.getResult(0);
}

/// The first index of the maximum of each row of `rows` (R x V), as i64, in
/// vectors of `lanes` columns: lane l keeps the largest value of columns l,
/// l + lanes, ... and the first column holding it (a strict comparison, so
/// NaNs and later ties are never taken); the row's result is the smallest
/// column among the lanes holding the largest value. That is the scalar
/// reduction's result (the first maximum of the values that are not NaN)
/// except where it starts from a NaN or every value is -inf or NaN: it
/// keeps column 0 then, and so does this. A scalar loop carried the running
/// maximum and index through memory, one store-to-load chain per column.
static Value vectorArgmaxRows(OpBuilder &b, Location loc, Value rows,
                              int64_t lanes) {
  return VectorArgmax(b, loc, rows, lanes).build();
}

/// The first index of the maximum of each row of `rows` (R x V), as i64:
/// ties go to the smallest index, as torch and ONNX ArgMax do.
/// `lanes` > 0: in vectors of that many lanes (see vectorArgmaxRows); 0: as
/// a linalg reduction, which every device's pipeline schedules.
static Value argmaxRows(OpBuilder &b, Location loc, Value rows, int64_t lanes) {
  if (lanes > 0)
    return vectorArgmaxRows(b, loc, rows, lanes);
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(rows.getType());
  Type elementType = type.getElementType();
  int64_t numRows = type.getDimSize(0);
  SmallVector<Value> dynamicRows;
  if (type.isDynamicDim(0))
    dynamicRows.push_back(tensor::DimOp::create(b, loc, rows, 0));
  auto floatType = cast<FloatType>(elementType);
  Value lowest = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(floatType,
                             APFloat::getInf(floatType.getFloatSemantics(),
                                             /*Negative=*/true)));
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value best = linalg::FillOp::create(
                   b, loc, ValueRange{lowest},
                   ValueRange{tensor::EmptyOp::create(
                       b, loc, {numRows}, elementType, dynamicRows)})
                   .getResult(0);
  Value index = linalg::FillOp::create(
                    b, loc, ValueRange{zero},
                    ValueRange{tensor::EmptyOp::create(
                        b, loc, {numRows}, b.getI64Type(), dynamicRows)})
                    .getResult(0);
  auto rowMap = AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{best.getType(), index.getType()}, ValueRange{rows},
      ValueRange{best, index},
      SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(2, context),
                             rowMap, rowMap},
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                       utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value column = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, 1));
        Value greater = arith::CmpFOp::create(
            nb, l, arith::CmpFPredicate::OGT, args[0], args[1]);
        Value first =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, column,
                                  arith::ConstantOp::create(
                                      nb, l, nb.getI64IntegerAttr(0)));
        Value take = arith::OrIOp::create(nb, l, greater, first);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, take, args[0], args[1]),
                       arith::SelectOp::create(nb, l, take, column,
                                               args[2])});
      });
  return generic.getResult(1);
}

/// A uniform double in [0, 1) from a counter-based generator (splitmix64 of
/// the key and the counter): the same key and counter give the same number,
/// so a seeded run is reproducible.
static Value uniform(OpBuilder &b, Location loc, Value key, Value counter) {
  auto constant = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, b.getI64IntegerAttr(static_cast<int64_t>(v)));
  };
  auto mix = [&](Value z, uint64_t shift, uint64_t multiplier) -> Value {
    Value shifted = arith::ShRUIOp::create(b, loc, z, constant(shift));
    Value x = arith::XOrIOp::create(b, loc, z, shifted);
    return multiplier ? Value(arith::MulIOp::create(b, loc, x,
                                                     constant(multiplier)))
                      : x;
  };
  Value step = arith::AddIOp::create(b, loc, counter, constant(1));
  Value z = arith::AddIOp::create(
      b, loc, key,
      arith::MulIOp::create(b, loc, step, constant(0x9E3779B97F4A7C15ULL)));
  z = mix(z, 30, 0xBF58476D1CE4E5B9ULL);
  z = mix(z, 27, 0x94D049BB133111EBULL);
  z = mix(z, 31, 0);
  Value top = arith::ShRUIOp::create(b, loc, z, constant(11));
  Value asFloat = arith::UIToFPOp::create(b, loc, b.getF64Type(), top);
  return arith::MulFOp::create(
      b, loc, asFloat,
      arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0x1.0p-53)));
}

/// Each row of the non-negative `rows` (R x V) divided by its sum.
static Value normalizeRows(OpBuilder &b, Location loc, Value rows) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(rows.getType());
  auto floatType = cast<FloatType>(type.getElementType());
  auto rowType = RankedTensorType::get({type.getDimSize(0)}, floatType);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap perRow =
      AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context);
  Value zero =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, 0.0));
  Value sums =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{rows},
          ValueRange{linalg::FillOp::create(
                         b, loc, ValueRange{zero},
                         ValueRange{tensor::EmptyOp::create(
                             b, loc, rowType.getShape(), floatType)})
                         .getResult(0)},
          SmallVector<AffineMap>{identity, perRow},
          SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                           utils::IteratorType::reduction},
          [&](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, args[1], args[0]).getResult());
          })
          .getResult(0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{rows, sums},
             ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(),
                                                floatType)},
             SmallVector<AffineMap>{identity, perRow, identity},
             SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                              utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::DivFOp::create(nb, l, args[0], args[1]).getResult());
             })
      .getResult(0);
}

/// softmax(rows / temperature) of each row of `rows` (R x V).
static Value softmaxRows(OpBuilder &b, Location loc, Value rows,
                         double temperature) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(rows.getType());
  auto floatType = cast<FloatType>(type.getElementType());
  int64_t numRows = type.getDimSize(0);
  auto rowType = RankedTensorType::get({numRows}, floatType);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap perRow =
      AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context);
  SmallVector<utils::IteratorType> reduce{utils::IteratorType::parallel,
                                          utils::IteratorType::reduction};
  SmallVector<utils::IteratorType> map{utils::IteratorType::parallel,
                                       utils::IteratorType::parallel};
  auto filled = [&](double value, RankedTensorType t) {
    Value init = tensor::EmptyOp::create(b, loc, t.getShape(), floatType);
    Value v = arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
    return linalg::FillOp::create(b, loc, ValueRange{v}, ValueRange{init})
        .getResult(0);
  };
  Value inv = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(floatType, 1.0 / temperature));
  Value max =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{rows},
          ValueRange{filled(-INFINITY, rowType)},
          SmallVector<AffineMap>{identity, perRow}, reduce,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(
                nb, l,
                arith::MaximumFOp::create(nb, l, args[0], args[1]).getResult());
          })
          .getResult(0);
  Value exps =
      linalg::GenericOp::create(
          b, loc, TypeRange{type}, ValueRange{rows, max},
          ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(),
                                             floatType)},
          SmallVector<AffineMap>{identity, perRow, identity}, map,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value shifted = arith::MulFOp::create(
                nb, l, arith::SubFOp::create(nb, l, args[0], args[1]), inv);
            linalg::YieldOp::create(
                nb, l, math::ExpOp::create(nb, l, shifted).getResult());
          })
          .getResult(0);
  return normalizeRows(b, loc, exps);
}

/// What row `row` of `probs` holds at or above `t`: its mass in f64
/// (`byMass`) or its number of entries in i64.
static Value amountAtOrAbove(OpBuilder &b, Location loc, Value probs,
                             Value row, Value t, bool byMass) {
  int64_t vocab = cast<RankedTensorType>(probs.getType()).getDimSize(1);
  auto zeroOf = [&](OpBuilder &nb, Location l) -> Value {
    return byMass ? Value(arith::ConstantOp::create(nb, l,
                                                    nb.getF64FloatAttr(0.0)))
                  : Value(arith::ConstantOp::create(nb, l,
                                                    nb.getI64IntegerAttr(0)));
  };
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value zero = zeroOf(b, loc);
  Value first = index(0), end = index(vocab), step = index(1);
  auto total = scf::ForOp::create(
      b, loc, first, end, step, ValueRange{zero},
      [&](OpBuilder &ib, Location il, Value v, ValueRange acc) {
        Value x = tensor::ExtractOp::create(ib, il, probs, ValueRange{row, v});
        Value at =
            arith::CmpFOp::create(ib, il, arith::CmpFPredicate::OGE, x, t);
        Value add = byMass ? Value(arith::ExtFOp::create(ib, il,
                                                         ib.getF64Type(), x))
                           : Value(arith::ConstantOp::create(
                                 ib, il, ib.getI64IntegerAttr(1)));
        Value picked =
            arith::SelectOp::create(ib, il, at, add, zeroOf(ib, il));
        Value sum =
            byMass ? Value(arith::AddFOp::create(ib, il, acc[0], picked))
                   : Value(arith::AddIOp::create(ib, il, acc[0], picked));
        scf::YieldOp::create(ib, il, sum);
      });
  return total.getResult(0);
}

/// The threshold of row `row` for keepTop, found by bisection over the bit
/// patterns of non-negative floats, which order like their values: 32 exact
/// steps of one pass over the row each.
static Value rowThreshold(OpBuilder &b, Location loc, Value probs, Value row,
                          bool byMass, Value limit) {
  auto floatType = cast<FloatType>(
      cast<RankedTensorType>(probs.getType()).getElementType());
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // cond(0) holds (everything is >= 0); cond(just above 1.0) does not.
  Value lo0 = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value hi0 =
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0x3F800001));
  Value first = index(0), end = index(32), step = index(1);
  auto bisect = scf::ForOp::create(
      b, loc, first, end, step, ValueRange{lo0, hi0},
      [&](OpBuilder &nb, Location l, Value, ValueRange bounds) {
        Value lo = bounds[0], hi = bounds[1];
        Value width = arith::SubIOp::create(nb, l, hi, lo);
        Value half = arith::ShRUIOp::create(
            nb, l, width,
            arith::ConstantOp::create(nb, l, nb.getI32IntegerAttr(1)));
        Value mid = arith::AddIOp::create(nb, l, lo, half);
        Value t = arith::BitcastOp::create(nb, l, floatType, mid);
        Value amount = amountAtOrAbove(nb, l, probs, row, t, byMass);
        Value holds =
            byMass ? Value(arith::CmpFOp::create(
                         nb, l, arith::CmpFPredicate::OGE, amount, limit))
                   : Value(arith::CmpIOp::create(
                         nb, l, arith::CmpIPredicate::sge, amount, limit));
        scf::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, holds, mid, lo),
                       arith::SelectOp::create(nb, l, holds, hi, mid)});
      });
  return arith::BitcastOp::create(b, loc, floatType, bisect.getResult(0));
}

/// Keeps in each row of the probabilities `probs` (R x V) the entries at or
/// above the row's threshold, and renormalizes. Top-k (`byMass` false,
/// `limit` = k): the threshold is the k-th largest entry, so the k largest
/// stay (and ties with the k-th). Top-p (`byMass` true, `limit` = p): the
/// largest threshold whose entries at or above it hold mass >= p, so the
/// smallest set of largest entries reaching p stays.
static Value keepTop(OpBuilder &b, Location loc, Value probs, bool byMass,
                     double limit) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(probs.getType());
  auto floatType = cast<FloatType>(type.getElementType());
  int64_t numRows = type.getDimSize(0);
  Value limitValue =
      byMass ? Value(arith::ConstantOp::create(b, loc, b.getF64FloatAttr(limit)))
             : Value(arith::ConstantOp::create(
                   b, loc, b.getI64IntegerAttr(static_cast<int64_t>(limit))));
  // One bisection per row, as a loop over rows (not one per row at compile
  // time).
  Value threshold = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get({numRows}, floatType), ValueRange{},
      [&](OpBuilder &nb, Location l, ValueRange indices) {
        tensor::YieldOp::create(nb, l,
                                rowThreshold(nb, l, probs, indices[0], byMass,
                                             limitValue));
      });
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap perRow =
      AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context);
  SmallVector<utils::IteratorType> map{utils::IteratorType::parallel,
                                       utils::IteratorType::parallel};
  Value fzero = arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, 0.0));
  Value kept =
      linalg::GenericOp::create(
          b, loc, TypeRange{type}, ValueRange{probs, threshold},
          ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(),
                                             floatType)},
          SmallVector<AffineMap>{identity, perRow, identity}, map,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value at = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGE,
                                             args[0], args[1]);
            linalg::YieldOp::create(
                nb, l, arith::SelectOp::create(nb, l, at, args[0], fzero)
                           .getResult());
          })
          .getResult(0);
  return normalizeRows(b, loc, kept);
}

/// The distribution a rejection rule samples from: softmax(logits / T),
/// then top-k, then top-p on what top-k kept (as Hugging Face applies them).
static Value samplingDistribution(OpBuilder &b, Location loc, Value logits,
                                  RejectionAttr rule) {
  Value probs =
      softmaxRows(b, loc, logits, rule.getTemperature().convertToDouble());
  int64_t vocab = cast<RankedTensorType>(logits.getType()).getDimSize(1);
  if (rule.getTopK() > 0 && rule.getTopK() < vocab)
    probs = keepTop(b, loc, probs, /*byMass=*/false,
                    static_cast<double>(rule.getTopK()));
  if (rule.getTopP().convertToDouble() < 1.0)
    probs = keepTop(b, loc, probs, /*byMass=*/true,
                    rule.getTopP().convertToDouble());
  return probs;
}

/// Draws an index in [0, V) with probability proportional to weight(v) >= 0,
/// by inverting the cumulative sum at u * total (u uniform in [0, 1)).
static Value sampleIndex(OpBuilder &b, Location loc, int64_t vocab,
                         function_ref<Value(OpBuilder &, Location, Value)> weight,
                         Value u) {
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value size = arith::ConstantIndexOp::create(b, loc, vocab);
  Value fzero = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0));
  auto weightAt = [&](OpBuilder &nb, Location l, Value v) -> Value {
    Value w = weight(nb, l, v);
    return w.getType() == f64 ? w : Value(arith::ExtFOp::create(nb, l, f64, w));
  };
  Value total =
      scf::ForOp::create(b, loc, zero, size, one, ValueRange{fzero},
                         [&](OpBuilder &nb, Location l, Value v,
                             ValueRange args) {
                           scf::YieldOp::create(
                               nb, l,
                               arith::AddFOp::create(nb, l, args[0],
                                                     weightAt(nb, l, v))
                                   .getResult());
                         })
          .getResult(0);
  Value threshold = arith::MulFOp::create(b, loc, u, total);
  Value last = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(vocab - 1));
  Value notFound = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  auto search = scf::ForOp::create(
      b, loc, zero, size, one, ValueRange{fzero, last, notFound},
      [&](OpBuilder &nb, Location l, Value v, ValueRange args) {
        Value cumulative =
            arith::AddFOp::create(nb, l, args[0], weightAt(nb, l, v));
        Value past = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT,
                                           threshold, cumulative);
        Value hit = arith::AndIOp::create(nb, l, args[2], past);
        Value index = arith::IndexCastOp::create(nb, l, i64, v);
        scf::YieldOp::create(
            nb, l,
            ValueRange{cumulative,
                       arith::SelectOp::create(nb, l, hit, index, args[1]),
                       arith::AndIOp::create(
                           nb, l, args[2],
                           arith::XOrIOp::create(
                               nb, l, past,
                               arith::ConstantOp::create(
                                   nb, l, nb.getBoolAttr(true))))});
      });
  return search.getResult(1);
}

/// The slice of a lowered cache that holds positions [start, start + length)
/// of one layer's keys or values, and its type as one batch row:
/// [1, heads, length, head_dim].
struct LayerSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RankedTensorType rowType;
};
static LayerSlice layerSlice(OpBuilder &b, KVCacheType cache, CachePart part,
                             int64_t layer, OpFoldResult start,
                             OpFoldResult length) {
  LayerSlice slice;
  slice.offsets = {b.getIndexAttr(part == CachePart::Keys ? 0 : 1),
                   b.getIndexAttr(layer), b.getIndexAttr(0), start,
                   b.getIndexAttr(0)};
  slice.sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                 b.getIndexAttr(cache.getNumKVHeads()), length,
                 b.getIndexAttr(cache.getHeadDim())};
  slice.strides.assign(5, b.getIndexAttr(1));
  slice.rowType = RankedTensorType::get(
      {1, cache.getNumKVHeads(), ShapedType::kDynamic, cache.getHeadDim()},
      cache.getElementType());
  return slice;
}

/// Replaces a cache read by the view `slice` of the lowered `cache`, cast to
/// the read's type.
static void replaceWithSlice(ConversionPatternRewriter &rewriter,
                             Operation *read, Value cache,
                             const LayerSlice &slice) {
  Location loc = read->getLoc();
  Value view = tensor::ExtractSliceOp::create(rewriter, loc, slice.rowType,
                                              cache, slice.offsets,
                                              slice.sizes, slice.strides);
  Type type = read->getResult(0).getType();
  if (view.getType() != type)
    view = tensor::CastOp::create(rewriter, loc, type, view);
  rewriter.replaceOp(read, view);
}

namespace {
struct LowerAlloc : OpConversionPattern<CacheAllocOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheAllocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cacheTensorType(op.getType());
    Location loc = op.getLoc();
    Value zero = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(type.getElementType(), 0.0));
    Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                          type.getElementType());
    rewriter.replaceOp(op, linalg::FillOp::create(rewriter, loc,
                                                  ValueRange{zero},
                                                  ValueRange{empty}));
    return success();
  }
};

struct LowerWrite : OpConversionPattern<CacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value entries = adaptor.getNewEntries();
    LayerSlice slice = layerSlice(rewriter, op.getCache().getType(),
                                  op.getPart(), op.getLayer(),
                                  adaptor.getPosition(), OpFoldResult());
    if (entries.getType() != slice.rowType)
      entries = tensor::CastOp::create(rewriter, loc, slice.rowType, entries);
    slice.sizes[3] = tensor::DimOp::create(rewriter, loc, entries, 2).getResult();
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, entries, adaptor.getCache(), slice.offsets, slice.sizes,
        slice.strides);
    return success();
  }
};

struct LowerRead : OpConversionPattern<CacheReadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    replaceWithSlice(rewriter, op, adaptor.getCache(),
                     layerSlice(rewriter, op.getCache().getType(),
                                op.getPart(), op.getLayer(),
                                rewriter.getIndexAttr(0),
                                adaptor.getLength()));
    return success();
  }
};

/// One slot's positions [start, start + length) of one layer of a cache of
/// slots, as `1 x kv_heads x length x head_dim`; `slots` > 1 reads that many
/// slots from `slot` as `slots x kv_heads x length x head_dim`.
static LayerSlice slotsSlice(OpBuilder &b, KVCacheType cache, CachePart part,
                             int64_t layer, OpFoldResult slot,
                             OpFoldResult slots, OpFoldResult start,
                             OpFoldResult length) {
  LayerSlice slice;
  slice.offsets = {b.getIndexAttr(part == CachePart::Keys ? 0 : 1),
                   b.getIndexAttr(layer), slot, b.getIndexAttr(0), start,
                   b.getIndexAttr(0)};
  slice.sizes = {b.getIndexAttr(1), b.getIndexAttr(1), slots,
                 b.getIndexAttr(cache.getNumKVHeads()), length,
                 b.getIndexAttr(cache.getHeadDim())};
  slice.strides.assign(6, b.getIndexAttr(1));
  slice.rowType = RankedTensorType::get(
      {ShapedType::kDynamic, cache.getNumKVHeads(), ShapedType::kDynamic,
       cache.getHeadDim()},
      cache.getElementType());
  return slice;
}

/// A loop over the batch: row b of the entries into slot first + b at its
/// past length.
struct LowerWriteSlots : OpConversionPattern<CacheWriteSlotsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheWriteSlotsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KVCacheType type = op.getCache().getType();
    Value entries = adaptor.getNewEntries();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value rows = tensor::DimOp::create(rewriter, loc, entries, 0);
    Value count = tensor::DimOp::create(rewriter, loc, entries, 2);
    auto loop =
        scf::ForOp::create(rewriter, loc, zero, rows, one, adaptor.getCache());
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    Value row = loop.getInductionVar();
    Value length = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getIndexType(),
        tensor::ExtractOp::create(rewriter, loc, adaptor.getPastLengths(),
                                  row));
    Value slot = arith::AddIOp::create(rewriter, loc, adaptor.getFirstSlot(),
                                       row);
    LayerSlice target = slotsSlice(rewriter, type, op.getPart(), op.getLayer(),
                                   slot, rewriter.getIndexAttr(1), length,
                                   count);
    auto rowType = RankedTensorType::get(
        {1, type.getNumKVHeads(), ShapedType::kDynamic, type.getHeadDim()},
        type.getElementType());
    SmallVector<OpFoldResult> offsets{row, rewriter.getIndexAttr(0),
                                      rewriter.getIndexAttr(0),
                                      rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(1),
                                    rewriter.getIndexAttr(type.getNumKVHeads()),
                                    count,
                                    rewriter.getIndexAttr(type.getHeadDim())};
    SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
    Value entriesRow = tensor::ExtractSliceOp::create(
        rewriter, loc, rowType, entries, offsets, sizes, strides);
    Value written = tensor::InsertSliceOp::create(
        rewriter, loc, entriesRow, loop.getRegionIterArgs()[0],
        target.offsets, target.sizes, target.strides);
    scf::YieldOp::create(rewriter, loc, written);
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

struct LowerReadSlots : OpConversionPattern<CacheReadSlotsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheReadSlotsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    replaceWithSlice(rewriter, op, adaptor.getCache(),
                     slotsSlice(rewriter, op.getCache().getType(),
                                op.getPart(), op.getLayer(),
                                adaptor.getFirstSlot(), adaptor.getCount(),
                                rewriter.getIndexAttr(0), adaptor.getLength()));
    return success();
  }
};

/// A loop over the rows to move, each a slice of every layer's keys and
/// values at one position.
struct LowerMove : OpConversionPattern<CacheMoveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheMoveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache();
    auto type = cast<RankedTensorType>(cache.getType());
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value count = tensor::DimOp::create(rewriter, loc, adaptor.getFrom(), 0);
    auto loop = scf::ForOp::create(rewriter, loc, zero, count, one, cache);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    Value current = loop.getRegionIterArgs()[0];
    Value source =
        tensor::ExtractOp::create(rewriter, loc, adaptor.getFrom(), i);
    Value destination =
        arith::AddIOp::create(rewriter, loc, adaptor.getTo(), i);
    auto at = [&](Value position) {
      SmallVector<OpFoldResult> offsets(5, rewriter.getIndexAttr(0));
      offsets[3] = position;
      return offsets;
    };
    SmallVector<OpFoldResult> sizes, strides(5, rewriter.getIndexAttr(1));
    for (int64_t size : type.getShape())
      sizes.push_back(rewriter.getIndexAttr(size));
    sizes[3] = rewriter.getIndexAttr(1);
    Value row = tensor::ExtractSliceOp::create(rewriter, loc, current,
                                               at(source), sizes, strides);
    Value moved = tensor::InsertSliceOp::create(
        rewriter, loc, row, current, at(destination), sizes, strides);
    scf::YieldOp::create(rewriter, loc, moved);
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

struct LowerVerify : OpConversionPattern<VerifyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(VerifyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Type> results;
    if (failed(getTypeConverter()->convertTypes(op.getResultTypes(), results)))
      return failure();
    rewriter.replaceOpWithNewOp<func::CallOp>(op, op.getCallee(), results,
                                              adaptor.getInputs());
    return success();
  }
};

struct LowerPropose : OpConversionPattern<ProposeOp> {
  LowerPropose(const TypeConverter &converter, MLIRContext *context,
               int64_t argmaxLanes)
      : OpConversionPattern(converter, context), argmaxLanes(argmaxLanes) {}
  /// Lanes of the greedy argmax (0: a linalg reduction).
  int64_t argmaxLanes;
  LogicalResult
  matchAndRewrite(ProposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
    Location loc = op.getLoc();
    if (auto rejection = dyn_cast<RejectionAttr>(op.getRule())) {
      // Sample each row from q = softmax(logits / temperature), filtered
      // by top-k and top-p.
      Value q = samplingDistribution(rewriter, loc, adaptor.getLogits(),
                                     rejection);
      // Row r draws with the key's counter r.
      Value tokenTensor = tensor::GenerateOp::create(
          rewriter, loc,
          RankedTensorType::get({logitsType.getDimSize(0)},
                                rewriter.getI64Type()),
          ValueRange{},
          [&](OpBuilder &b, Location l, ValueRange indices) {
            Value row = indices[0];
            Value u = uniform(
                b, l, adaptor.getKey(),
                arith::IndexCastOp::create(b, l, b.getI64Type(), row));
            tensor::YieldOp::create(
                b, l,
                sampleIndex(
                    b, l, logitsType.getDimSize(1),
                    [&](OpBuilder &nb, Location nl, Value v) -> Value {
                      return tensor::ExtractOp::create(nb, nl, q,
                                                       ValueRange{row, v});
                    },
                    u));
          });
      if (tokenTensor.getType() != op.getTokens().getType())
        tokenTensor = tensor::CastOp::create(rewriter, loc,
                                             op.getTokens().getType(),
                                             tokenTensor);
      rewriter.replaceOp(op, {tokenTensor, q});
      return success();
    }
    Value tokens = argmaxRows(rewriter, loc, adaptor.getLogits(), argmaxLanes);
    if (tokens.getType() != op.getTokens().getType())
      tokens = tensor::CastOp::create(rewriter, loc, op.getTokens().getType(),
                                      tokens);
    // Greedy proposals are certain: q is one-hot.
    SmallVector<Value> dynamicRows;
    if (logitsType.isDynamicDim(0))
      dynamicRows.push_back(
          tensor::DimOp::create(rewriter, loc, adaptor.getLogits(), 0));
    Value probs = tensor::GenerateOp::create(
        rewriter, loc, logitsType, dynamicRows,
        [&](OpBuilder &b, Location l, ValueRange indices) {
          Value token = tensor::ExtractOp::create(b, l, tokens,
                                                  ValueRange{indices[0]});
          Value column = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                    indices[1]);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            token, column);
          Type f = logitsType.getElementType();
          Value certain =
              arith::ConstantOp::create(b, l, b.getFloatAttr(f, 1.0));
          Value impossible =
              arith::ConstantOp::create(b, l, b.getFloatAttr(f, 0.0));
          tensor::YieldOp::create(
              b, l,
              arith::SelectOp::create(b, l, hit, certain, impossible)
                  .getResult());
        });
    rewriter.replaceOp(op, {tokens, probs});
    return success();
  }
};

/// What one position of lossless rejection sampling reads.
struct RejectionInputs {
  Value p, q, proposals, key, one, trueValue;
};

/// Position `i` of lossless rejection sampling, given the loop's (accepted
/// count, done, next token): accept the proposal x with probability
/// min(1, p(x)/q(x)); at the first rejection, draw the next token from
/// norm(max(0, p - q)). Returns the loop's next values.
static SmallVector<Value> rejectionStep(OpBuilder &b, Location l, Value i,
                                        ValueRange args,
                                        const RejectionInputs &in) {
  Type i64 = b.getI64Type(), f64 = b.getF64Type();
  Value p = in.p, q = in.q, key = in.key, one = in.one;
  Value trueValue = in.trueValue;
  int64_t vocab = cast<RankedTensorType>(p.getType()).getDimSize(1);
  Value count = args[0], done = args[1], next = args[2];
  Value token = tensor::ExtractOp::create(b, l, in.proposals, ValueRange{i});
  Value x = arith::IndexCastOp::create(b, l, b.getIndexType(), token);
  Value px = arith::ExtFOp::create(
      b, l, f64, tensor::ExtractOp::create(b, l, p, ValueRange{i, x}).getResult());
  Value qx = arith::ExtFOp::create(
      b, l, f64, tensor::ExtractOp::create(b, l, q, ValueRange{i, x}).getResult());
  Value step = arith::IndexCastOp::create(b, l, i64, i);
  Value two = arith::ConstantOp::create(b, l, b.getI64IntegerAttr(2));
  Value counter = arith::MulIOp::create(b, l, step, two);
  Value u = uniform(b, l, key, counter);
  Value likely = arith::CmpFOp::create(
      b, l, arith::CmpFPredicate::OLT,
      arith::MulFOp::create(b, l, u, qx), px);
  Value active = arith::XOrIOp::create(b, l, done, trueValue);
  Value accepted = arith::AndIOp::create(b, l, active, likely);
  Value rejected = arith::AndIOp::create(
      b, l, active, arith::XOrIOp::create(b, l, likely, trueValue));
  Value residual = sampleIndex(
      b, l, vocab,
      [&](OpBuilder &nb, Location nl, Value v) -> Value {
        Value pv = tensor::ExtractOp::create(nb, nl, p, ValueRange{i, v});
        Value qv = tensor::ExtractOp::create(nb, nl, q, ValueRange{i, v});
        Value diff = arith::SubFOp::create(nb, nl, pv, qv);
        Value zeroF = arith::ConstantOp::create(
            nb, nl, nb.getFloatAttr(diff.getType(), 0.0));
        return arith::MaximumFOp::create(nb, nl, diff, zeroF);
      },
      uniform(b, l, key,
              arith::AddIOp::create(
                  b, l, counter,
                  arith::ConstantOp::create(b, l,
                                            b.getI64IntegerAttr(1)))));
  return {arith::SelectOp::create(b, l, accepted,
                                  arith::AddIOp::create(b, l, count, one),
                                  count),
          arith::OrIOp::create(b, l, done, rejected),
          arith::SelectOp::create(b, l, rejected, residual, next)};
}

struct LowerAccept : OpConversionPattern<AcceptOp> {
  LowerAccept(const TypeConverter &converter, MLIRContext *context,
              int64_t argmaxLanes)
      : OpConversionPattern(converter, context), argmaxLanes(argmaxLanes) {}
  /// Lanes of the greedy argmax (0: a linalg reduction).
  int64_t argmaxLanes;

  /// Lossless rejection sampling (Leviathan et al.; Chen et al.): proposal i
  /// (drawn from q_i) is accepted with probability min(1, p_i(x) / q_i(x));
  /// at the first rejection the next token is drawn from
  /// norm(max(0, p_i - q_i)); when all are accepted, from p_gamma.
  LogicalResult lowerRejection(AcceptOp op, OpAdaptor adaptor,
                               RejectionAttr rule,
                               ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    auto rowsType = cast<RankedTensorType>(op.getTargetLogits().getType());
    int64_t gamma = rowsType.getDimSize(0) - 1, vocab = rowsType.getDimSize(1);
    Value p = samplingDistribution(rewriter, loc, adaptor.getTargetLogits(),
                                   rule);
    Value q = adaptor.getProbs(), key = adaptor.getKey();
    Value proposals = adaptor.getProposals();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value falseValue =
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(false));
    Value trueValue =
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(true));
    Value noToken =
        arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(-1));
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, arith::ConstantIndexOp::create(rewriter, loc, gamma),
        one, ValueRange{zero, falseValue, noToken},
        [&](OpBuilder &b, Location l, Value i, ValueRange args) {
          scf::YieldOp::create(
              b, l,
              rejectionStep(b, l, i, args, {p, q, proposals, key, one,
                                            trueValue}));
        });
    Value lastRow = arith::ConstantIndexOp::create(rewriter, loc, gamma);
    Value bonus = sampleIndex(
        rewriter, loc, vocab,
        [&](OpBuilder &b, Location l, Value v) -> Value {
          return tensor::ExtractOp::create(b, l, p, ValueRange{lastRow, v});
        },
        uniform(rewriter, loc, key,
                arith::ConstantOp::create(rewriter, loc,
                                          rewriter.getI64IntegerAttr(2 * gamma + 2))));
    Value next = arith::SelectOp::create(rewriter, loc, loop.getResult(1),
                                         loop.getResult(2), bonus);
    if (next.getType() != op.getNext().getType())
      next = arith::TruncIOp::create(rewriter, loc, op.getNext().getType(), next);
    rewriter.replaceOp(op, {loop.getResult(0), next});
    return success();
  }

  LogicalResult
  matchAndRewrite(AcceptOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto proposalsType = cast<RankedTensorType>(op.getProposals().getType());
    Location loc = op.getLoc();
    if (auto rejection = dyn_cast<RejectionAttr>(op.getRule()))
      return lowerRejection(op, adaptor, rejection, rewriter);
    Value targets =
        argmaxRows(rewriter, loc, adaptor.getTargetLogits(), argmaxLanes);
    // The accepted count: the longest prefix where proposal == target.
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value gamma =
        arith::ConstantIndexOp::create(rewriter, loc, proposalsType.getDimSize(0));
    Value matching = arith::ConstantOp::create(rewriter, loc,
                                               rewriter.getBoolAttr(true));
    Value proposals = adaptor.getProposals();
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, gamma, one, ValueRange{zero, matching},
        [&](OpBuilder &b, Location l, Value i, ValueRange args) {
          Value proposal = tensor::ExtractOp::create(b, l, proposals,
                                                     ValueRange{i});
          Value target = tensor::ExtractOp::create(b, l, targets, ValueRange{i});
          Value same = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                             proposal, target);
          Value still = arith::AndIOp::create(b, l, args[1], same);
          Value count = arith::SelectOp::create(
              b, l, still, arith::AddIOp::create(b, l, args[0], one), args[0]);
          scf::YieldOp::create(b, l, ValueRange{count, still});
        });
    Value count = loop.getResult(0);
    Value next =
        tensor::ExtractOp::create(rewriter, loc, targets, ValueRange{count});
    if (next.getType() != op.getNext().getType())
      next = arith::TruncIOp::create(rewriter, loc, op.getNext().getType(),
                                     next);
    rewriter.replaceOp(op, {count, next});
    return success();
  }
};

/// Refuses, with one error each, what the patterns do not lower.
static LogicalResult checkSupported(ModuleOp module) {
  bool ok = true;
  auto refuse = [&](Operation *op, const Twine &why) {
    op->emitError() << why;
    ok = false;
  };
  module.walk([&](Operation *op) {
    if (auto propose = dyn_cast<ProposeOp>(op)) {
      auto logits = cast<RankedTensorType>(propose.getLogits().getType());
      // Greedy picks take any number of rows (a batch's).
      if (logits.getRank() != 2 || logits.isDynamicDim(1) ||
          (logits.isDynamicDim(0) && propose.getRule().isSampling()))
        refuse(op, "expects rows x vocabulary logits of static shape (greedy: "
                   "a static vocabulary)");
    } else if (auto accept = dyn_cast<AcceptOp>(op)) {
      if (!accept.getProposals().getType().hasStaticShape() ||
          !cast<RankedTensorType>(accept.getTargetLogits().getType())
               .hasStaticShape())
        refuse(op, "expects proposals and target logits of static shape");
    } else if (isa<CacheAppendOp, CacheViewOp, CacheCommitOp,
                   CacheRollbackOp, CacheLengthOp>(op)) {
      refuse(op, "the loop-level cache ops (append, view, commit, rollback, "
                 "length) are not lowered; spec-kv-cache-inplace and "
                 "spec-lower-generate use write/read at explicit lengths");
    }
  });
  return success(ok);
}

struct LowerStepsPass
    : public specula::impl::SpecLowerStepsBase<LowerStepsPass> {
  using SpecLowerStepsBase::SpecLowerStepsBase;

  LogicalResult initialize(MLIRContext *context) override {
    if (argmaxLanes < 0 || argmaxLanes > 64 ||
        !llvm::isPowerOf2_64(std::max<int64_t>(argmaxLanes, 1)))
      return emitError(UnknownLoc::get(context))
             << "spec-lower-steps: argmax-lanes must be 0 (a linalg "
                "reduction) or a power of two up to 64, got "
             << static_cast<int64_t>(argmaxLanes);
    return success();
  }

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    if (failed(checkSupported(getOperation())))
      return signalPassFailure();
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion(
        [](KVCacheType cache) -> Type { return cacheTensorType(cache); });

    ConversionTarget target(*context);
    target.addIllegalDialect<SpecDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect,
                           scf::SCFDialect, vector::VectorDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return converter.isSignatureLegal(func.getFunctionType()) &&
             converter.isLegal(&func.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addLegalOp<DecoderOp>();

    RewritePatternSet patterns(context);
    patterns.add<LowerAlloc, LowerWrite, LowerRead, LowerWriteSlots,
                 LowerReadSlots, LowerMove, LowerVerify>(converter, context);
    patterns.add<LowerPropose, LowerAccept>(converter, context, argmaxLanes);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // The compositions are now the generate functions: nothing left for
    // the decoder ops to describe to later, LLVM-bound passes.
    for (auto decoder :
         llvm::make_early_inc_range(getOperation().getOps<DecoderOp>()))
      decoder.erase();
  }
};
} // namespace
