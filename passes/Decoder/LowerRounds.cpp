//===- LowerRounds.cpp - a decoder's batched rounds -----------------------===//
//
// A server decodes many sequences at once: their rows share each target
// forward. The runtime keeps one cache of sequence slots and calls these
// functions between its own scheduling decisions (which sequence joins,
// which leaves): a prefill per joining sequence, then rounds over the
// batch. Each picks tokens with the decode loops' own greedy rule, so a
// sequence's tokens are its target-only greedy tokens in any batch.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

namespace specula {
#define GEN_PASS_DEF_SPECLOWERROUNDS
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
/// Where the batched target takes and returns what a round passes.
struct SlotTarget {
  func::FuncOp func;
  unsigned tokens, positions, cache, firstSlot, lengths;
  unsigned logits, cacheResult;
  KVCacheType cacheType;
  int64_t vocab;
};

/// Builds one decoder's prefill and round.
class RoundBuilder {
public:
  RoundBuilder(SlotTarget target, Location loc)
      : target(target), loc(loc), context(loc.getContext()) {}
  void buildPrefill(ImplicitLocOpBuilder &b, func::FuncOp func);
  void buildRound(ImplicitLocOpBuilder &b, func::FuncOp func);

private:
  Value toRows(ImplicitLocOpBuilder &b, Value values, Value rows,
               Value columns, Type type);
  Value positions(ImplicitLocOpBuilder &b, Value count, Type type);
  func::ReturnOp forwardAndPick(ImplicitLocOpBuilder &b, Value ids,
                                Value rowPositions, Value cache, Value first,
                                Value lengths, Value rows, Value row,
                                bool oneToken);

  SlotTarget target;
  Location loc;
  MLIRContext *context;
};
} // namespace

static FailureOr<SlotTarget> analyzeSlotTarget(func::FuncOp func,
                                               DecoderOp decoder) {
  auto refuse = [&](const Twine &what) {
    return decoder.emitError() << "decoder @" << decoder.getSymName()
                               << ": its batched target @"
                               << func.getSymName() << " " << what;
  };
  SlotTarget target;
  target.func = func;
  unsigned *argumentSlots[] = {&target.tokens, &target.positions,
                               &target.cache, &target.firstSlot,
                               &target.lengths};
  IOKind argumentKinds[] = {IOKind::TokenIds, IOKind::PositionIds,
                            IOKind::KVCache, IOKind::FirstSlot,
                            IOKind::PastLengths};
  for (auto [slot, kind] : llvm::zip(argumentSlots, argumentKinds)) {
    std::optional<unsigned> index = findArgument(func, kind);
    if (!index)
      return refuse("takes no " + stringifyIOKind(kind) +
                    " (run spec-kv-cache-inplace first)");
    *slot = *index;
  }
  if (func.getNumArguments() != 5)
    return refuse("takes arguments besides token ids, positions, its cache, "
                  "the first slot and the past lengths");
  std::optional<unsigned> logits = findResult(func, IOKind::Logits);
  std::optional<unsigned> cache = findResult(func, IOKind::KVCache);
  if (!logits || !cache)
    return refuse("does not return logits and its cache");
  target.logits = *logits;
  target.cacheResult = *cache;
  target.cacheType = dyn_cast<KVCacheType>(func.getArgumentTypes()[target.cache]);
  auto logitsType = dyn_cast<RankedTensorType>(func.getResultTypes()[*logits]);
  if (!target.cacheType || !target.cacheType.hasSlots() || !logitsType ||
      logitsType.getRank() != 3 || logitsType.isDynamicDim(2))
    return refuse("has no cache of slots or no batch x rows x vocabulary "
                  "logits");
  target.vocab = logitsType.getDimSize(2);
  return target;
}

/// `values` (rows * columns of them) as a rows x columns tensor of `type`.
Value RoundBuilder::toRows(ImplicitLocOpBuilder &b, Value values, Value rows,
                           Value columns, Type type) {
  Type i64 = b.getI64Type();
  Value shape = tensor::FromElementsOp::create(
      b, RankedTensorType::get({2}, i64),
      ValueRange{arith::IndexCastOp::create(b, i64, rows),
                 arith::IndexCastOp::create(b, i64, columns)});
  auto dynamic = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, i64);
  Value reshaped = tensor::ReshapeOp::create(b, dynamic, values, shape);
  return reshaped.getType() == type
             ? reshaped
             : Value(tensor::CastOp::create(b, type, reshaped));
}

/// 0, 1, ..., count - 1 as 1 x count positions of `type`.
Value RoundBuilder::positions(ImplicitLocOpBuilder &b, Value count,
                              Type type) {
  Value empty = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{b.getIndexAttr(1), count}, b.getI64Type());
  auto generic = linalg::GenericOp::create(
      b, empty.getType(), ValueRange{}, ValueRange{empty},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(2)},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange) {
        Value column = linalg::IndexOp::create(nb, l, 1);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                                  column)
                           .getResult()});
      });
  return tensor::CastOp::create(b, type, generic.getResult(0));
}

/// The batched target on `ids`, then the greedy pick at row `row` of each
/// sequence: one token (`oneToken`, a prefill) or one per sequence.
func::ReturnOp RoundBuilder::forwardAndPick(ImplicitLocOpBuilder &b, Value ids,
                                            Value rowPositions, Value cache,
                                            Value first, Value lengths,
                                            Value rows, Value row,
                                            bool oneToken) {
  SmallVector<Value> operands(5);
  operands[target.tokens] = ids;
  operands[target.positions] = rowPositions;
  operands[target.cache] = cache;
  operands[target.firstSlot] = first;
  operands[target.lengths] = lengths;
  auto verify = VerifyOp::create(
      b, target.func.getResultTypes(),
      FlatSymbolRefAttr::get(target.func.getSymNameAttr()), operands,
      /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  Type f = cast<RankedTensorType>(verify.getResult(target.logits).getType())
               .getElementType();
  auto pickedType =
      RankedTensorType::get({ShapedType::kDynamic, target.vocab}, f);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  Value picked = tensor::ExtractSliceOp::create(
      b, pickedType, verify.getResult(target.logits), {zero, row, zero},
      {rows, one, b.getIndexAttr(target.vocab)}, {one, one, one});
  auto tokensType = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  Value tokens = ProposeOp::create(b, tokensType, pickedType, picked, Value(),
                                   GreedyAttr::get(context))
                     .getTokens();
  Value result =
      oneToken ? Value(tensor::ExtractOp::create(
                     b, tokens, ValueRange{arith::ConstantIndexOp::create(b, 0)}))
               : tokens;
  return func::ReturnOp::create(
      b, ValueRange{result, verify.getResult(target.cacheResult)});
}

/// @<decoder>_prefill(cache, slot, prompt) -> (first token, cache).
void RoundBuilder::buildPrefill(ImplicitLocOpBuilder &b, func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), slot = entry->getArgument(1),
        prompt = entry->getArgument(2);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value count = tensor::DimOp::create(b, prompt, 0);
  Type idsType = target.func.getArgumentTypes()[target.tokens];
  Type positionsType = target.func.getArgumentTypes()[target.positions];
  Value zeroLength = tensor::CastOp::create(
      b, target.func.getArgumentTypes()[target.lengths],
      tensor::FromElementsOp::create(
          b, RankedTensorType::get({1}, b.getI64Type()),
          ValueRange{arith::ConstantOp::create(b, b.getI64IntegerAttr(0))}));
  forwardAndPick(b, toRows(b, prompt, c1, count, idsType),
                 positions(b, count, positionsType), cache, slot, zeroLength,
                 c1, arith::SubIOp::create(b, count, c1), /*oneToken=*/true);
}

/// @<decoder>_round(cache, first, lengths, tokens) -> (next tokens, cache).
void RoundBuilder::buildRound(ImplicitLocOpBuilder &b, func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), first = entry->getArgument(1),
        lengths = entry->getArgument(2), tokens = entry->getArgument(3);
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value batch = tensor::DimOp::create(b, tokens, 0);
  Type idsType = target.func.getArgumentTypes()[target.tokens];
  Type positionsType = target.func.getArgumentTypes()[target.positions];
  forwardAndPick(b, toRows(b, tokens, batch, c1, idsType),
                 toRows(b, lengths, batch, c1, positionsType), cache, first,
                 lengths, batch, c0, /*oneToken=*/false);
}

/// The entry the runtime calls: `step` without the cache among its
/// results. The caller's cache buffer is updated in place (bufferized,
/// `step` writes into its argument), so a round copies no cache; a public
/// function would have to return the whole cache.
static void exportUpdatingInPlace(ImplicitLocOpBuilder &b, func::FuncOp step,
                                  StringRef name) {
  FunctionType type = step.getFunctionType();
  b.setInsertionPointToEnd(step->getBlock());
  auto entry = func::FuncOp::create(
      b, name, b.getFunctionType(type.getInputs(), type.getResult(0)));
  Block *body = entry.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto call = func::CallOp::create(b, step, body->getArguments());
  func::ReturnOp::create(b, call.getResult(0));
  // The runtime calls it from C, as it calls the decode loops, with a cache
  // buffer of this shape.
  entry->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                 b.getUnitAttr());
  auto cache = cast<KVCacheType>(type.getInput(0));
  SmallVector<int64_t> shape{2};
  llvm::append_range(shape, cache.getShape());
  entry->setAttr(SpecDialect::kSlotCacheShapeAttrName,
                 b.getDenseI64ArrayAttr(shape));
}

namespace {
struct LowerRoundsPass
    : public specula::impl::SpecLowerRoundsBase<LowerRoundsPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void LowerRoundsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  for (auto decoder : llvm::to_vector(module.getOps<DecoderOp>())) {
    auto name =
        decoder->getAttrOfType<FlatSymbolRefAttr>(SpecDialect::kSlotTargetAttrName);
    if (!name)
      continue;
    if (decoder.getRule().isSampling()) {
      decoder.emitError() << "decoder @" << decoder.getSymName()
                          << ": batched rounds are greedy so far; its rule "
                             "samples";
      return signalPassFailure();
    }
    auto func = symbols.lookup<func::FuncOp>(name.getValue());
    if (!func) {
      decoder.emitError() << "decoder @" << decoder.getSymName()
                          << ": no batched target @" << name.getValue();
      return signalPassFailure();
    }
    FailureOr<SlotTarget> target = analyzeSlotTarget(func, decoder);
    if (failed(target))
      return signalPassFailure();
    Location loc = decoder.getLoc();
    ImplicitLocOpBuilder b(loc, module.getBody(), module.getBody()->end());
    Type cache = target->cacheType, index = b.getIndexType();
    auto tokens = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
    std::string prefix = decoder.getSymName().str();
    auto prefill = func::FuncOp::create(
        b, prefix + "_prefill_step",
        b.getFunctionType({cache, index, tokens}, {b.getI64Type(), cache}));
    auto round = func::FuncOp::create(
        b, prefix + "_round_step",
        b.getFunctionType({cache, index, tokens, tokens}, {tokens, cache}));
    RoundBuilder builder(*target, loc);
    builder.buildPrefill(b, prefill);
    builder.buildRound(b, round);
    for (func::FuncOp step : {prefill, round}) {
      step.setPrivate();
      exportUpdatingInPlace(b, step, prefix + (step == prefill ? "_prefill"
                                                               : "_round"));
    }
  }
}
