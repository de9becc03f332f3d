//===- LowerGenerate.cpp - the speculative decode loop --------------------===//

#include "passes/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
/// A model function in the in-place cache form: ([previous_hidden_states,]
/// input_ids, position_ids, kv_cache, past_length) -> (logits, ...,
/// kv_cache); MTP modules take the hidden states first.
struct CachedModel {
  func::FuncOp func;
  KVCacheType cache;
  int64_t vocab;
  bool takesHidden = false;

  static FailureOr<CachedModel> get(func::FuncOp func, Operation *user) {
    auto is = [&](unsigned i, bool result, IOKind kind) {
      IOAttr io = result ? getResultIO(func, i) : getArgumentIO(func, i);
      return io && io.getKind() == kind;
    };
    unsigned args = func.getNumArguments(), results = func.getNumResults();
    unsigned first = args > 0 && is(0, false, IOKind::PreviousHiddenStates);
    bool ok = args == 4 + first && results >= 2 &&
              is(first, false, IOKind::TokenIds) &&
              is(first + 1, false, IOKind::PositionIds) &&
              is(first + 2, false, IOKind::KVCache) &&
              is(first + 3, false, IOKind::PastLength) &&
              is(0, true, IOKind::Logits) &&
              is(results - 1, true, IOKind::KVCache);
    auto logits = ok ? dyn_cast<RankedTensorType>(func.getResultTypes()[0])
                     : RankedTensorType();
    if (!ok || !logits || logits.getRank() != 3 ||
        logits.isDynamicDim(2))
      return user->emitError()
             << "@" << func.getSymName()
             << " is not in the in-place cache form (input_ids, position_ids, "
                "kv_cache, past_length) -> (logits [1 x n x vocab], ..., "
                "kv_cache); run spec-kv-cache-inplace first";
    return CachedModel{func,
                       cast<KVCacheType>(func.getArgumentTypes()[first + 2]),
                       logits.getDimSize(2), first == 1};
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

  /// One verification round: the target's forward on [last, proposals...]
  /// at position `lengthT`, spec.accept under `rule`, and the commit of the
  /// accepted proposals and the next token into `seq`. The rejected
  /// positions are dropped by the lengths alone.
  struct Round {
    VerifyOp verify;
    Value accepted, next, seq, lengthT;
  };
  Round verifyAndCommit(const CachedModel &target, Type floatType,
                        Attribute rule, Value seq, Value cache, Value lengthT,
                        Value last, Value proposals, Value probs,
                        Value roundKey) {
    Type i64 = b.getI64Type();
    int64_t count = cast<RankedTensorType>(proposals.getType()).getDimSize(0);
    auto candidatesType = RankedTensorType::get({count + 1}, i64);
    Value candidates = tensor::InsertSliceOp::create(
        b, loc, proposals,
        tensor::FromElementsOp::create(b, loc, candidatesType,
                                       SmallVector<Value>(count + 1, last)),
        ValueRange{}, ValueRange{}, ValueRange{}, b.getDenseI64ArrayAttr({1}),
        b.getDenseI64ArrayAttr({count}), b.getDenseI64ArrayAttr({1}));
    func::FuncOp targetFunc = target.func;
    auto verify = VerifyOp::create(
        b, loc, targetFunc.getResultTypes(),
        FlatSymbolRefAttr::get(targetFunc.getSymNameAttr()),
        operandsFor(target,
                    ValueRange{toRow(candidates, index(count + 1)),
                               positions(lengthT, index(count + 1)), cache,
                               lengthT}));
    auto rowsType =
        RankedTensorType::get({count + 1, target.vocab}, floatType);
    Value rows = tensor::ExtractSliceOp::create(
        b, loc, rowsType, verify.getResult(0), ValueRange{}, ValueRange{},
        ValueRange{}, b.getDenseI64ArrayAttr({0, 0, 0}),
        b.getDenseI64ArrayAttr({1, count + 1, target.vocab}),
        b.getDenseI64ArrayAttr({1, 1, 1}));
    bool sampling = isa<RejectionAttr>(rule);
    auto accept = AcceptOp::create(
        b, loc, b.getIndexType(), i64, proposals, rows,
        sampling ? probs : Value(),
        sampling ? Value(arith::AddIOp::create(b, loc, roundKey,
                                               this->i64((1 << 20) - 1)))
                 : Value(),
        rule);
    Value accepted = accept.getCount(), next = accept.getNext();
    Value acceptedTokens = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic}, i64), proposals,
        ValueRange{}, ValueRange{accepted}, ValueRange{},
        b.getDenseI64ArrayAttr({0}),
        b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        b.getDenseI64ArrayAttr({1}));
    Value afterLast = arith::AddIOp::create(b, loc, lengthT, index(1));
    Value withAccepted = tensor::InsertSliceOp::create(
        b, loc, acceptedTokens, seq, ValueRange{afterLast},
        ValueRange{accepted}, ValueRange{},
        b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        b.getDenseI64ArrayAttr({1}));
    Value newLengthT = arith::AddIOp::create(b, loc, afterLast, accepted);
    Value newSeq = tensor::InsertOp::create(b, loc, next, withAccepted,
                                            ValueRange{newLengthT});
    return {verify, accepted, next, newSeq, newLengthT};
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

/// The runtime's monotonic clock in nanoseconds, which decode loops read to
/// split their time between proposing and verifying.
static constexpr llvm::StringLiteral kClockFunction = "specrt_clock_ns";

/// What every generate function starts with: its signature, the prompt in
/// the sequence buffer, and the target's prefill.
struct Prologue {
  Prologue(OpBuilder &b, DecoderOp decoder, const CachedModel &target,
           int64_t capacity, SymbolTable &symbols,
           StringRef suffix = "_generate")
      : loc(decoder.getLoc()), lb(b, decoder.getLoc()), capacity(capacity),
        target(target), rule(decoder.getRule()) {
    Type i64 = b.getI64Type(), indexType = b.getIndexType();
    floatType = cast<RankedTensorType>(
                    func::FuncOp(target.func).getResultTypes()[0])
                    .getElementType();
    if (auto config = target.func->getAttrOfType<ModelConfigAttr>(
            SpecDialect::kConfigAttrName))
      eos = config.getEosTokenId();
    auto promptType = RankedTensorType::get({ShapedType::kDynamic}, i64);
    auto seqType = RankedTensorType::get({capacity}, i64);
    b.setInsertionPointAfter(decoder);
    func = func::FuncOp::create(
        loc, (decoder.getSymName() + suffix).str(),
        b.getFunctionType({promptType, indexType, i64, promptType},
                          {seqType, indexType, indexType}));
    symbols.insert(func, Block::iterator(decoder->getNextNode()));
    clock = symbols.lookup<func::FuncOp>(kClockFunction);
    if (!clock) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(func);
      clock = func::FuncOp::create(b, loc, kClockFunction,
                                   b.getFunctionType({}, {i64}));
      clock.setPrivate();
      symbols.insert(clock);
    }
    func.setArgAttr(0, "spec.name", b.getStringAttr("prompt"));
    func.setArgAttr(3, "spec.name", b.getStringAttr("stop_tokens"));
    // Decode loops are the entry points the runtime calls from C.
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  b.getUnitAttr());
    func->setAttr(SpecDialect::kContextCapacityAttrName,
                  b.getI64IntegerAttr(capacity));
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    stopTokens = entry->getArgument(3);
    Value prompt = entry->getArgument(0);
    maxNew = entry->getArgument(1);
    key = entry->getArgument(2);
    promptLength = tensor::DimOp::create(b, loc, prompt, 0);
    seq = tensor::InsertSliceOp::create(
        b, loc, prompt,
        tensor::EmptyOp::create(b, loc, seqType.getShape(), i64),
        ValueRange{}, ValueRange{promptLength}, ValueRange{},
        b.getDenseI64ArrayAttr({0}),
        b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        b.getDenseI64ArrayAttr({1}));
    ids = lb.toRow(prompt, promptLength);
    positions = lb.positions(lb.index(0), promptLength);
    Value cache = CacheAllocOp::create(b, loc, target.cache);
    prefill = func::CallOp::create(
        b, loc, target.func,
        lb.operandsFor(target, ValueRange{ids, positions, cache,
                                          lb.index(0)}));
  }

  /// Whether another round of at most `round` positions may run: tokens are
  /// still wanted, the round fits the context, and no token committed so far
  /// ends the generation (`ended`).
  Value shouldContinue(OpBuilder &b, Location l, Value generated,
                       Value lengthT, Value ended, int64_t round) {
    Value wanted = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                         generated, maxNew);
    Value room = arith::CmpIOp::create(
        b, l, arith::CmpIPredicate::ule,
        arith::AddIOp::create(b, l, lengthT,
                              arith::ConstantIndexOp::create(b, l, round)),
        arith::ConstantIndexOp::create(b, l, capacity - 1));
    Value notEnded = arith::XOrIOp::create(
        b, l, ended, arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
    return arith::AndIOp::create(
        b, l, arith::AndIOp::create(b, l, wanted, room), notEnded);
  }

  /// Whether `token` ends the generation: the target's EOS or one of the
  /// caller's stop tokens.
  Value isStop(OpBuilder &b, Location l, Value token) {
    Value stop =
        eos ? Value(arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                          token, lb.i64(*eos)))
            : Value(arith::ConstantOp::create(b, l, b.getBoolAttr(false)));
    Value count = tensor::DimOp::create(b, l, stopTokens, 0);
    auto scan = scf::ForOp::create(
        b, l, lb.index(0), count, lb.index(1), ValueRange{stop},
        [&](OpBuilder &nb, Location nl, Value i, ValueRange found) {
          Value candidate = tensor::ExtractOp::create(nb, nl, stopTokens, i);
          Value hit = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                            token, candidate);
          scf::YieldOp::create(
              nb, nl,
              ValueRange{arith::OrIOp::create(nb, nl, found[0], hit)
                             .getResult()});
        });
    return scan.getResult(0);
  }

  /// Whether `seq` holds a stop token (isStop) at a position in (from, to]:
  /// the tokens a round committed, any of which ends the generation, not
  /// only the last.
  Value committedStop(OpBuilder &b, Location l, Value seq, Value from,
                      Value to) {
    Value no = arith::ConstantOp::create(b, l, b.getBoolAttr(false));
    auto scan = scf::ForOp::create(
        b, l, arith::AddIOp::create(b, l, from, lb.index(1)),
        arith::AddIOp::create(b, l, to, lb.index(1)), lb.index(1),
        ValueRange{no},
        [&](OpBuilder &nb, Location nl, Value position, ValueRange found) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value token = tensor::ExtractOp::create(b, nl, seq, position);
          scf::YieldOp::create(
              b, nl,
              ValueRange{arith::OrIOp::create(b, nl, found[0],
                                              isStop(b, nl, token))
                             .getResult()});
        });
    return scan.getResult(0);
  }

  /// Returns the sequence, its length (at most the prompt plus
  /// max_new_tokens: a round may produce more), the target forwards, and
  /// `counters` (the histogram of accepted proposals per round and the
  /// nanoseconds spent proposing and verifying).
  void finish(OpBuilder &b, Value seq, Value lengthT, Value steps,
              ValueRange counters) {
    Value length = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lengthT, lb.index(1)),
        arith::AddIOp::create(b, loc, promptLength, maxNew));
    SmallVector<Value> results{seq, length, steps};
    llvm::append_range(results, counters);
    func::ReturnOp::create(b, loc, results);
  }

  /// Where the loop state keeps what the loop condition, the tail and
  /// finish() read.
  struct StateLayout {
    unsigned seq, cache, length, generated, steps, last;
  };

  /// One target-only step: the target's forward on `last` at position
  /// `lengthT` and the token `rule` picks from its logits, committed after
  /// it. Returns the sequence, cache, length and the new last token.
  SmallVector<Value> targetStep(OpBuilder &b, Location l, Value seq,
                                Value cache, Value lengthT, Value last) {
    Type i64 = b.getI64Type();
    Value one = lb.index(1);
    Value token = tensor::FromElementsOp::create(
        b, l, RankedTensorType::get({1}, i64), ValueRange{last});
    auto [logits, newCache] = lb.call(target, lb.toRow(token, one),
                                      lb.positions(lengthT, one), cache,
                                      lengthT);
    // Keys below 2^20 are the target-only positions'; rounds use larger.
    Value stepKey = arith::AddIOp::create(
        b, l, key, arith::IndexCastOp::create(b, l, i64, lengthT));
    Value next =
        lb.propose(lb.logitsRow(logits, lb.index(0), target.vocab), rule,
                   stepKey)
            .first;
    Value newLength = arith::AddIOp::create(b, l, lengthT, one);
    Value newSeq =
        tensor::InsertOp::create(b, l, next, seq, ValueRange{newLength});
    return {newSeq, newCache, newLength, next};
  }

  /// Builds the decode loop over `inits` and the function's return: rounds
  /// of at most `round` positions run while shouldContinue holds, then, when
  /// fewer than `round` positions are left in the context, target-only steps
  /// (targetStep) fill them, so that generation stops exactly where the
  /// target alone stops; `body`
  /// builds one round at `b`'s insertion point and returns the next state
  /// followed by the number of proposals the round accepted and the
  /// nanoseconds it spent proposing (readClock). The loop counts rounds by
  /// accepted proposals in a histogram of `round` entries and sums the time
  /// spent proposing and, the rest of each round, verifying: the function's
  /// fourth, fifth and sixth results.
  void loop(OpBuilder &b, ValueRange inits, StateLayout layout, int64_t round,
            function_ref<SmallVector<Value>(Location, ValueRange)> body) {
    Type i64 = b.getI64Type();
    auto histogramType = RankedTensorType::get({round}, i64);
    SmallVector<Value> state0(inits);
    state0.push_back(arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(histogramType, b.getI64IntegerAttr(0))));
    state0.push_back(lb.i64(0)); // nanoseconds proposing
    state0.push_back(lb.i64(0)); // nanoseconds verifying
    // Whether a committed token ends the generation: the first one (from
    // the prefill), then any a round commits.
    state0.push_back(isStop(b, loc, inits[layout.last]));
    constexpr unsigned kCounters = 4;
    auto whileOp = scf::WhileOp::create(
        b, loc, llvm::to_vector(ValueRange(state0).getTypes()), state0,
        [&](OpBuilder &nb, Location l, ValueRange state) {
          scf::ConditionOp::create(
              nb, l,
              shouldContinue(nb, l, state[layout.generated],
                             state[layout.length], state.back(), round),
              state);
        },
        [&](OpBuilder &nb, Location l, ValueRange state) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value start = readClock(b, l);
          SmallVector<Value> next = body(l, state.drop_back(kCounters));
          Value proposing = next.pop_back_val();
          Value accepted = next.pop_back_val();
          Value total = arith::SubIOp::create(b, l, readClock(b, l), start);
          Value ended = committedStop(b, l, next[layout.seq],
                                      state[layout.length],
                                      next[layout.length]);
          ValueRange counters = state.take_back(kCounters);
          Value histogram = counters[0];
          Value count = tensor::ExtractOp::create(b, l, histogram, accepted);
          next.push_back(tensor::InsertOp::create(
              b, l, arith::AddIOp::create(b, l, count, lb.i64(1)), histogram,
              accepted));
          next.push_back(arith::AddIOp::create(b, l, counters[1], proposing));
          next.push_back(arith::AddIOp::create(
              b, l, counters[2],
              arith::SubIOp::create(b, l, total, proposing)));
          next.push_back(ended);
          scf::YieldOp::create(b, l, next);
        });
    func.setFunctionType(FunctionType::get(
        b.getContext(), func.getArgumentTypes(),
        {func.getResultTypes()[0], b.getIndexType(), b.getIndexType(),
         histogramType, i64, i64}));
    ValueRange results = whileOp.getResults();
    ValueRange counters = results.take_back(kCounters);
    if (round == 1)
      return finish(b, results[layout.seq], results[layout.length],
                    results[layout.steps], counters.drop_back());

    // The tail: sequence, cache, length, generated, steps, last token,
    // nanoseconds verifying, ended. Its steps are target forwards but not
    // verify rounds, so the histogram does not count them.
    SmallVector<Value> tail0{results[layout.seq],    results[layout.cache],
                             results[layout.length], results[layout.generated],
                             results[layout.steps],  results[layout.last],
                             counters[2],            counters[3]};
    auto tail = scf::WhileOp::create(
        b, loc, llvm::to_vector(ValueRange(tail0).getTypes()), tail0,
        [&](OpBuilder &nb, Location l, ValueRange state) {
          scf::ConditionOp::create(
              nb, l, shouldContinue(nb, l, state[3], state[2], state[7], 1),
              state);
        },
        [&](OpBuilder &nb, Location l, ValueRange state) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value start = readClock(b, l);
          SmallVector<Value> next =
              targetStep(b, l, state[0], state[1], state[2], state[5]);
          Value one = lb.index(1);
          Value elapsed = arith::SubIOp::create(b, l, readClock(b, l), start);
          scf::YieldOp::create(
              b, l,
              ValueRange{next[0], next[1], next[2],
                         arith::AddIOp::create(b, l, state[3], one),
                         arith::AddIOp::create(b, l, state[4], one), next[3],
                         arith::AddIOp::create(b, l, state[6], elapsed),
                         isStop(b, l, next[3])});
        });
    ValueRange tailResults = tail.getResults();
    finish(b, tailResults[0], tailResults[2], tailResults[4],
           {counters[0], counters[1], tailResults[6]});
  }

  /// The runtime clock, in nanoseconds.
  Value readClock(OpBuilder &b, Location l) {
    return func::CallOp::create(b, l, clock, ValueRange{}).getResult(0);
  }

  /// The sampling key of the round after `steps` target forwards: each round
  /// owns 2^20 consecutive keys.
  Value roundKey(OpBuilder &b, Location l, Value steps) {
    return arith::AddIOp::create(
        b, l, key,
        arith::MulIOp::create(
            b, l, arith::IndexCastOp::create(b, l, b.getI64Type(), steps),
            lb.i64(1 << 20)));
  }

  Location loc;
  LoopBuilder lb;
  int64_t capacity;
  CachedModel target;
  Attribute rule;
  std::optional<int64_t> eos;
  Type floatType;
  func::FuncOp func, clock;
  Value maxNew, key, promptLength, seq, ids, positions, stopTokens;
  func::CallOp prefill;
};

struct LowerGeneratePass
    : public specula::impl::SpecLowerGenerateBase<LowerGeneratePass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult lower(DecoderOp decoder, SymbolTable &symbols);
  LogicalResult lowerDraft(DecoderOp decoder, DraftProposerAttr draft,
                           SymbolTable &symbols);
  LogicalResult lowerMedusa(DecoderOp decoder, MTPProposerAttr heads,
                            SymbolTable &symbols);
  LogicalResult lowerMTPModule(DecoderOp decoder, MTPProposerAttr modules,
                               SymbolTable &symbols);
  void emitTargetOnly(DecoderOp decoder, const CachedModel &target,
                      int64_t capacity, SymbolTable &symbols);
};
} // namespace

LogicalResult LowerGeneratePass::lower(DecoderOp decoder,
                                       SymbolTable &symbols) {
  if (auto draft = dyn_cast<DraftProposerAttr>(decoder.getProposer())) {
    if (failed(lowerDraft(decoder, draft, symbols)))
      return failure();
  } else {
    auto mtp = cast<MTPProposerAttr>(decoder.getProposer());
    auto first = symbols.lookup<func::FuncOp>(mtp.getHeads()[0].getValue());
    auto role = first->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
    if (failed(role.getKind() == FunctionRole::MTPModule
                   ? lowerMTPModule(decoder, mtp, symbols)
                   : lowerMedusa(decoder, mtp, symbols)))
      return failure();
  }
  // The baseline runs the target alone: for fused Medusa heads, the target
  // they were fused into, so that it does not compute the heads.
  auto target = symbols.lookup<func::FuncOp>(decoder.getTarget());
  if (auto source = target->getAttrOfType<FlatSymbolRefAttr>(
          SpecDialect::kFusedFromAttrName))
    if (auto unfused = symbols.lookup<func::FuncOp>(source.getValue()))
      target = unfused;
  FailureOr<CachedModel> baseline = CachedModel::get(target, decoder);
  if (failed(baseline))
    return failure();
  // The same context as the speculative loop's (the smaller of the target's
  // and the proposer's caches), so that both stop at the same length.
  auto generate = symbols.lookup<func::FuncOp>(
      (decoder.getSymName() + "_generate").str());
  int64_t capacity =
      generate
          ->getAttrOfType<IntegerAttr>(SpecDialect::kContextCapacityAttrName)
          .getInt();
  emitTargetOnly(decoder, *baseline, capacity, symbols);
  return success();
}

/// `@<decoder>_target_only`: the same signature and kernels, one target
/// forward per token and no proposer: the reference speculative decoding
/// must reproduce (token for token under greedy verification).
void LowerGeneratePass::emitTargetOnly(DecoderOp decoder,
                                       const CachedModel &target,
                                       int64_t capacity,
                                       SymbolTable &symbols) {
  OpBuilder b(decoder.getContext());
  Prologue pro(b, decoder, target, capacity, symbols, "_target_only");
  LoopBuilder &lb = pro.lb;
  Location loc = pro.loc;
  Attribute rule = decoder.getRule();
  Value lastRow = arith::SubIOp::create(b, loc, pro.promptLength, lb.index(1));
  Value first = lb.propose(lb.logitsRow(pro.prefill.getResult(0), lastRow,
                                        target.vocab),
                           rule, pro.key)
                    .first;
  Value seq1 = tensor::InsertOp::create(b, loc, first, pro.seq,
                                        ValueRange{pro.promptLength});
  Value one = lb.index(1);
  SmallVector<Value> inits{seq1, pro.prefill.getResults().back(),
                           pro.promptLength, one, one, first};
  pro.loop(b, inits,
           {/*seq=*/0, /*cache=*/1, /*length=*/2, /*generated=*/3,
            /*steps=*/4, /*last=*/5},
           1, [&](Location l, ValueRange state) -> SmallVector<Value> {
             SmallVector<Value> next =
                 pro.targetStep(b, l, state[0], state[1], state[2], state[5]);
             return {next[0],
                     next[1],
                     next[2],
                     arith::AddIOp::create(b, l, state[3], one),
                     arith::AddIOp::create(b, l, state[4], one),
                     next[3],
                     lb.index(0),
                     lb.i64(0)};
           });
}

LogicalResult LowerGeneratePass::lowerDraft(DecoderOp decoder,
                                            DraftProposerAttr draftAttr,
                                            SymbolTable &symbols) {
  FailureOr<CachedModel> target = CachedModel::get(
      symbols.lookup<func::FuncOp>(decoder.getTarget()), decoder);
  if (failed(target))
    return failure();
  FailureOr<CachedModel> draft = CachedModel::get(
      symbols.lookup<func::FuncOp>(draftAttr.getModel().getValue()), decoder);
  if (failed(draft))
    return failure();
  int64_t gamma = draftAttr.getGamma();
  Attribute rule = decoder.getRule();
  OpBuilder b(decoder.getContext());
  Prologue pro(b, decoder, *target,
               std::min(target->cache.getCapacity(),
                        draft->cache.getCapacity()),
               symbols);
  LoopBuilder &lb = pro.lb;
  Location loc = pro.loc;
  Type i64 = b.getI64Type();
  Type floatType = pro.floatType;
  Value key = pro.key, promptLength = pro.promptLength;

  // The draft sees the prompt too; the target's last logits give the first
  // token.
  Value draftCache0 = CacheAllocOp::create(b, loc, draft->cache);
  Value draftCache1 =
      lb.call(*draft, pro.ids, pro.positions, draftCache0, lb.index(0)).second;
  Value lastRow = arith::SubIOp::create(b, loc, promptLength, lb.index(1));
  Value first = lb.propose(lb.logitsRow(pro.prefill.getResult(0), lastRow,
                                        target->vocab),
                           rule, key)
                    .first;
  Value seq1 = tensor::InsertOp::create(b, loc, first, pro.seq,
                                        ValueRange{promptLength});
  Value targetCache1 = pro.prefill.getResults().back();

  // Loop state: sequence, target and draft caches, target length (the last
  // token's position), draft length, tokens generated, target forwards, last
  // token.
  Value one = lb.index(1);
  SmallVector<Value> inits{seq1,         targetCache1, draftCache1,
                           promptLength, promptLength, one,
                           one,          first};
  pro.loop(
      b, inits,
      {/*seq=*/0, /*cache=*/1, /*length=*/3, /*generated=*/5, /*steps=*/6,
       /*last=*/7},
      gamma + 1, [&](Location l, ValueRange state) -> SmallVector<Value> {
        Value seq = state[0], cacheTarget = state[1], cacheDraft = state[2],
              lengthT = state[3], lengthD = state[4], generated = state[5],
              steps = state[6], last = state[7];
        Value roundKey = pro.roundKey(b, l, steps);
        Value proposeStart = pro.readClock(b, l);

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
        Value proposing =
            arith::SubIOp::create(b, l, pro.readClock(b, l), proposeStart);

        // Verify, accept and commit in one target forward.
        LoopBuilder::Round round = lb.verifyAndCommit(
            *target, floatType, rule, seq, cacheTarget, lengthT, last,
            proposals, probs, roundKey);
        Value accepted = round.accepted, nextToken = round.next;
        Value seqNext = round.seq, newLengthT = round.lengthT;
        Value targetCacheOut = round.verify.getResults().back();
        // The draft keeps what it cached of the accepted prefix.
        Value newLengthD = arith::MinUIOp::create(
            b, l, newLengthT, proposeLoop.getResult(1));
        Value produced = arith::AddIOp::create(b, l, accepted, one);
        return {seqNext,
                targetCacheOut,
                draftCacheOut,
                newLengthT,
                newLengthD,
                arith::AddIOp::create(b, l, generated, produced),
                arith::AddIOp::create(b, l, steps, one),
                nextToken,
                accepted,
                proposing};
      });
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
    return signalPassFailure();
  // The decode loops are now the module's entry points; the models they call
  // become internal, which lets bufferization drop the cache results that
  // alias their cache arguments instead of copying the cache every forward.
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(SpecDialect::kRoleAttrName) && !func.isPrivate() &&
        !SymbolTable::symbolKnownUseEmpty(func, module))
      func.setPrivate();
}

LogicalResult LowerGeneratePass::lowerMedusa(DecoderOp decoder,
                                             MTPProposerAttr proposer,
                                             SymbolTable &symbols) {
  FailureOr<CachedModel> target = CachedModel::get(
      symbols.lookup<func::FuncOp>(decoder.getTarget()), decoder);
  if (failed(target))
    return failure();
  // The fused target's head logits, for every position: the next round's
  // proposals come from the row of the last accepted token.
  func::FuncOp targetFunc = target->func;
  int64_t numHeads = proposer.getHeads().size();
  SmallVector<unsigned> headResults;
  for (int64_t k = 1; k <= numHeads; ++k) {
    std::optional<unsigned> found =
        findResult(targetFunc, IOKind::HeadLogits, k);
    auto type = found ? dyn_cast<RankedTensorType>(
                            targetFunc.getResultTypes()[*found])
                      : RankedTensorType();
    if (!type || type.getRank() != 3 || type.getDimSize(1) == 1 ||
        type.isDynamicDim(2) || type.getDimSize(2) != target->vocab)
      return decoder.emitError()
             << "target @" << targetFunc.getSymName()
             << " does not return the logits of head " << k
             << " (#spec.io<head_logits, index = " << k << ">) for every "
                "position; fuse the heads with "
                "spec-fuse-mtp-heads{last-position-only=false} first";
    headResults.push_back(*found);
  }

  Attribute rule = decoder.getRule();
  OpBuilder b(decoder.getContext());
  Prologue pro(b, decoder, *target, target->cache.getCapacity(), symbols);
  LoopBuilder &lb = pro.lb;
  Location loc = pro.loc;
  Type i64 = b.getI64Type();
  int64_t vocab = target->vocab;
  auto proposalsType = RankedTensorType::get({numHeads}, i64);
  auto probsType = RankedTensorType::get({numHeads, vocab}, pro.floatType);

  // The heads' proposals from row `row` of a fused forward's results.
  auto propose = [&](ValueRange results, Value row,
                     Value roundKey) -> std::pair<Value, Value> {
    Value proposals =
        tensor::EmptyOp::create(b, loc, proposalsType.getShape(), i64);
    Value probs = tensor::EmptyOp::create(b, loc, probsType.getShape(),
                                          pro.floatType);
    for (auto [k, result] : llvm::enumerate(headResults)) {
      Value stepKey = arith::AddIOp::create(b, loc, roundKey, lb.i64(k + 1));
      auto [token, q] = lb.propose(lb.logitsRow(results[result], row, vocab),
                                   rule, stepKey);
      Value position = lb.index(k);
      proposals = tensor::InsertOp::create(b, loc, token, proposals,
                                           ValueRange{position});
      probs = tensor::InsertSliceOp::create(
          b, loc, q, probs, ValueRange{}, ValueRange{}, ValueRange{},
          b.getDenseI64ArrayAttr({static_cast<int64_t>(k), 0}),
          b.getDenseI64ArrayAttr({1, vocab}), b.getDenseI64ArrayAttr({1, 1}));
    }
    return {proposals, probs};
  };

  // Prefill: the target's last row gives the first token, its heads the
  // first proposals.
  ValueRange prefill = pro.prefill.getResults();
  Value lastRow =
      arith::SubIOp::create(b, loc, pro.promptLength, lb.index(1));
  Value first =
      lb.propose(lb.logitsRow(prefill[0], lastRow, vocab), rule, pro.key).first;
  auto [proposals0, probs0] = propose(prefill, lastRow, pro.key);
  Value seq1 = tensor::InsertOp::create(b, loc, first, pro.seq,
                                        ValueRange{pro.promptLength});
  Value one = lb.index(1);

  // Loop state: sequence, target cache, target length (the last token's
  // position), tokens generated, target forwards, last token, proposals, q.
  SmallVector<Value> inits{seq1,  prefill.back(), pro.promptLength, one,
                           one,   first,          proposals0,       probs0};
  pro.loop(
      b, inits,
      {/*seq=*/0, /*cache=*/1, /*length=*/2, /*generated=*/3, /*steps=*/4,
       /*last=*/5},
      numHeads + 1, [&](Location l, ValueRange state) -> SmallVector<Value> {
        Value seq = state[0], cache = state[1], lengthT = state[2],
              generated = state[3], steps = state[4], last = state[5],
              proposals = state[6], probs = state[7];
        Value roundKey = pro.roundKey(b, l, steps);
        // Verify, accept and commit in one fused forward.
        LoopBuilder::Round round = lb.verifyAndCommit(
            *target, pro.floatType, rule, seq, cache, lengthT, last, proposals,
            probs, roundKey);
        Value accepted = round.accepted, nextToken = round.next;
        Value seqNext = round.seq, newLengthT = round.lengthT;
        auto verify = round.verify;
        // The next proposals: the heads at the last accepted position.
        auto [nextProposals, nextProbs] =
            propose(verify.getResults(), accepted, roundKey);
        return {
            seqNext,
            verify.getResults().back(),
            newLengthT,
            arith::AddIOp::create(b, l, generated,
                                  arith::AddIOp::create(b, l, accepted, one)),
            arith::AddIOp::create(b, l, steps, one),
            nextToken,
            nextProposals,
            nextProbs,
            accepted,
            // The heads run inside the verify forward: no separate proposing.
            lb.i64(0)};
      });
  return success();
}

/// A DeepSeek-V3-style MTP module (depth 1) beside the target: each round
/// verifies [last, proposal]; then the module runs on the new positions, each
/// with the target's hidden state there and the token after it (the accepted
/// proposal, then the next token), writing its own cache at the same
/// positions, and its last row proposes the token after the next one.
LogicalResult LowerGeneratePass::lowerMTPModule(DecoderOp decoder,
                                                MTPProposerAttr proposer,
                                                SymbolTable &symbols) {
  if (proposer.getHeads().size() != 1)
    return decoder.emitError() << "chains of MTP "
                                  "modules are not lowered yet; use depth 1";
  FailureOr<CachedModel> target = CachedModel::get(
      symbols.lookup<func::FuncOp>(decoder.getTarget()), decoder);
  if (failed(target))
    return failure();
  FailureOr<CachedModel> module = CachedModel::get(
      symbols.lookup<func::FuncOp>(proposer.getHeads()[0].getValue()), decoder);
  if (failed(module))
    return failure();
  func::FuncOp targetFunc = target->func;
  std::optional<unsigned> hiddenIndex =
      findResult(targetFunc, IOKind::HiddenStates);
  if (!module->takesHidden || !hiddenIndex)
    return decoder.emitError()
           << "the MTP module needs the target's "
              "hidden_states result and a previous_hidden_states argument";
  auto hiddenType =
      cast<RankedTensorType>(targetFunc.getResultTypes()[*hiddenIndex]);
  if (hiddenType.getRank() != 3 || hiddenType.isDynamicDim(2))
    return decoder.emitError() << "the target's hidden "
                                  "states must be [1 x n x hidden]";
  int64_t hiddenSize = hiddenType.getDimSize(2);

  Attribute rule = decoder.getRule();
  OpBuilder b(decoder.getContext());
  Prologue pro(b, decoder, *target,
               std::min(target->cache.getCapacity(),
                        module->cache.getCapacity()),
               symbols);
  LoopBuilder &lb = pro.lb;
  Location loc = pro.loc;
  Type i64 = b.getI64Type();
  int64_t vocab = target->vocab;
  Value one = lb.index(1);

  // Runs the module on `count` positions from `start`: hidden states
  // rows [0, count) of `hidden`, tokens seq[start + 1, start + 1 + count).
  // Returns its proposal from the last row, q and its cache.
  auto runModule = [&](Value hidden, Value seq, Value start, Value count,
                       Value cache, Value key) {
    auto rowsType = RankedTensorType::get({1, ShapedType::kDynamic, hiddenSize},
                                          hiddenType.getElementType());
    Value rows = tensor::ExtractSliceOp::create(
        b, loc, rowsType, hidden, ValueRange{}, ValueRange{count},
        ValueRange{}, b.getDenseI64ArrayAttr({0, 0, 0}),
        b.getDenseI64ArrayAttr({1, ShapedType::kDynamic, hiddenSize}),
        b.getDenseI64ArrayAttr({1, 1, 1}));
    Value tokens = lb.tokens(seq, arith::AddIOp::create(b, loc, start, one),
                             count);
    auto call = func::CallOp::create(
        b, loc, module->func,
        lb.operandsFor(*module,
                       ValueRange{rows, tokens, lb.positions(start, count),
                                  cache, start}));
    Value last = arith::SubIOp::create(b, loc, count, one);
    auto [token, q] =
        lb.propose(lb.logitsRow(call.getResult(0), last, vocab), rule, key);
    Value proposals = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({1}, i64), ValueRange{token});
    return std::make_tuple(proposals, q, call.getResults().back());
  };

  // Prefill: the target's last row gives the first token; the module sees
  // the prompt's hidden states with the tokens one ahead.
  ValueRange prefill = pro.prefill.getResults();
  Value lastRow = arith::SubIOp::create(b, loc, pro.promptLength, one);
  Value first =
      lb.propose(lb.logitsRow(prefill[0], lastRow, vocab), rule, pro.key).first;
  Value seq1 = tensor::InsertOp::create(b, loc, first, pro.seq,
                                        ValueRange{pro.promptLength});
  Value moduleCache0 = CacheAllocOp::create(b, loc, module->cache);
  auto [proposals0, probs0, moduleCache1] =
      runModule(prefill[*hiddenIndex], seq1, lb.index(0), pro.promptLength,
                moduleCache0, pro.key);

  SmallVector<Value> inits{seq1, prefill.back(), moduleCache1,
                           pro.promptLength, one, one, first, proposals0,
                           probs0};
  pro.loop(
      b, inits,
      {/*seq=*/0, /*cache=*/1, /*length=*/3, /*generated=*/4, /*steps=*/5,
       /*last=*/6},
      2,
      [&](Location l, ValueRange state) -> SmallVector<Value> {
        Value seq = state[0], cache = state[1], moduleCache = state[2],
              lengthT = state[3], generated = state[4], steps = state[5],
              last = state[6], proposals = state[7], probs = state[8];
        Value roundKey = pro.roundKey(b, l, steps);
        LoopBuilder::Round round = lb.verifyAndCommit(
            *target, pro.floatType, rule, seq, cache, lengthT, last, proposals,
            probs, roundKey);
        Value count = arith::AddIOp::create(b, l, round.accepted, one);
        Value proposeStart = pro.readClock(b, l);
        auto [nextProposals, nextProbs, nextModuleCache] = runModule(
            round.verify.getResult(*hiddenIndex), round.seq, lengthT, count,
            moduleCache, arith::AddIOp::create(b, l, roundKey, lb.i64(1)));
        Value proposing =
            arith::SubIOp::create(b, l, pro.readClock(b, l), proposeStart);
        return {round.seq,
                round.verify.getResults().back(),
                nextModuleCache,
                round.lengthT,
                arith::AddIOp::create(b, l, generated, count),
                arith::AddIOp::create(b, l, steps, one),
                round.next,
                nextProposals,
                nextProbs,
                round.accepted,
                proposing};
      });
  return success();
}
