//===- LowerGenerate.cpp - the speculative decode loop --------------------===//

#include "passes/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace specula {
#define GEN_PASS_DEF_SPECLOWERGENERATE
#include "passes/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
/// A model function in the in-place cache form: (input_ids, position_ids,
/// kv_cache, past_length) -> (logits, ..., kv_cache).
struct CachedModel {
  func::FuncOp func;
  KVCacheType cache;
  int64_t vocab;

  static FailureOr<CachedModel> get(func::FuncOp func, Operation *user) {
    auto name = [&](unsigned i, bool result) -> StringRef {
      auto attr = result ? func.getResultAttrOfType<StringAttr>(i, "onnx.name")
                         : func.getArgAttrOfType<StringAttr>(i, "onnx.name");
      return attr ? attr.getValue() : "";
    };
    unsigned args = func.getNumArguments(), results = func.getNumResults();
    bool ok = args == 4 && results >= 2 && name(0, false) == "input_ids" &&
              name(1, false) == "position_ids" &&
              name(2, false) == "kv_cache" &&
              name(3, false) == "past_length" && name(0, true) == "logits" &&
              name(results - 1, true) == "kv_cache";
    auto logits = ok ? dyn_cast<RankedTensorType>(func.getResultTypes()[0])
                     : RankedTensorType();
    if (!ok || !logits || logits.getRank() != 3 ||
        logits.isDynamicDim(2))
      return user->emitError()
             << "spec-lower-generate: @" << func.getSymName()
             << " is not in the in-place cache form (input_ids, position_ids, "
                "kv_cache, past_length) -> (logits [1 x n x vocab], ..., "
                "kv_cache); run spec-kv-cache-inplace first";
    return CachedModel{func, cast<KVCacheType>(func.getArgumentTypes()[2]),
                       logits.getDimSize(2)};
  }
};

/// Builds the generate function's body.
class LoopBuilder {
public:
  LoopBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }

  /// `tensor<1 x length x i64>` of seq[start, start + length).
  Value tokens(Value seq, Value start, Value length) {
    auto type = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, type, seq, ValueRange{start}, ValueRange{length},
        ValueRange{}, b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        b.getDenseI64ArrayAttr({1}));
    return toRow(slice, length);
  }

  /// `tensor<1 x length x i64>` of start, start + 1, ...
  Value positions(Value start, Value length) {
    auto type = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
    Value iota = tensor::GenerateOp::create(
        b, loc, type, ValueRange{length},
        [&](OpBuilder &nb, Location l, ValueRange indices) {
          Value p = arith::AddIOp::create(nb, l, start, indices[0]);
          tensor::YieldOp::create(
              nb, l, arith::IndexCastOp::create(nb, l, nb.getI64Type(), p)
                         .getResult());
        });
    return toRow(iota, length);
  }

  /// Calls a model on tokens at positions after `past` cached ones; returns
  /// its logits and cache.
  std::pair<Value, Value> call(const CachedModel &model, Value ids,
                               Value positions, Value cache, Value past) {
    auto call = func::CallOp::create(
        b, loc, model.func,
        operandsFor(model, ValueRange{ids, positions, cache, past}));
    return {call.getResult(0), call.getResults().back()};
  }

  /// The operands, cast to the model's (possibly less static) argument types.
  SmallVector<Value> operandsFor(const CachedModel &model, ValueRange values) {
    SmallVector<Value> operands;
    for (auto [value, type] :
         llvm::zip(values, func::FuncOp(model.func).getArgumentTypes()))
      operands.push_back(value.getType() == type
                             ? value
                             : tensor::CastOp::create(b, loc, type, value));
    return operands;
  }

  /// Row `row` of `logits [1 x n x vocab]` as `tensor<1 x vocab>`.
  Value logitsRow(Value logits, Value row, int64_t vocab) {
    auto type = cast<RankedTensorType>(logits.getType());
    auto rowType = RankedTensorType::get({1, vocab}, type.getElementType());
    return tensor::ExtractSliceOp::create(
        b, loc, rowType, logits, ValueRange{row}, ValueRange{}, ValueRange{},
        b.getDenseI64ArrayAttr({0, ShapedType::kDynamic, 0}),
        b.getDenseI64ArrayAttr({1, 1, vocab}),
        b.getDenseI64ArrayAttr({1, 1, 1}));
  }

  /// The single token `spec.propose` picks from a `1 x vocab` row, and q.
  std::pair<Value, Value> propose(Value row, Attribute rule, Value key) {
    auto rowType = cast<RankedTensorType>(row.getType());
    auto tokenType = RankedTensorType::get({1}, b.getI64Type());
    auto op = ProposeOp::create(b, loc, tokenType, rowType, row,
                                isa<RejectionAttr>(rule) ? key : Value(), rule);
    Value token = tensor::ExtractOp::create(b, loc, op.getTokens(),
                                            ValueRange{index(0)});
    return {token, op.getProbs()};
  }

  Value toRow(Value vector, Value length) {
    auto type = cast<RankedTensorType>(vector.getType());
    auto shape = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({2}, b.getIndexType()),
        ValueRange{index(1), length});
    return tensor::ReshapeOp::create(
        b, loc,
        RankedTensorType::get({1, ShapedType::kDynamic}, type.getElementType()),
        vector, shape);
  }

  OpBuilder &b;
  Location loc;
};

struct LowerGeneratePass
    : public specula::impl::SpecLowerGenerateBase<LowerGeneratePass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult lower(DecoderOp decoder, SymbolTable &symbols);
};
} // namespace

LogicalResult LowerGeneratePass::lower(DecoderOp decoder,
                                       SymbolTable &symbols) {
  auto draftAttr = dyn_cast<DraftProposerAttr>(decoder.getProposer());
  if (!draftAttr)
    return decoder.emitError() << "spec-lower-generate: decoders with MTP "
                                  "heads are not lowered yet; only drafts are";
  FailureOr<CachedModel> target = CachedModel::get(
      symbols.lookup<func::FuncOp>(decoder.getTarget()), decoder);
  if (failed(target))
    return failure();
  FailureOr<CachedModel> draft = CachedModel::get(
      symbols.lookup<func::FuncOp>(draftAttr.getModel().getValue()), decoder);
  if (failed(draft))
    return failure();
  int64_t gamma = draftAttr.getGamma();
  int64_t capacity =
      std::min(target->cache.getCapacity(), draft->cache.getCapacity());
  std::optional<int64_t> eos;
  if (auto config = target->func->getAttrOfType<ModelConfigAttr>(
          SpecDialect::kConfigAttrName))
    eos = config.getEosTokenId();
  Attribute rule = decoder.getRule();
  Type floatType =
      cast<RankedTensorType>(target->func.getResultTypes()[0]).getElementType();

  MLIRContext *context = decoder.getContext();
  OpBuilder b(context);
  b.setInsertionPointAfter(decoder);
  Location loc = decoder.getLoc();
  Type i64 = b.getI64Type(), indexType = b.getIndexType();
  auto promptType = RankedTensorType::get({ShapedType::kDynamic}, i64);
  auto seqType = RankedTensorType::get({capacity}, i64);
  auto func = func::FuncOp::create(
      loc, (decoder.getSymName() + "_generate").str(),
      b.getFunctionType({promptType, indexType, i64},
                        {seqType, indexType, indexType}));
  symbols.insert(func, Block::iterator(decoder->getNextNode()));
  func.setArgAttr(0, "spec.name", b.getStringAttr("prompt"));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  LoopBuilder lb(b, loc);
  Value prompt = entry->getArgument(0), maxNew = entry->getArgument(1),
        key = entry->getArgument(2);

  // Prefill: both models see the prompt; the target's last logits give the
  // first token.
  Value promptLength = tensor::DimOp::create(b, loc, prompt, 0);
  Value seq0 = tensor::InsertSliceOp::create(
      b, loc, prompt,
      tensor::EmptyOp::create(b, loc, seqType.getShape(), i64),
      ValueRange{}, ValueRange{promptLength}, ValueRange{},
      b.getDenseI64ArrayAttr({0}),
      b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
      b.getDenseI64ArrayAttr({1}));
  Value ids = lb.toRow(prompt, promptLength);
  Value positions = lb.positions(lb.index(0), promptLength);
  Value targetCache0 = CacheAllocOp::create(b, loc, target->cache);
  Value draftCache0 = CacheAllocOp::create(b, loc, draft->cache);
  auto [prefillLogits, targetCache1] =
      lb.call(*target, ids, positions, targetCache0, lb.index(0));
  auto [draftLogits0, draftCache1] =
      lb.call(*draft, ids, positions, draftCache0, lb.index(0));
  (void)draftLogits0;
  Value lastRow = arith::SubIOp::create(b, loc, promptLength, lb.index(1));
  auto [first, firstQ] = lb.propose(
      lb.logitsRow(prefillLogits, lastRow, target->vocab), rule, key);
  (void)firstQ;
  Value seq1 = tensor::InsertOp::create(b, loc, first, seq0,
                                        ValueRange{promptLength});

  // Loop state: sequence, target length (the last token's position), draft
  // length, tokens generated, target forwards, done flag.
  Value one = lb.index(1);
  Type cacheT = target->cache, cacheD = draft->cache;
  SmallVector<Value> inits{seq1,         targetCache1, draftCache1,
                           promptLength, promptLength, one,
                           one,          first};
  SmallVector<Type> types{seqType,   cacheT,    cacheD,    indexType,
                          indexType, indexType, indexType, i64};
  auto loop = scf::WhileOp::create(
      b, loc, types, inits,
      [&](OpBuilder &nb, Location l, ValueRange state) {
        // Continue while tokens are wanted, the context has room for a
        // round, and the last token is not EOS.
        Value generated = state[5], lengthT = state[3], last = state[7];
        Value wanted = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                             generated, maxNew);
        Value room = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ule,
            arith::AddIOp::create(
                nb, l, lengthT,
                arith::ConstantIndexOp::create(nb, l, gamma + 1)),
            arith::ConstantIndexOp::create(nb, l, capacity - 1));
        Value go = arith::AndIOp::create(nb, l, wanted, room);
        if (eos) {
          Value notEos = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne, last,
              arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(*eos)));
          go = arith::AndIOp::create(nb, l, go, notEos);
        }
        scf::ConditionOp::create(nb, l, go, state);
      },
      [&](OpBuilder &nb, Location l, ValueRange state) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value seq = state[0], cacheTarget = state[1], cacheDraft = state[2],
              lengthT = state[3], lengthD = state[4], generated = state[5],
              steps = state[6], last = state[7];
        Value roundKey = arith::AddIOp::create(
            b, l, key,
            arith::MulIOp::create(
                b, l,
                arith::IndexCastOp::create(b, l, i64, steps),
                lb.i64(1 << 20)));

        // Propose: gamma draft forwards. The first one feeds every token the
        // draft has not cached: seq[lengthD .. lengthT].
        auto proposalsType = RankedTensorType::get({gamma}, i64);
        auto probsType =
            RankedTensorType::get({gamma, draft->vocab}, floatType);
        Value proposals0 =
            tensor::EmptyOp::create(b, l, proposalsType.getShape(), i64);
        Value probs0 = tensor::EmptyOp::create(b, l, probsType.getShape(),
                                               floatType);
        auto proposeLoop = scf::ForOp::create(
            b, l, lb.index(0), lb.index(gamma), one,
            ValueRange{cacheDraft, lengthD, proposals0, probs0, last},
            [&](OpBuilder &fb, Location fl, Value k, ValueRange args) {
              OpBuilder::InsertionGuard inner(b);
              b.setInsertionPoint(fb.getInsertionBlock(),
                                  fb.getInsertionPoint());
              Value cache = args[0], cached = args[1], proposals = args[2],
                    probs = args[3], token = args[4];
              // Step k feeds positions [cached, lengthT + k].
              Value end = arith::AddIOp::create(b, fl, lengthT, k);
              Value count = arith::AddIOp::create(
                  b, fl, arith::SubIOp::create(b, fl, end, cached), one);
              Value seqWithProposals = tensor::InsertOp::create(
                  b, fl, token, seq, ValueRange{end});
              Value feed = lb.tokens(seqWithProposals, cached, count);
              auto [logits, newCache] =
                  lb.call(*draft, feed, lb.positions(cached, count), cache,
                          cached);
              Value stepKey = arith::AddIOp::create(
                  b, fl, roundKey,
                  arith::IndexCastOp::create(b, fl, i64, end));
              auto [proposal, q] = lb.propose(
                  lb.logitsRow(logits,
                               arith::SubIOp::create(b, fl, count, one),
                               draft->vocab),
                  rule, stepKey);
              Value newProposals = tensor::InsertOp::create(
                  b, fl, proposal, proposals, ValueRange{k});
              Value newProbs = tensor::InsertSliceOp::create(
                  b, fl, q, probs, ValueRange{k}, ValueRange{}, ValueRange{},
                  b.getDenseI64ArrayAttr({ShapedType::kDynamic, 0}),
                  b.getDenseI64ArrayAttr({1, draft->vocab}),
                  b.getDenseI64ArrayAttr({1, 1}));
              scf::YieldOp::create(
                  b, fl,
                  ValueRange{newCache, arith::AddIOp::create(b, fl, cached,
                                                             count),
                             newProposals, newProbs, proposal});
            });
        Value draftCacheOut = proposeLoop.getResult(0);
        Value proposals = proposeLoop.getResult(2);
        Value probs = proposeLoop.getResult(3);

        // Verify: the target on [last, proposals...] in one forward.
        auto candidatesType = RankedTensorType::get({gamma + 1}, i64);
        Value candidates = tensor::InsertSliceOp::create(
            b, l, proposals,
            tensor::FromElementsOp::create(
                b, l, candidatesType,
                SmallVector<Value>(gamma + 1, last)),
            ValueRange{}, ValueRange{}, ValueRange{},
            b.getDenseI64ArrayAttr({1}), b.getDenseI64ArrayAttr({gamma}),
            b.getDenseI64ArrayAttr({1}));
        Value candidateRow = lb.toRow(candidates, lb.index(gamma + 1));
        Value candidatePositions = lb.positions(lengthT, lb.index(gamma + 1));
        auto verify = VerifyOp::create(
            b, l, target->func.getResultTypes(),
            FlatSymbolRefAttr::get(target->func.getSymNameAttr()),
            lb.operandsFor(*target, ValueRange{candidateRow,
                                               candidatePositions, cacheTarget,
                                               lengthT}));
        Value targetCacheOut = verify.getResults().back();
        auto rowsType =
            RankedTensorType::get({gamma + 1, target->vocab}, floatType);
        Value rows = tensor::ExtractSliceOp::create(
            b, l, rowsType, verify.getResult(0), ValueRange{}, ValueRange{},
            ValueRange{}, b.getDenseI64ArrayAttr({0, 0, 0}),
            b.getDenseI64ArrayAttr({1, gamma + 1, target->vocab}),
            b.getDenseI64ArrayAttr({1, 1, 1}));

        // Accept.
        bool sampling = isa<RejectionAttr>(rule);
        auto accept = AcceptOp::create(
            b, l, b.getIndexType(), i64, proposals, rows,
            sampling ? probs : Value(),
            sampling ? Value(arith::AddIOp::create(
                           b, l, roundKey, lb.i64((1 << 20) - 1)))
                     : Value(),
            rule);
        Value accepted = accept.getCount(), nextToken = accept.getNext();

        // Commit: accepted proposals, then the next token, after the last
        // token; the rejected positions are dropped by the lengths alone.
        Value acceptedTokens = tensor::ExtractSliceOp::create(
            b, l, RankedTensorType::get({ShapedType::kDynamic}, i64),
            proposals, ValueRange{}, ValueRange{accepted}, ValueRange{},
            b.getDenseI64ArrayAttr({0}),
            b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
            b.getDenseI64ArrayAttr({1}));
        Value afterLast = arith::AddIOp::create(b, l, lengthT, one);
        Value seqAccepted = tensor::InsertSliceOp::create(
            b, l, acceptedTokens, seq, ValueRange{afterLast},
            ValueRange{accepted}, ValueRange{},
            b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
            b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
            b.getDenseI64ArrayAttr({1}));
        Value newLengthT = arith::AddIOp::create(b, l, afterLast, accepted);
        Value seqNext = tensor::InsertOp::create(b, l, nextToken, seqAccepted,
                                                 ValueRange{newLengthT});
        // The draft keeps what it cached of the accepted prefix.
        Value newLengthD = arith::MinUIOp::create(
            b, l, newLengthT, proposeLoop.getResult(1));
        Value produced = arith::AddIOp::create(b, l, accepted, one);
        scf::YieldOp::create(
            b, l,
            ValueRange{seqNext, targetCacheOut, draftCacheOut, newLengthT,
                       newLengthD,
                       arith::AddIOp::create(b, l, generated, produced),
                       arith::AddIOp::create(b, l, steps, one), nextToken});
      });
  // At most max_new_tokens: a round may have produced up to gamma more.
  Value length = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, loop.getResult(3), one),
      arith::AddIOp::create(b, loc, promptLength, maxNew));
  func::ReturnOp::create(b, loc,
                         ValueRange{loop.getResult(0), length,
                                    loop.getResult(6)});
  return success();
}

void LowerGeneratePass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  bool failedAny = false;
  for (auto decoder : llvm::to_vector(module.getOps<DecoderOp>()))
    if (decoderName.empty() || decoder.getSymName() == decoderName)
      failedAny |= failed(lower(decoder, symbols));
  if (failedAny)
    signalPassFailure();
}
