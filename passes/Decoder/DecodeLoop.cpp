//===- DecodeLoop.cpp - the parts decode loops are built of ---------------===//

#include "passes/Decoder/DecodeLoop.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace specula;
using namespace specula::spec;

/// The runtime's monotonic clock in nanoseconds, which decode loops read to
/// split their time between proposing and verifying.
static constexpr llvm::StringLiteral kClockFunction = "specrt_clock_ns";
/// The runtime's hook for each committed token, in order (streaming): the
/// runtime passes them on to the caller as rounds commit them, and answers
/// whether the loop should stop after this round (a cancelled request).
static constexpr llvm::StringLiteral kTokenHook = "specrt_on_token";

FailureOr<CachedModel> CachedModel::get(func::FuncOp func, Operation *user) {
  auto is = [&](unsigned i, bool result, IOKind kind) {
    IOAttr io = result ? getResultIO(func, i) : getArgumentIO(func, i);
    return io && io.getKind() == kind;
  };
  unsigned args = func.getNumArguments(), results = func.getNumResults();
  unsigned first = args > 0 && is(0, false, IOKind::PreviousHiddenStates);
  bool tree = args > 0 && is(args - 1, false, IOKind::TreeMask);
  bool ok = args == 4 + first + tree && results >= 2 &&
            is(first, false, IOKind::TokenIds) &&
            is(first + 1, false, IOKind::PositionIds) &&
            is(first + 2, false, IOKind::KVCache) &&
            is(first + 3, false, IOKind::PastLength) &&
            is(0, true, IOKind::Logits) &&
            is(results - 1, true, IOKind::KVCache);
  auto logits = ok ? dyn_cast<RankedTensorType>(func.getResultTypes()[0])
                   : RankedTensorType();
  if (!ok || !logits || logits.getRank() != 3 || logits.isDynamicDim(2))
    return user->emitError()
           << "@" << func.getSymName()
           << " is not in the in-place cache form (input_ids, position_ids, "
              "kv_cache, past_length) -> (logits [1 x n x vocab], ..., "
              "kv_cache); run spec-kv-cache-inplace first";
  return CachedModel{func,
                     cast<KVCacheType>(func.getArgumentTypes()[first + 2]),
                     logits.getDimSize(2), first == 1, tree};
}

Type CachedModel::getFloatType() {
  return cast<RankedTensorType>(func.getResultTypes()[0]).getElementType();
}

//===----------------------------------------------------------------------===//
// The prologue
//===----------------------------------------------------------------------===//

DecodeLoopBuilder::DecodeLoopBuilder(DecoderOp decoder,
                                     const CachedModel &target,
                                     int64_t capacity, SymbolTable &symbols,
                                     StringRef suffix)
    : b(decoder.getLoc(), decoder.getContext()), target(target),
      rule(decoder.getRule()), capacity(capacity),
      floatType(this->target.getFloatType()) {
  if (auto config = target.func->getAttrOfType<ModelConfigAttr>(
          SpecDialect::kConfigAttrName))
    eos = config.getEosTokenId();
  Type i64Type = b.getI64Type();
  auto promptType = RankedTensorType::get({ShapedType::kDynamic}, i64Type);
  auto seqType = RankedTensorType::get({capacity}, i64Type);
  func = func::FuncOp::create(
      b.getLoc(), (decoder.getSymName() + suffix).str(),
      b.getFunctionType({promptType, b.getIndexType(), i64Type, promptType},
                        {seqType, b.getIndexType(), b.getIndexType()}));
  symbols.insert(func, Block::iterator(decoder->getNextNode()));
  clock = symbols.lookup<func::FuncOp>(kClockFunction);
  if (!clock) {
    b.setInsertionPoint(func);
    clock = func::FuncOp::create(b, kClockFunction,
                                 b.getFunctionType({}, {i64Type}));
    clock.setPrivate();
    symbols.insert(clock);
  }
  tokenHook = symbols.lookup<func::FuncOp>(kTokenHook);
  if (!tokenHook) {
    b.setInsertionPoint(func);
    tokenHook = func::FuncOp::create(b, kTokenHook,
                                     b.getFunctionType({i64Type}, {b.getI1Type()}));
    tokenHook.setPrivate();
    symbols.insert(tokenHook);
  }
  func.setArgAttr(0, "spec.name", b.getStringAttr("prompt"));
  func.setArgAttr(3, "spec.name", b.getStringAttr("stop_tokens"));
  // Decode loops are the entry points the runtime calls from C.
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  func->setAttr(SpecDialect::kContextCapacityAttrName,
                b.getI64IntegerAttr(capacity));

  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value prompt = entry->getArgument(0);
  maxNew = entry->getArgument(1);
  key = entry->getArgument(2);
  stopTokens = entry->getArgument(3);
  promptLength = tensor::DimOp::create(b, prompt, 0);
  SmallVector<OpFoldResult> zero{b.getIndexAttr(0)}, one{b.getIndexAttr(1)};
  seq = tensor::InsertSliceOp::create(
      b, prompt, tensor::EmptyOp::create(b, seqType.getShape(), i64Type), zero,
      {OpFoldResult(promptLength)}, one);
  promptIds = toRow(prompt, promptLength);
  promptPositions = positions(index(0), promptLength);
  Value cache = CacheAllocOp::create(b, target.cache);
  prefill = call(target, {promptIds, promptPositions, cache, index(0)});
}

DecodeState DecodeLoopBuilder::startAfterPrefill() {
  Value lastRow = arith::SubIOp::create(b, promptLength, index(1));
  Value first =
      propose(logitsRow(prefill.getResult(0), lastRow, target.vocab), key)
          .first;
  Value seq1 = tensor::InsertOp::create(b, first, seq, promptLength);
  return {seq1,     prefill.getResults().back(), promptLength, index(1),
          index(1), first};
}

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

/// The values the loop keeps after the state and the proposer's: rounds
/// counted by accepted proposals, nanoseconds proposing and verifying, and
/// whether a committed token ended the generation.
struct DecodeLoopBuilder::Counters {
  Value histogram, proposingNs, verifyingNs, ended;

  static constexpr unsigned kSize = 4;
  SmallVector<Value> getValues() const {
    return {histogram, proposingNs, verifyingNs, ended};
  }
  static Counters from(ValueRange values) {
    return {values[0], values[1], values[2], values[3]};
  }
};

void DecodeLoopBuilder::buildLoop(const DecodeState &init,
                                  ValueRange proposerInit, int64_t roundSize,
                                  RoundFn round) {
  ValueRange results = buildRounds(init, proposerInit, roundSize, round);
  auto histogramType = RankedTensorType::get({roundSize}, b.getI64Type());
  func.setFunctionType(FunctionType::get(
      b.getContext(), func.getArgumentTypes(),
      {func.getResultTypes()[0], b.getIndexType(), b.getIndexType(),
       histogramType, b.getI64Type(), b.getI64Type()}));
  if (roundSize == 1) {
    Counters counters = Counters::from(results.take_back(Counters::kSize));
    return finish(DecodeState::from(results),
                  {counters.histogram, counters.proposingNs,
                   counters.verifyingNs});
  }
  buildTail(results, proposerInit.size());
}

ValueRange DecodeLoopBuilder::buildRounds(const DecodeState &init,
                                          ValueRange proposerInit,
                                          int64_t roundSize, RoundFn round) {
  auto histogramType = RankedTensorType::get({roundSize}, b.getI64Type());
  Counters counters{
      arith::ConstantOp::create(
          b, DenseElementsAttr::get(histogramType, b.getI64IntegerAttr(0))),
      i64(0), i64(0),
      // The first committed token (from the prefill) may end it already.
      reportedStop(init.last)};
  SmallVector<Value> inits = init.getValues();
  llvm::append_range(inits, proposerInit);
  llvm::append_range(inits, counters.getValues());
  auto loop =
      scf::WhileOp::create(b, ValueRange(inits).getTypes(), inits,
                           /*beforeBuilder=*/nullptr, /*afterBuilder=*/nullptr);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBeforeBody());
    ValueRange values = loop.getBeforeArguments();
    DecodeState state = DecodeState::from(values);
    scf::ConditionOp::create(b,
                             shouldContinue(state.generated, state.length,
                                            values.back(), roundSize),
                             values);
  }
  buildRound(loop.getAfterBody(), proposerInit.size(), roundSize, round);
  return loop.getResults();
}

/// One round and the counters' update, as the loop's body.
void DecodeLoopBuilder::buildRound(Block *body, unsigned proposerValues,
                                   int64_t roundSize, RoundFn round) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  ValueRange values = body->getArguments();
  DecodeState state = DecodeState::from(values);
  Counters counters = Counters::from(values.take_back(Counters::kSize));
  Value start = readClock();
  RoundResult result = round(
      state, values.slice(DecodeState::kSize, proposerValues));
  Value total = elapsedSince(start);
  Counters next;
  // Any token the round committed may end the generation, not only the last.
  next.ended =
      committedStop(result.state.seq, state.length, result.state.length);
  Value outcome = result.outcome ? result.outcome : result.accepted;
  Value count = tensor::ExtractOp::create(b, counters.histogram, outcome);
  next.histogram = tensor::InsertOp::create(
      b, arith::AddIOp::create(b, count, i64(1)), counters.histogram, outcome);
  next.proposingNs =
      arith::AddIOp::create(b, counters.proposingNs, result.proposingNs);
  next.verifyingNs = arith::AddIOp::create(
      b, counters.verifyingNs,
      arith::SubIOp::create(b, total, result.proposingNs));
  SmallVector<Value> yielded = result.state.getValues();
  llvm::append_range(yielded, result.proposerState);
  llvm::append_range(yielded, next.getValues());
  scf::YieldOp::create(b, yielded);
}

/// Target-only steps for the positions a whole round no longer fits in.
/// They are target forwards but not verify rounds: the histogram does not
/// count them, and their time is verifying time.
void DecodeLoopBuilder::buildTail(ValueRange results,
                                  unsigned proposerValues) {
  DecodeState state = DecodeState::from(results);
  Counters counters = Counters::from(results.take_back(Counters::kSize));
  SmallVector<Value> inits = state.getValues();
  inits.append({counters.verifyingNs, counters.ended});
  auto tail = scf::WhileOp::create(b, ValueRange(inits).getTypes(), inits,
                                   nullptr, nullptr);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tail.getBeforeBody());
    ValueRange values = tail.getBeforeArguments();
    DecodeState current = DecodeState::from(values);
    scf::ConditionOp::create(
        b, shouldContinue(current.generated, current.length, values.back(), 1),
        values);

    b.setInsertionPointToStart(tail.getAfterBody());
    values = tail.getAfterArguments();
    Value start = readClock();
    DecodeState next = targetStep(DecodeState::from(values));
    SmallVector<Value> yielded = next.getValues();
    yielded.push_back(arith::AddIOp::create(b, values[DecodeState::kSize],
                                            elapsedSince(start)));
    yielded.push_back(reportedStop(next.last));
    scf::YieldOp::create(b, yielded);
  }
  ValueRange tailResults = tail.getResults();
  finish(DecodeState::from(tailResults),
         {counters.histogram, counters.proposingNs,
          tailResults[DecodeState::kSize]});
}

/// Returns the sequence, its length (at most the prompt plus max_new_tokens:
/// a round may produce more), the target forwards and the counters.
void DecodeLoopBuilder::finish(const DecodeState &state, ValueRange counters) {
  Value afterLast = arith::AddIOp::create(b, state.length, index(1));
  Value limit = arith::AddIOp::create(b, promptLength, maxNew);
  Value length = arith::MinUIOp::create(b, afterLast, limit);
  SmallVector<Value> results{state.seq, length, state.steps};
  llvm::append_range(results, counters);
  func::ReturnOp::create(b, results);
}

/// Whether another round of at most `roundSize` positions may run: tokens
/// are still wanted, the round fits the context, and nothing `ended` it.
Value DecodeLoopBuilder::shouldContinue(Value generated, Value length,
                                        Value ended, int64_t roundSize) {
  Value wanted =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, generated, maxNew);
  // In sequence: arguments' evaluation order differs between compilers.
  Value last = index(capacity - 1);
  Value end = arith::AddIOp::create(b, length, index(roundSize));
  Value room =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ule, end, last);
  Value notEnded = arith::XOrIOp::create(
      b, ended, arith::ConstantOp::create(b, b.getBoolAttr(true)));
  return arith::AndIOp::create(b, arith::AndIOp::create(b, wanted, room),
                               notEnded);
}

/// Whether `token` ends the generation: the target's EOS or one of the
/// caller's stop tokens.
Value DecodeLoopBuilder::isStop(Value token) {
  Value stop = eos ? Value(arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                 token, i64(*eos)))
                   : Value(arith::ConstantOp::create(b, b.getBoolAttr(false)));
  Value count = tensor::DimOp::create(b, stopTokens, 0);
  Value zero = index(0), one = index(1);
  auto scan = scf::ForOp::create(b, zero, count, one, stop);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(scan.getBody());
  Value candidate =
      tensor::ExtractOp::create(b, stopTokens, scan.getInductionVar());
  Value hit =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, token, candidate);
  scf::YieldOp::create(
      b, ValueRange{arith::OrIOp::create(b, scan.getRegionIterArg(0), hit)});
  return scan.getResult(0);
}

/// Whether `seq` holds a stop token (isStop) at a position in (from, to],
/// reporting each of those tokens to the runtime.
Value DecodeLoopBuilder::committedStop(Value seq, Value from, Value to) {
  Value one = index(1);
  Value first = arith::AddIOp::create(b, from, one);
  Value end = arith::AddIOp::create(b, to, one);
  Value none = arith::ConstantOp::create(b, b.getBoolAttr(false));
  auto scan = scf::ForOp::create(b, first, end, one, ValueRange{none});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(scan.getBody());
  Value token = tensor::ExtractOp::create(b, seq, scan.getInductionVar());
  scf::YieldOp::create(b, ValueRange{arith::OrIOp::create(
                              b, scan.getRegionIterArg(0), reportedStop(token))});
  return scan.getResult(0);
}

Value DecodeLoopBuilder::reportedStop(Value token) {
  Value cancelled =
      func::CallOp::create(b, tokenHook, ValueRange{token}).getResult(0);
  return arith::OrIOp::create(b, cancelled, isStop(token));
}

DecodeState DecodeLoopBuilder::targetStep(const DecodeState &state) {
  Value one = index(1);
  Value token = tensor::FromElementsOp::create(
      b, RankedTensorType::get({1}, b.getI64Type()), ValueRange{state.last});
  func::CallOp forward = call(target, {toRow(token, one),
                                       positions(state.length, one),
                                       state.cache, state.length});
  Value stepKey = arith::AddIOp::create(
      b, key, arith::IndexCastOp::create(b, b.getI64Type(), state.length));
  Value next =
      propose(logitsRow(forward.getResult(0), index(0), target.vocab), stepKey)
          .first;
  Value length = arith::AddIOp::create(b, state.length, one);
  return {tensor::InsertOp::create(b, next, state.seq, length),
          forward.getResults().back(),
          length,
          arith::AddIOp::create(b, state.generated, one),
          arith::AddIOp::create(b, state.steps, one),
          next};
}

//===----------------------------------------------------------------------===//
// Blocks of rounds
//===----------------------------------------------------------------------===//

Value DecodeLoopBuilder::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

Value DecodeLoopBuilder::i64(int64_t value) {
  return arith::ConstantOp::create(b, b.getI64IntegerAttr(value));
}

Value DecodeLoopBuilder::tokens(Value seq, Value start, Value length) {
  Value slice = tensor::ExtractSliceOp::create(
      b, seq, {OpFoldResult(start)}, {OpFoldResult(length)},
      {b.getIndexAttr(1)});
  return toRow(slice, length);
}

Value DecodeLoopBuilder::positions(Value start, Value length) {
  auto type = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  Value iota = tensor::GenerateOp::create(
      b, type, ValueRange{length},
      [&](OpBuilder &nested, Location loc, ValueRange indices) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value position = arith::AddIOp::create(nb, start, indices[0]);
        tensor::YieldOp::create(
            nb, arith::IndexCastOp::create(nb, nb.getI64Type(), position));
      });
  return toRow(iota, length);
}

/// `tensor<1 x length x T>` of a `tensor<? x T>`.
Value DecodeLoopBuilder::toRow(Value vector, Value length) {
  auto type = cast<RankedTensorType>(vector.getType());
  Value shape = tensor::FromElementsOp::create(
      b, RankedTensorType::get({2}, b.getIndexType()),
      ValueRange{index(1), length});
  return tensor::ReshapeOp::create(
      b,
      RankedTensorType::get({1, ShapedType::kDynamic}, type.getElementType()),
      vector, shape);
}

SmallVector<Value> DecodeLoopBuilder::operandsFor(const CachedModel &model,
                                                  ValueRange values) {
  SmallVector<Value> operands;
  func::FuncOp func = model.func;
  SmallVector<Value> all(values);
  // A target that verifies trees runs a chain (the prompt, one token) with
  // the causal mask: each row sees the rows before it.
  if (model.takesTree && all.size() + 1 == func.getNumArguments())
    all.push_back(causalTree(
        tensor::DimOp::create(b, all[model.takesHidden ? 1 : 0], 1)));
  for (auto [value, type] : llvm::zip(all, func.getArgumentTypes()))
    operands.push_back(value.getType() == type
                           ? value
                           : tensor::CastOp::create(b, type, value));
  return operands;
}

Value DecodeLoopBuilder::causalTree(Value rows) {
  auto type = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                                    b.getI1Type());
  return tensor::GenerateOp::create(
      b, type, ValueRange{rows, rows},
      [&](OpBuilder &nested, Location loc, ValueRange indices) {
        ImplicitLocOpBuilder nb(loc, nested);
        tensor::YieldOp::create(
            nb, arith::CmpIOp::create(nb, arith::CmpIPredicate::ule,
                                      indices[1], indices[0]));
      });
}

func::CallOp DecodeLoopBuilder::call(const CachedModel &model,
                                     ValueRange operands) {
  return func::CallOp::create(b, model.func, operandsFor(model, operands));
}

Value DecodeLoopBuilder::logitsRow(Value logits, Value row, int64_t vocab) {
  auto type = cast<RankedTensorType>(logits.getType());
  auto rowType = RankedTensorType::get({1, vocab}, type.getElementType());
  return tensor::ExtractSliceOp::create(
      b, rowType, logits, {b.getIndexAttr(0), row, b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(vocab)},
      SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
}

std::pair<Value, Value> DecodeLoopBuilder::propose(Value row, Value key) {
  auto rowType = cast<RankedTensorType>(row.getType());
  auto tokenType = RankedTensorType::get({1}, b.getI64Type());
  auto op = ProposeOp::create(b, tokenType, rowType, row,
                              rule.isSampling() ? key : Value(), rule);
  Value token = tensor::ExtractOp::create(b, op.getTokens(), index(0));
  return {token, op.getProbs()};
}

Value DecodeLoopBuilder::pickRows(Value rows, Value key) {
  auto rowsType = cast<RankedTensorType>(rows.getType());
  auto tokensType =
      RankedTensorType::get({rowsType.getDimSize(0)}, b.getI64Type());
  return ProposeOp::create(b, tokensType, rowsType, rows,
                           rule.isSampling() ? key : Value(), rule)
      .getTokens();
}

Value DecodeLoopBuilder::argmax(Value row) {
  auto tokenType = RankedTensorType::get({1}, b.getI64Type());
  auto op = ProposeOp::create(b, tokenType, row.getType(), row, Value(),
                              GreedyAttr::get(b.getContext()));
  return tensor::ExtractOp::create(b, op.getTokens(), index(0));
}

SmallVector<Value> DecodeLoopBuilder::mostLikely(Value row, int64_t count) {
  SmallVector<Value> tokens{argmax(row)};
  if (count == 1)
    return tokens;
  auto floatType =
      cast<FloatType>(cast<RankedTensorType>(row.getType()).getElementType());
  Value negativeInfinity = arith::ConstantOp::create(
      b,
      FloatAttr::get(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                /*Negative=*/true)));
  for (int64_t rank = 1; rank < count; ++rank) {
    row = tensor::InsertOp::create(
        b, negativeInfinity, row,
        ValueRange{index(0), arith::IndexCastOp::create(b, b.getIndexType(),
                                                        tokens.back())});
    tokens.push_back(argmax(row));
  }
  return tokens;
}

std::pair<Value, Value> DecodeLoopBuilder::treeRows(TreeAttr tree,
                                                    ArrayRef<int64_t> rows,
                                                    ArrayRef<int64_t> columns,
                                                    Value length) {
  Type i64Type = b.getI64Type();
  int64_t count = rows.size();
  SmallVector<int64_t> depths;
  SmallVector<bool> visible;
  for (int64_t row : rows) {
    depths.push_back(tree.getDepth(row));
    for (int64_t column : columns)
      visible.push_back(tree.isAncestorOrSelf(column, row));
  }
  auto depthType = RankedTensorType::get({count}, i64Type);
  Value depthOf = arith::ConstantOp::create(
      b, DenseIntElementsAttr::get(depthType, depths));
  Value start = arith::IndexCastOp::create(b, i64Type, length);
  Value positions = tensor::GenerateOp::create(
      b, depthType, ValueRange{},
      [&](OpBuilder &nested, Location loc, ValueRange indices) {
        ImplicitLocOpBuilder nb(loc, nested);
        tensor::YieldOp::create(
            nb,
            arith::AddIOp::create(
                nb, start, tensor::ExtractOp::create(nb, depthOf, indices[0])));
      });
  Value mask = arith::ConstantOp::create(
      b, DenseIntElementsAttr::get(
             RankedTensorType::get(
                 {count, static_cast<int64_t>(columns.size())}, b.getI1Type()),
             visible));
  return {positions, mask};
}

std::pair<SmallVector<Value>, Value>
DecodeLoopBuilder::acceptedPath(TreeAttr tree, Value candidates, Value picks) {
  // At each depth, the child of the current row whose token is the
  // target's pick there (siblings are distinct tokens: at most one).
  Value current = index(0), accepted = index(0);
  SmallVector<Value> path{current};
  for (int64_t depth = 1; depth <= tree.getMaxDepth(); ++depth) {
    Value wanted = tensor::ExtractOp::create(b, picks, current);
    Value next = current;
    Value found = arith::ConstantOp::create(b, b.getBoolAttr(false));
    for (int64_t node = 1; node <= tree.getNumNodes(); ++node) {
      if (tree.getDepth(node) != depth)
        continue;
      Value isChild =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, current,
                                index(tree.getParents()[node - 1]));
      Value isWanted = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq,
          tensor::ExtractOp::create(b, candidates, index(node - 1)), wanted);
      Value match = arith::AndIOp::create(b, isChild, isWanted);
      next = arith::SelectOp::create(b, match, index(node), next);
      found = arith::OrIOp::create(b, found, match);
    }
    accepted = arith::AddIOp::create(
        b, accepted, arith::SelectOp::create(b, found, index(1), index(0)));
    current = next;
    path.push_back(current);
  }
  return {path, accepted};
}

VerifiedTree DecodeLoopBuilder::verifyTree(const DecodeState &state,
                                           TreeAttr tree, Value candidates) {
  int64_t nodes = tree.getNumNodes(), rows = nodes + 1;
  int64_t deepest = tree.getMaxDepth();
  Type i64Type = b.getI64Type();
  OpFoldResult one = b.getIndexAttr(1);
  Value tokens = tensor::InsertSliceOp::create(
      b, candidates,
      tensor::FromElementsOp::create(b, RankedTensorType::get({rows}, i64Type),
                                     SmallVector<Value>(rows, state.last)),
      {one}, {b.getIndexAttr(nodes)}, {one});
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, rows));
  auto [positions, mask] = treeRows(tree, all, all, state.length);
  auto verify =
      VerifyOp::create(b, target.func.getResultTypes(),
                       FlatSymbolRefAttr::get(target.func.getSymNameAttr()),
                       operandsFor(target, {toRow(tokens, index(rows)),
                                            toRow(positions, index(rows)),
                                            state.cache, state.length, mask}),
                       /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  Value logits = tensor::ExtractSliceOp::create(
      b, RankedTensorType::get({rows, target.vocab}, floatType),
      verify.getResult(0), SmallVector<OpFoldResult>(3, b.getIndexAttr(0)),
      {one, b.getIndexAttr(rows), b.getIndexAttr(target.vocab)},
      SmallVector<OpFoldResult>(3, one));
  // The target's pick at every row. Sampled, each row draws on its own, so
  // the pick at a row on the accepted path is a draw from the target's
  // distribution given that path: matching it against candidates fixed
  // before the draw keeps sampling lossless (and accepts a child with
  // probability p(child), what sequential rejection of deterministic
  // candidates would).
  Value picks =
      pickRows(logits, rule.isSampling() ? roundKey(state.steps) : Value());
  auto [path, accepted] = acceptedPath(tree, candidates, picks);
  Value current = path.back();

  // Commit the path's tokens and the target's token after it. Entries past
  // the accepted ones repeat the last row's token, inside the round's room,
  // and are overwritten by later rounds.
  Value seq = state.seq;
  SmallVector<Value> sources;
  for (auto [k, row] : llvm::enumerate(path)) {
    Value token = tensor::ExtractOp::create(b, picks, row);
    Value at = arith::AddIOp::create(b, state.length, index(k + 1));
    seq = tensor::InsertOp::create(b, token, seq, at);
    if (k > 0)
      sources.push_back(arith::AddIOp::create(b, state.length, row));
  }
  Value next = tensor::ExtractOp::create(b, picks, current);
  Value fromRows = tensor::ExtractSliceOp::create(
      b,
      tensor::FromElementsOp::create(
          b, RankedTensorType::get({deepest}, b.getIndexType()), sources),
      {b.getIndexAttr(0)}, {OpFoldResult(accepted)}, {one});
  Value afterLast = arith::AddIOp::create(b, state.length, index(1));
  Value cache =
      CacheMoveOp::create(b, state.cache.getType(), verify.getResults().back(),
                          fromRows, afterLast);
  Value produced = arith::AddIOp::create(b, accepted, index(1));
  DecodeState after{seq,
                    cache,
                    arith::AddIOp::create(b, state.length, produced),
                    arith::AddIOp::create(b, state.generated, produced),
                    arith::AddIOp::create(b, state.steps, index(1)),
                    next};
  return {verify, std::move(path), accepted, after};
}

VerifiedRound DecodeLoopBuilder::verifyAndCommit(const DecodeState &state,
                                                 Value proposals, Value probs,
                                                 Value roundKey,
                                                 Value proposed) {
  Type i64Type = b.getI64Type();
  int64_t count = cast<RankedTensorType>(proposals.getType()).getDimSize(0);
  OpFoldResult one = b.getIndexAttr(1);
  Value candidates = tensor::InsertSliceOp::create(
      b, proposals,
      tensor::FromElementsOp::create(
          b, RankedTensorType::get({count + 1}, i64Type),
          SmallVector<Value>(count + 1, state.last)),
      {one}, {b.getIndexAttr(count)}, {one});
  // The forward's rows: all candidates, or the first proposed + 1.
  Value verified = index(count + 1);
  if (proposed) {
    verified = arith::AddIOp::create(b, proposed, index(1));
    candidates = tensor::ExtractSliceOp::create(
        b, candidates, {b.getIndexAttr(0)}, {OpFoldResult(verified)}, {one});
  }
  auto verify =
      VerifyOp::create(b, target.func.getResultTypes(),
                       FlatSymbolRefAttr::get(target.func.getSymNameAttr()),
                       operandsFor(target, {toRow(candidates, verified),
                                            positions(state.length, verified),
                                            state.cache, state.length}),
                       /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  SmallVector<OpFoldResult> zeros(3, b.getIndexAttr(0)), ones(3, one);
  auto rowsType = RankedTensorType::get({count + 1, target.vocab}, floatType);
  Value rows;
  if (proposed) {
    // Rows past the verified ones are zeros: the argmax there is a token,
    // never the -1 proposed, so acceptance stops at `proposed` at most.
    Value verifiedRows = tensor::ExtractSliceOp::create(
        b,
        RankedTensorType::get({ShapedType::kDynamic, target.vocab}, floatType),
        verify.getResult(0), zeros,
        {one, OpFoldResult(verified), b.getIndexAttr(target.vocab)}, ones);
    Value padded =
        linalg::FillOp::create(b,
                               ValueRange{arith::ConstantOp::create(
                                   b, b.getFloatAttr(floatType, 0.0))},
                               ValueRange{tensor::EmptyOp::create(
                                   b, rowsType.getShape(), floatType)})
            .getResult(0);
    rows = tensor::InsertSliceOp::create(
        b, verifiedRows, padded, {b.getIndexAttr(0), b.getIndexAttr(0)},
        {OpFoldResult(verified), b.getIndexAttr(target.vocab)}, {one, one});
  } else {
    rows = tensor::ExtractSliceOp::create(
        b, rowsType, verify.getResult(0), zeros,
        {one, b.getIndexAttr(count + 1), b.getIndexAttr(target.vocab)}, ones);
  }
  bool sampling = rule.isSampling();
  auto accept = AcceptOp::create(
      b, b.getIndexType(), i64Type, proposals, rows,
      sampling ? probs : Value(),
      sampling ? Value(arith::AddIOp::create(b, roundKey,
                                             i64(kKeysPerRound - 1)))
               : Value(),
      rule);
  Value accepted = accept.getCount();
  Value acceptedTokens = tensor::ExtractSliceOp::create(
      b, proposals, {b.getIndexAttr(0)}, {OpFoldResult(accepted)}, {one});
  Value afterLast = arith::AddIOp::create(b, state.length, index(1));
  Value withAccepted = tensor::InsertSliceOp::create(
      b, acceptedTokens, state.seq, {OpFoldResult(afterLast)},
      {OpFoldResult(accepted)}, {one});
  Value length = arith::AddIOp::create(b, afterLast, accepted);
  Value seqNext =
      tensor::InsertOp::create(b, accept.getNext(), withAccepted, length);
  return {verify, accepted, accept.getNext(), seqNext, length};
}

DecodeState DecodeLoopBuilder::advance(const DecodeState &state,
                                       VerifiedRound &round) {
  Value produced = arith::AddIOp::create(b, round.accepted, index(1));
  return {round.seq,
          round.getCache(),
          round.length,
          arith::AddIOp::create(b, state.generated, produced),
          arith::AddIOp::create(b, state.steps, index(1)),
          round.next};
}

Value DecodeLoopBuilder::readClock() {
  return func::CallOp::create(b, clock, ValueRange{}).getResult(0);
}

Value DecodeLoopBuilder::elapsedSince(Value start) {
  return arith::SubIOp::create(b, readClock(), start);
}

Value DecodeLoopBuilder::roundKey(Value steps) {
  Value rounds = arith::IndexCastOp::create(b, b.getI64Type(), steps);
  Value perRound = i64(kKeysPerRound);
  return arith::AddIOp::create(b, key,
                               arith::MulIOp::create(b, rounds, perRound));
}
