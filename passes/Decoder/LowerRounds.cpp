//===- LowerRounds.cpp - a decoder's batched rounds -----------------------===//
//
// A server decodes many sequences at once: their rows share each target
// forward. The runtime keeps one cache of sequence slots and calls these
// functions between its own scheduling decisions (which sequence joins,
// which leaves): a prefill per joining sequence, then rounds over the
// batch. Each picks tokens with the decode loops' own rule and, when it
// samples, draws with the keys the decode loops would use at the same
// positions and rounds, each sequence its own: a sequence's tokens do not
// depend on what else is in the batch.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/Passes.h"

#include "passes/Decoder/Composition.h"
#include "passes/Decoder/DecodeLoop.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
/// Where a batched model (the target's or the draft's twin) takes and
/// returns what a round passes.
struct SlotModel {
  /// Mutable: FuncOp's accessors are not const.
  mutable func::FuncOp func;
  unsigned tokens, positions, cache, firstSlot, lengths;
  unsigned logits, cacheResult;
  /// An MTP module's argument of the target's hidden states, and a
  /// target's result of them (the rows an MTP module reads).
  std::optional<unsigned> hidden, hiddenResult;
  KVCacheType cacheType;
  int64_t vocab;
  bool isTarget;
  /// The results that are the logits of Medusa heads fused into it, by
  /// depth, when rounds propose with them.
  SmallVector<unsigned> heads;
};

/// A batched model's logits, updated cache, heads' logits and hidden
/// states (when it returns them).
struct Forward {
  Value logits, cache;
  SmallVector<Value> heads;
  Value hidden;
};

/// One token per sequence, and (sampled) the distributions they were drawn
/// from, `rows x vocab`.
struct Picks {
  Value tokens, probs;
};

/// The key of row `row`'s draw (an index in the loop over the rows).
using RowKey = llvm::function_ref<Value(ImplicitLocOpBuilder &, Value row)>;
/// The row of sequence `r`'s forward to read (an index).
using RowIndex = llvm::function_ref<Value(ImplicitLocOpBuilder &, Value r)>;
/// The key of sequence `r`'s draw from its `k`th logits.
using ProposalKey =
    llvm::function_ref<Value(ImplicitLocOpBuilder &, Value r, int64_t k)>;

/// Builds one decoder's prefills and rounds.
class RoundBuilder {
public:
  RoundBuilder(SlotModel target, std::optional<SlotModel> draft,
               VerificationRuleAttrInterface rule, Location loc)
      : target(target), draft(draft), rule(rule), loc(loc),
        context(loc.getContext()) {}
  void buildPrefill(ImplicitLocOpBuilder &b, func::FuncOp func,
                    const SlotModel &model);
  void buildRound(ImplicitLocOpBuilder &b, func::FuncOp func);
  void buildBiasedDraftRound(ImplicitLocOpBuilder &b, func::FuncOp func);
  void buildVerify(ImplicitLocOpBuilder &b, func::FuncOp func,
                   int64_t proposals);
  void buildSpecRound(ImplicitLocOpBuilder &b, func::FuncOp func,
                      int64_t gamma);
  void buildHeadsSpecRound(ImplicitLocOpBuilder &b, func::FuncOp func);
  void buildModulePrefill(ImplicitLocOpBuilder &b, func::FuncOp func);
  void buildModuleSpecRound(ImplicitLocOpBuilder &b, func::FuncOp func);

private:
  Value toRows(ImplicitLocOpBuilder &b, Value values, Value rows,
               Value columns, Type type);
  Value span(ImplicitLocOpBuilder &b, Value start, Value count, Type type);
  Value positions(ImplicitLocOpBuilder &b, Value past, int64_t offset,
                  int64_t count, Type type);
  Value pastLengths(ImplicitLocOpBuilder &b, Value lengths, int64_t offset);
  Value columns(ImplicitLocOpBuilder &b, ValueRange tokens, Type type);
  Forward forward(ImplicitLocOpBuilder &b, const SlotModel &model, Value ids,
                  Value rowPositions, Value cache, Value first, Value lengths,
                  Value hidden = {});
  Value hiddenRows(ImplicitLocOpBuilder &b, const Forward &result);
  Picks proposalsAt(ImplicitLocOpBuilder &b, ArrayRef<Value> logits,
                    Value rows, RowIndex rowOf, ProposalKey keyOf);
  Value pick(ImplicitLocOpBuilder &b, const SlotModel &model, Value logits,
             Value rows, OpFoldResult row);
  Picks sample(ImplicitLocOpBuilder &b, const SlotModel &model, Value logits,
               Value rows, OpFoldResult row, RowKey keyOf);
  Value pickAll(ImplicitLocOpBuilder &b, Value logits, Value rows,
                int64_t columns);
  Value acceptedCounts(ImplicitLocOpBuilder &b, ArrayRef<Value> proposals,
                       Value picks, Value rows);
  Picks headProposals(ImplicitLocOpBuilder &b, const Forward &result,
                      Value rows, RowIndex rowOf, RowKey keyOf);
  /// Whether an MTP module (the draft's slot) proposes: the target's
  /// prefills and plain rounds also return their hidden states.
  bool moduleProposes() const { return draft && draft->hidden; }
  /// A target forward verifying given proposals, and what it commits.
  struct Verified {
    Forward result;
    Value batch, picks, counts;
  };
  Verified verifyProposals(ImplicitLocOpBuilder &b, ValueRange arguments,
                           int64_t count, bool sampled = false);
  /// Sequence r's proposals (gamma scalars) and the distributions they
  /// were drawn from (gamma x the target's vocabulary).
  using RowProposals = llvm::function_ref<std::pair<SmallVector<Value>, Value>(
      ImplicitLocOpBuilder &, Value r)>;
  std::pair<Value, Value> acceptSampled(ImplicitLocOpBuilder &b, int64_t gamma,
                                        RowProposals proposalsOf, Value logits,
                                        Value rows, Value keys);

  SlotModel target;
  std::optional<SlotModel> draft;
  VerificationRuleAttrInterface rule;
  Location loc;
  MLIRContext *context;
};
} // namespace

static FailureOr<SlotModel> analyzeSlotModel(func::FuncOp func,
                                             DecoderOp decoder,
                                             StringRef what) {
  auto refuse = [&](const Twine &problem) {
    return decoder.emitError() << "decoder @" << decoder.getSymName()
                               << ": its batched " << what << " @"
                               << func.getSymName() << " " << problem;
  };
  SlotModel model;
  model.func = func;
  model.isTarget = what == "target";
  unsigned *argumentSlots[] = {&model.tokens, &model.positions, &model.cache,
                               &model.firstSlot, &model.lengths};
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
  model.hidden = findArgument(func, IOKind::PreviousHiddenStates);
  if (model.hidden.has_value() != (what == "MTP module"))
    return refuse(model.hidden ? "takes hidden states"
                               : "takes no previous hidden states");
  if (func.getNumArguments() != 5 + (model.hidden ? 1 : 0))
    return refuse("takes arguments besides token ids, positions, its cache, "
                  "the first slot and the past lengths");
  model.hiddenResult = findResult(func, IOKind::HiddenStates);
  std::optional<unsigned> logits = findResult(func, IOKind::Logits);
  std::optional<unsigned> cache = findResult(func, IOKind::KVCache);
  if (!logits || !cache)
    return refuse("does not return logits and its cache");
  model.logits = *logits;
  model.cacheResult = *cache;
  model.cacheType = dyn_cast<KVCacheType>(func.getArgumentTypes()[model.cache]);
  auto logitsType = dyn_cast<RankedTensorType>(func.getResultTypes()[*logits]);
  if (!model.cacheType || !model.cacheType.hasSlots() || !logitsType ||
      logitsType.getRank() != 3 || logitsType.isDynamicDim(2))
    return refuse("has no cache of slots or no batch x rows x vocabulary "
                  "logits");
  model.vocab = logitsType.getDimSize(2);
  if (model.hiddenResult) {
    auto hiddenType = dyn_cast<RankedTensorType>(
        func.getResultTypes()[*model.hiddenResult]);
    if (!hiddenType || hiddenType.getRank() != 3 || hiddenType.isDynamicDim(2))
      return refuse("returns hidden states that are not batch x rows x "
                    "hidden");
  }
  return model;
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

/// Row b: past[b] + offset, ..., past[b] + offset + count - 1 (`past` has
/// one entry per row), as a tensor of `type`.
Value RoundBuilder::positions(ImplicitLocOpBuilder &b, Value past,
                              int64_t offset, int64_t count, Type type) {
  Value rows = tensor::DimOp::create(b, past, 0);
  Value empty = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(count)}, b.getI64Type());
  MLIRContext *ctx = b.getContext();
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  auto generic = linalg::GenericOp::create(
      b, empty.getType(), ValueRange{past}, ValueRange{empty},
      ArrayRef<AffineMap>{row, b.getMultiDimIdentityMap(2)},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value column = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, 1));
        Value shift = arith::AddIOp::create(
            nb, l, column,
            arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(offset)));
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::AddIOp::create(nb, l, args[0], shift)
                                  .getResult()});
      });
  return tensor::CastOp::create(b, type, generic.getResult(0));
}

/// start, ..., start + count - 1 as 1 x count positions of `type`.
Value RoundBuilder::span(ImplicitLocOpBuilder &b, Value start, Value count,
                         Type type) {
  Value empty = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{b.getIndexAttr(1), count}, b.getI64Type());
  auto generic = linalg::GenericOp::create(
      b, empty.getType(), ValueRange{}, ValueRange{empty},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(2)},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value column = arith::AddIOp::create(
            nb, l, start, linalg::IndexOp::create(nb, l, 1));
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                                  column)
                           .getResult()});
      });
  return tensor::CastOp::create(b, type, generic.getResult(0));
}

/// `lengths` + offset, the past lengths of a forward that writes there.
Value RoundBuilder::pastLengths(ImplicitLocOpBuilder &b, Value lengths,
                                int64_t offset) {
  if (offset == 0)
    return lengths;
  auto table = RankedTensorType::get({ShapedType::kDynamic, 1},
                                     b.getI64Type());
  Value column = positions(b, lengths, offset, 1, table);
  return tensor::CollapseShapeOp::create(
      b, column, ArrayRef<ReassociationIndices>{{0, 1}});
}

/// The 1-D `tokens` (one per row each) side by side: rows x tokens.size().
Value RoundBuilder::columns(ImplicitLocOpBuilder &b, ValueRange tokens,
                            Type type) {
  Value rows = tensor::DimOp::create(b, tokens.front(), 0);
  int64_t count = static_cast<int64_t>(tokens.size());
  Value table = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(count)}, b.getI64Type());
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  for (auto [column, values] : llvm::enumerate(tokens))
    table = tensor::InsertSliceOp::create(
        b, values, table, {zero, b.getIndexAttr(column)}, {rows, one},
        {one, one});
  return tensor::CastOp::create(b, type, table);
}

/// `model` on `ids` at `rowPositions`, row b in slot `first` + b.
Forward RoundBuilder::forward(ImplicitLocOpBuilder &b, const SlotModel &model,
                              Value ids, Value rowPositions, Value cache,
                              Value first, Value lengths, Value hidden) {
  SmallVector<Value> operands(model.func.getNumArguments());
  if (model.hidden) {
    Type wanted = model.func.getArgumentTypes()[*model.hidden];
    operands[*model.hidden] =
        hidden.getType() == wanted
            ? hidden
            : Value(tensor::CastOp::create(b, wanted, hidden));
  }
  operands[model.tokens] = ids;
  operands[model.positions] = rowPositions;
  operands[model.cache] = cache;
  operands[model.firstSlot] = first;
  operands[model.lengths] = lengths;
  auto symbol = FlatSymbolRefAttr::get(model.func.getSymNameAttr());
  Operation *call =
      model.isTarget
          ? VerifyOp::create(b, model.func.getResultTypes(), symbol, operands,
                             /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr)
                .getOperation()
          : func::CallOp::create(b, model.func, operands).getOperation();
  Forward result{call->getResult(model.logits),
                 call->getResult(model.cacheResult),
                 {}};
  for (unsigned head : model.heads)
    result.heads.push_back(call->getResult(head));
  if (model.hiddenResult)
    result.hidden = call->getResult(*model.hiddenResult);
  return result;
}

/// A forward's hidden states (batch x rows x hidden) as one row per
/// position: batch * rows x hidden, sequence by sequence.
Value RoundBuilder::hiddenRows(ImplicitLocOpBuilder &b, const Forward &result) {
  auto type = cast<RankedTensorType>(result.hidden.getType());
  return tensor::CollapseShapeOp::create(
      b,
      RankedTensorType::get({ShapedType::kDynamic, type.getDimSize(2)},
                            type.getElementType()),
      result.hidden, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// The greedy pick at row `row` of each of `rows` sequences.
Value RoundBuilder::pick(ImplicitLocOpBuilder &b, const SlotModel &model,
                         Value logits, Value rows, OpFoldResult row) {
  Type f = cast<RankedTensorType>(logits.getType()).getElementType();
  auto pickedType =
      RankedTensorType::get({ShapedType::kDynamic, model.vocab}, f);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  Value picked = tensor::ExtractSliceOp::create(
      b, pickedType, logits, {zero, row, zero},
      {rows, one, b.getIndexAttr(model.vocab)}, {one, one, one});
  auto tokensType = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  return ProposeOp::create(b, tokensType, pickedType, picked, Value(),
                           GreedyAttr::get(context))
      .getTokens();
}

/// Row r's update of the values a loop over a round's sequences carries.
using RowBody = llvm::function_ref<SmallVector<Value>(
    ImplicitLocOpBuilder &, Value r, ValueRange carried)>;

/// A loop over the `rows` sequences of a round carrying `init` (each
/// sequence draws, accepts or picks with its own row and key).
static scf::ForOp overRows(ImplicitLocOpBuilder &b, Value rows,
                           ValueRange init, RowBody body) {
  return scf::ForOp::create(
      b, arith::ConstantIndexOp::create(b, 0), rows,
      arith::ConstantIndexOp::create(b, 1), init,
      [&](OpBuilder &nested, Location l, Value r, ValueRange carried) {
        ImplicitLocOpBuilder nb(l, nested);
        scf::YieldOp::create(nb, body(nb, r, carried));
      });
}

/// Row `row` of each of `rows` sequences' logits sampled under the rule,
/// sequence b with the key keyOf(b): one draw at a time, since spec.propose
/// keys all its rows with one key.
Picks RoundBuilder::sample(ImplicitLocOpBuilder &b, const SlotModel &model,
                           Value logits, Value rows, OpFoldResult row,
                           RowKey keyOf) {
  Type f = cast<RankedTensorType>(logits.getType()).getElementType();
  Type i64 = b.getI64Type();
  auto rowType = RankedTensorType::get({1, model.vocab}, f);
  OpFoldResult vocab = b.getIndexAttr(model.vocab);
  Value init[] = {
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{rows}, i64),
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{rows, vocab}, f)};
  auto loop = overRows(
      b, rows, init,
      [&](ImplicitLocOpBuilder &nb, Value r,
          ValueRange args) -> SmallVector<Value> {
        OpFoldResult one = nb.getIndexAttr(1), zero = nb.getIndexAttr(0);
        Value logitsRow = tensor::ExtractSliceOp::create(
            nb, rowType, logits, {r, row, zero}, {one, one, vocab},
            {one, one, one});
        auto drawn =
            ProposeOp::create(nb, RankedTensorType::get({1}, i64), rowType,
                              logitsRow, keyOf(nb, r), rule);
        Value token = tensor::ExtractOp::create(
            nb, drawn.getTokens(),
            ValueRange{arith::ConstantIndexOp::create(nb, 0)});
        Value probs = tensor::InsertSliceOp::create(
            nb, drawn.getProbs(), args[1], {r, zero}, {one, vocab},
            {one, one});
        return {tensor::InsertOp::create(nb, token, args[0], r), probs};
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// The target's greedy picks at every row: rows x columns.
Value RoundBuilder::pickAll(ImplicitLocOpBuilder &b, Value logits, Value rows,
                            int64_t columns) {
  Type f = cast<RankedTensorType>(logits.getType()).getElementType();
  auto flatType =
      RankedTensorType::get({ShapedType::kDynamic, target.vocab}, f);
  Value flat = tensor::CollapseShapeOp::create(
      b, flatType, logits, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  auto tokensType = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  Value picks = ProposeOp::create(b, tokensType, flatType, flat, Value(),
                                  GreedyAttr::get(context))
                    .getTokens();
  auto table = RankedTensorType::get({ShapedType::kDynamic, columns},
                                     b.getI64Type());
  return toRows(b, picks, rows, arith::ConstantIndexOp::create(b, columns),
                table);
}

/// Per row, 1 + how many leading proposals equal the target's picks there:
/// the tokens the round commits (picks[b, 0 .. count)), since an accepted
/// proposal is the target's pick.
Value RoundBuilder::acceptedCounts(ImplicitLocOpBuilder &b,
                                   ArrayRef<Value> proposals, Value picks,
                                   Value rows) {
  Type i64 = b.getI64Type();
  Value init = tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{rows}, i64);
  auto loop = overRows(
      b, rows, init,
      [&](ImplicitLocOpBuilder &nb, Value row,
          ValueRange args) -> SmallVector<Value> {
        Value count = arith::ConstantOp::create(nb, nb.getI64IntegerAttr(1));
        Value alive = arith::ConstantIntOp::create(nb, 1, 1);
        for (auto [column, proposal] : llvm::enumerate(proposals)) {
          Value proposed = tensor::ExtractOp::create(nb, proposal, row);
          Value picked = tensor::ExtractOp::create(
              nb, picks,
              ValueRange{row, arith::ConstantIndexOp::create(nb, column)});
          alive = arith::AndIOp::create(
              nb, alive,
              arith::CmpIOp::create(nb, arith::CmpIPredicate::eq, proposed,
                                    picked));
          count = arith::AddIOp::create(
              nb, count, arith::ExtUIOp::create(nb, i64, alive));
        }
        return {tensor::InsertOp::create(nb, count, args[0], row)};
      });
  return loop.getResult(0);
}

/// The proposals of `rows` sequences from each of `logits` (batch x rows x
/// vocabulary, one per proposal: heads, or a module's), sequence r's at
/// row rowOf(r): rows x logits.size() tokens under the rule (sampled: the
/// kth drawn with keyOf(r, k)) and, sampled, the distributions they were
/// drawn from, rows x logits.size() x vocabulary.
Picks RoundBuilder::proposalsAt(ImplicitLocOpBuilder &b,
                                ArrayRef<Value> logits, Value rows,
                                RowIndex rowOf, ProposalKey keyOf) {
  auto logitsType = cast<RankedTensorType>(logits.front().getType());
  Type f = logitsType.getElementType();
  int64_t vocabSize = logitsType.getDimSize(2);
  Type i64 = b.getI64Type();
  bool sampled = rule.isSampling();
  auto rowType = RankedTensorType::get({1, vocabSize}, f);
  auto count = static_cast<int64_t>(logits.size());
  OpFoldResult vocab = b.getIndexAttr(vocabSize);
  SmallVector<Value> init{tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(count)}, i64)};
  if (sampled)
    init.push_back(tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(count), vocab}, f));
  VerificationRuleAttrInterface proposalRule =
      sampled ? rule : VerificationRuleAttrInterface(GreedyAttr::get(context));
  auto loop = overRows(
      b, rows, init,
      [&](ImplicitLocOpBuilder &nb, Value r,
          ValueRange args) -> SmallVector<Value> {
        OpFoldResult one = nb.getIndexAttr(1), zero = nb.getIndexAttr(0);
        Value at = rowOf(nb, r);
        SmallVector<Value> tables(args);
        for (auto [k, source] : llvm::enumerate(logits)) {
          Value row = tensor::ExtractSliceOp::create(
              nb, rowType, source, {r, at, zero}, {one, one, vocab},
              {one, one, one});
          Value key = sampled ? keyOf(nb, r, k) : Value();
          auto drawn = ProposeOp::create(nb, RankedTensorType::get({1}, i64),
                                         rowType, row, key, proposalRule);
          Value token = tensor::ExtractOp::create(
              nb, drawn.getTokens(),
              ValueRange{arith::ConstantIndexOp::create(nb, 0)});
          Value column = arith::ConstantIndexOp::create(nb, k);
          tables[0] =
              tensor::InsertOp::create(nb, token, tables[0], ValueRange{r, column});
          if (sampled)
            tables[1] = tensor::InsertSliceOp::create(
                nb, drawn.getProbs(), tables[1], {r, nb.getIndexAttr(k), zero},
                {one, one, vocab}, {one, one, one});
        }
        return tables;
      });
  Picks picks{
      tensor::CastOp::create(
          b, RankedTensorType::get({ShapedType::kDynamic, count}, i64),
          loop.getResult(0)),
      {}};
  if (sampled)
    picks.probs = tensor::CastOp::create(
        b, RankedTensorType::get({ShapedType::kDynamic, count, vocabSize}, f),
        loop.getResult(1));
  return picks;
}

/// The heads' proposals of `rows` sequences for their next round
/// (proposalsAt), head k drawing with keyOf(r) + k + 1, as the decode loop
/// keys a round's heads after its round key.
Picks RoundBuilder::headProposals(ImplicitLocOpBuilder &b,
                                  const Forward &result, Value rows,
                                  RowIndex rowOf, RowKey keyOf) {
  return proposalsAt(
      b, result.heads, rows, rowOf,
      [&](ImplicitLocOpBuilder &nb, Value r, int64_t k) -> Value {
        return arith::AddIOp::create(
            nb, keyOf(nb, r),
            arith::ConstantOp::create(nb, nb.getI64IntegerAttr(k + 1)));
      });
}

/// Rejection sampling per sequence: sequence b's `gamma` proposals and
/// their distributions (proposalsOf(b)) against its gamma + 1 rows of the
/// target's `logits`, with its round's last key (keys[b] is its round key).
/// Returns what each commits, rows x (gamma + 1) (the accepted proposals,
/// then the target's token after them), and how many.
std::pair<Value, Value> RoundBuilder::acceptSampled(ImplicitLocOpBuilder &b,
                                                    int64_t gamma,
                                                    RowProposals proposalsOf,
                                                    Value logits, Value rows,
                                                    Value keys) {
  Type f = cast<RankedTensorType>(logits.getType()).getElementType();
  Type i64 = b.getI64Type();
  Value init[] = {tensor::EmptyOp::create(
                      b, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(gamma + 1)},
                      i64),
                  tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{rows}, i64)};
  auto loop = overRows(
      b, rows, init,
      [&](ImplicitLocOpBuilder &nb, Value r,
          ValueRange args) -> SmallVector<Value> {
        OpFoldResult one = nb.getIndexAttr(1), zero = nb.getIndexAttr(0);
        auto [tokens, q] = proposalsOf(nb, r);
        Value proposed = tensor::FromElementsOp::create(
            nb, RankedTensorType::get({gamma}, i64), tokens);
        Value targetRows = tensor::ExtractSliceOp::create(
            nb, RankedTensorType::get({gamma + 1, target.vocab}, f), logits,
            {r, zero, zero},
            {one, nb.getIndexAttr(gamma + 1), nb.getIndexAttr(target.vocab)},
            {one, one, one});
        Value key = arith::AddIOp::create(
            nb, tensor::ExtractOp::create(nb, keys, r),
            arith::ConstantOp::create(
                nb, nb.getI64IntegerAttr(kKeysPerRound - 1)));
        auto accept = AcceptOp::create(nb, nb.getIndexType(), i64, proposed,
                                       targetRows, q, key, rule);
        // The accepted proposals, then the target's token at the first
        // rejected one (or after all of them).
        tokens.push_back(accept.getNext());
        Value committed = tensor::InsertOp::create(
            nb, accept.getNext(),
            tensor::FromElementsOp::create(
                nb, RankedTensorType::get({gamma + 1}, i64), tokens),
            accept.getCount());
        Value picks = tensor::InsertSliceOp::create(
            nb, committed, args[0], {r, zero},
            {one, nb.getIndexAttr(gamma + 1)}, {one, one});
        Value count = arith::IndexCastOp::create(
            nb, i64,
            arith::AddIOp::create(nb, accept.getCount(),
                                  arith::ConstantIndexOp::create(nb, 1)));
        return {picks, tensor::InsertOp::create(nb, count, args[1], r)};
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// @<decoder>_prefill(cache, slot, start, tokens, key) -> (next token,
/// cache): tokens at positions start.. of slot `slot` (a prompt, or a chunk
/// of one after `start` positions already cached). The target's next token
/// follows the rule, sampled with `key` (the sequence's seed, as the decode
/// loops draw their first token); the draft's is its greedy pick. With
/// heads, it also returns their proposals after the prompt
/// (`tensor<heads x i64>`) before the cache; when an MTP module proposes,
/// the target's hidden states at the rows (rows x hidden).
void RoundBuilder::buildPrefill(ImplicitLocOpBuilder &b, func::FuncOp func,
                                const SlotModel &model) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), slot = entry->getArgument(1),
        start = entry->getArgument(2), tokens = entry->getArgument(3),
        key = entry->getArgument(4);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value count = tensor::DimOp::create(b, tokens, 0);
  Type idsType = model.func.getArgumentTypes()[model.tokens];
  Type positionsType = model.func.getArgumentTypes()[model.positions];
  Value past = tensor::CastOp::create(
      b, model.func.getArgumentTypes()[model.lengths],
      tensor::FromElementsOp::create(
          b, RankedTensorType::get({1}, b.getI64Type()),
          ValueRange{arith::IndexCastOp::create(b, b.getI64Type(), start)}));
  Value rowPositions = span(b, start, count, positionsType);
  Forward result = forward(b, model, toRows(b, tokens, c1, count, idsType),
                           rowPositions, cache, slot, past);
  OpFoldResult lastRow = arith::SubIOp::create(b, count, c1).getResult();
  Value picked =
      model.isTarget && rule.isSampling()
          ? sample(b, model, result.logits, c1, lastRow,
                   [&](ImplicitLocOpBuilder &, Value) { return key; })
                .tokens
          : pick(b, model, result.logits, c1, lastRow);
  Value next = tensor::ExtractOp::create(
      b, picked, ValueRange{arith::ConstantIndexOp::create(b, 0)});
  SmallVector<Value> results{next};
  if (!result.heads.empty()) {
    // As the decode loop proposes after its prefill: keyed by the seed.
    Picks proposed = headProposals(
        b, result, c1,
        [&](ImplicitLocOpBuilder &, Value) {
          return getValueOrCreateConstantIndexOp(b, b.getLoc(), lastRow);
        },
        [&](ImplicitLocOpBuilder &, Value) { return key; });
    auto heads = static_cast<int64_t>(result.heads.size());
    Value table = tensor::CastOp::create(
        b, RankedTensorType::get({1, heads}, b.getI64Type()), proposed.tokens);
    results.push_back(tensor::CollapseShapeOp::create(
        b, table, ArrayRef<ReassociationIndices>{{0, 1}}));
    if (proposed.probs) {
      Type f = cast<RankedTensorType>(proposed.probs.getType()).getElementType();
      Value q = tensor::CastOp::create(
          b, RankedTensorType::get({1, heads, target.vocab}, f),
          proposed.probs);
      results.push_back(tensor::CollapseShapeOp::create(
          b, q, ArrayRef<ReassociationIndices>{{0, 1}, {2}}));
    }
  }
  if (model.isTarget && moduleProposes())
    results.push_back(hiddenRows(b, result));
  results.push_back(result.cache);
  func::ReturnOp::create(b, results);
}

/// keys[r] + lengths[r] + offset: sequence r's key at its position
/// lengths[r] + offset.
static Value keyAtPosition(ImplicitLocOpBuilder &b, Value keys, Value lengths,
                           Value r, int64_t offset) {
  Value key = arith::AddIOp::create(b, tensor::ExtractOp::create(b, keys, r),
                                    tensor::ExtractOp::create(b, lengths, r));
  if (offset == 0)
    return key;
  return arith::AddIOp::create(
      b, key, arith::ConstantOp::create(b, b.getI64IntegerAttr(offset)));
}

/// @<decoder>_round(cache, first, lengths, tokens, keys) -> (next tokens,
/// cache). Sampled, sequence b draws with keys[b] + lengths[b] (its seed
/// plus its position, as the decode loops' target-only steps do). With
/// heads, it also returns their proposals for each sequence's next round
/// (rows x heads) before the cache; when an MTP module proposes, the
/// target's hidden states at the rows (rows x hidden).
void RoundBuilder::buildRound(ImplicitLocOpBuilder &b, func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), first = entry->getArgument(1),
        lengths = entry->getArgument(2), tokens = entry->getArgument(3),
        keys = entry->getArgument(4);
  Value batch = tensor::DimOp::create(b, tokens, 0);
  Type idsType = target.func.getArgumentTypes()[target.tokens];
  Type positionsType = target.func.getArgumentTypes()[target.positions];
  Value rowPositions = positions(b, lengths, 0, 1, positionsType);
  Value ids = columns(b, tokens, idsType);
  Forward result =
      forward(b, target, ids, rowPositions, cache, first, lengths);
  Value next =
      rule.isSampling()
          ? sample(b, target, result.logits, batch, b.getIndexAttr(0),
                   [&](ImplicitLocOpBuilder &nb, Value r) {
                     return keyAtPosition(nb, keys, lengths, r, 0);
                   })
                .tokens
          : pick(b, target, result.logits, batch, b.getIndexAttr(0));
  SmallVector<Value> results{next};
  if (!result.heads.empty()) {
    // Keyed apart from the decode loops' draws (specrt_generate has no
    // such round): the seed + 2^19 + position, and the heads' offsets.
    Picks proposed = headProposals(
        b, result, batch,
        [&](ImplicitLocOpBuilder &nb, Value) {
          return arith::ConstantIndexOp::create(nb, 0);
        },
        [&](ImplicitLocOpBuilder &nb, Value r) {
          return keyAtPosition(nb, keys, lengths, r, kKeysPerRound / 2);
        });
    results.push_back(proposed.tokens);
    if (proposed.probs)
      results.push_back(proposed.probs);
  }
  if (moduleProposes())
    results.push_back(hiddenRows(b, result));
  results.push_back(result.cache);
  func::ReturnOp::create(b, results);
}

/// @<decoder>_draft_round(draft cache, first, lengths, tokens, bias) ->
/// (logits, draft cache) for a cross-tokenizer draft: one step of the draft
/// over a run of slots, sequence b's logits at its token plus row b of
/// `bias` (0 or -inf per token). The runtime chooses or draws the proposals
/// from them by the bytes the tokens spell, and the bias restricts a step
/// (to the tokens that spell on from a partial last token, token healing,
/// or to the tokens both vocabularies share).
void RoundBuilder::buildBiasedDraftRound(ImplicitLocOpBuilder &b,
                                         func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), first = entry->getArgument(1),
        lengths = entry->getArgument(2), tokens = entry->getArgument(3),
        bias = entry->getArgument(4);
  const SlotModel &model = *draft;
  Value batch = tensor::DimOp::create(b, tokens, 0);
  Value rowPositions = positions(b, lengths, 0, 1,
                                 model.func.getArgumentTypes()[model.positions]);
  Value ids = columns(b, tokens, model.func.getArgumentTypes()[model.tokens]);
  Forward result = forward(b, model, ids, rowPositions, cache, first, lengths);
  Type f = cast<RankedTensorType>(result.logits.getType()).getElementType();
  auto rowsType = RankedTensorType::get({ShapedType::kDynamic, model.vocab}, f);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  Value last = tensor::ExtractSliceOp::create(
      b, rowsType, result.logits, {zero, zero, zero},
      {batch, one, b.getIndexAttr(model.vocab)}, {one, one, one});
  Value biasRows = tensor::CastOp::create(b, rowsType, bias);
  auto add = linalg::GenericOp::create(
      b, rowsType, ValueRange{last, biasRows}, ValueRange{last},
      SmallVector<AffineMap>(3, b.getMultiDimIdentityMap(2)),
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::AddFOp::create(nb, l, args[0], args[1])
                                  .getResult()});
      });
  func::ReturnOp::create(b, ValueRange{add.getResult(0), result.cache});
}

/// @<decoder>_verify(cache, first, lengths, tokens, proposals) -> (picks,
/// counts, cache): verifyProposals on proposals in the target's tokens,
/// from wherever the runtime got them (a cross-tokenizer draft's,
/// translated). Sampled, it also takes the distributions they were drawn
/// from in the target's vocabulary (rows x proposals x vocabulary) and
/// each sequence's round key, and accepts by rejection sampling.
void RoundBuilder::buildVerify(ImplicitLocOpBuilder &b, func::FuncOp func,
                               int64_t proposals) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Verified verified = verifyProposals(b, entry->getArguments(), proposals,
                                      rule.isSampling());
  func::ReturnOp::create(b, ValueRange{verified.picks, verified.counts,
                                       verified.result.cache});
}

/// (cache, first, lengths, tokens, proposed[, q, keys]): sequence b's
/// `count` proposals (row b of `proposed`) verified after its last token in
/// one target forward of count + 1 rows per sequence; it commits picks[b, 0
/// .. counts[b]) (greedy: every committed token is the target's own pick;
/// `sampled`: by rejection sampling against q[b], with keys[b]).
RoundBuilder::Verified
RoundBuilder::verifyProposals(ImplicitLocOpBuilder &b, ValueRange arguments,
                              int64_t count, bool sampled) {
  Value cache = arguments[0], first = arguments[1], lengths = arguments[2],
        tokens = arguments[3], proposed = arguments[4];
  Value batch = tensor::DimOp::create(b, tokens, 0);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  SmallVector<Value> verified{tokens};
  for (int64_t k = 0; k < count; ++k)
    verified.push_back(tensor::ExtractSliceOp::create(
        b, RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type()),
        proposed, {zero, b.getIndexAttr(k)}, {batch, one}, {one, one}));
  Value rowPositions =
      positions(b, lengths, 0, count + 1,
                target.func.getArgumentTypes()[target.positions]);
  Value ids =
      columns(b, verified, target.func.getArgumentTypes()[target.tokens]);
  Forward result =
      forward(b, target, ids, rowPositions, cache, first, lengths);
  if (sampled) {
    Value q = arguments[5], keys = arguments[6];
    Type f = cast<RankedTensorType>(q.getType()).getElementType();
    OpFoldResult vocab = b.getIndexAttr(target.vocab);
    auto rowProposals = [&](ImplicitLocOpBuilder &nb, Value r) {
      SmallVector<Value> row;
      for (int64_t k = 0; k < count; ++k)
        row.push_back(tensor::ExtractOp::create(
            nb, proposed, ValueRange{r, arith::ConstantIndexOp::create(nb, k)}));
      Value probs = tensor::ExtractSliceOp::create(
          nb, RankedTensorType::get({count, target.vocab}, f), q,
          {r, zero, zero}, {one, nb.getIndexAttr(count), vocab},
          {one, one, one});
      return std::make_pair(row, probs);
    };
    auto [picks, counts] =
        acceptSampled(b, count, rowProposals, result.logits, batch, keys);
    return {result, batch, picks, counts};
  }
  Value picks = pickAll(b, result.logits, batch, count + 1);
  Value counts = acceptedCounts(b, ArrayRef<Value>(verified).drop_front(),
                                picks, batch);
  return {result, batch, picks, counts};
}

/// Row counts[r] - 1 of sequence r: the last it committed in a round.
static Value lastCommittedRow(ImplicitLocOpBuilder &b, Value counts, Value r) {
  return arith::SubIOp::create(
      b,
      arith::IndexCastOp::create(b, b.getIndexType(),
                                 tensor::ExtractOp::create(b, counts, r)),
      arith::ConstantIndexOp::create(b, 1));
}

/// @<decoder>_spec_round(cache, first, lengths, tokens, proposals, [q,]
/// keys) -> (picks, counts, proposals, [q,] cache) with Medusa heads:
/// sequence b's proposals (row b, from its previous round's heads) are
/// verified after its last token in one forward of heads + 1 rows per
/// sequence; it commits picks[b, 0 .. counts[b]), and the heads at its last
/// committed row give its next proposals. Sampled, the proposals come with
/// the distributions they were drawn from (q, rows x heads x vocabulary),
/// acceptance is by rejection sampling with keys[b], and the heads draw
/// with keys[b] + k + 1, as the decode loop's round keys them.
void RoundBuilder::buildHeadsSpecRound(ImplicitLocOpBuilder &b,
                                       func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  bool sampled = rule.isSampling();
  Value keys = entry->getArguments().back();
  Verified verified = verifyProposals(
      b, entry->getArguments().take_front(sampled ? 7 : 5),
      static_cast<int64_t>(target.heads.size()), sampled);
  Picks next = headProposals(
      b, verified.result, verified.batch,
      [&](ImplicitLocOpBuilder &nb, Value r) {
        return lastCommittedRow(nb, verified.counts, r);
      },
      [&](ImplicitLocOpBuilder &nb, Value r) -> Value {
        return tensor::ExtractOp::create(nb, keys, r);
      });
  SmallVector<Value> results{verified.picks, verified.counts, next.tokens};
  if (sampled)
    results.push_back(next.probs);
  results.push_back(verified.result.cache);
  func::ReturnOp::create(b, results);
}

/// @<decoder>_module_prefill(module cache, slot, start, hidden, tokens, key)
/// -> (proposal, [q,] module cache): the MTP module of slot `slot` at
/// positions start.., row i reading the target's hidden states at start +
/// i (row i of `hidden`) and the token after it (tokens[i]); its proposal
/// after the last row (sampled: drawn with `key`, and its distribution q).
/// The runtime catches the module up with it on what the target's prefills
/// and plain rounds left it behind.
void RoundBuilder::buildModulePrefill(ImplicitLocOpBuilder &b,
                                      func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), slot = entry->getArgument(1),
        start = entry->getArgument(2), hidden = entry->getArgument(3),
        tokens = entry->getArgument(4), key = entry->getArgument(5);
  const SlotModel &module = *draft;
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value count = tensor::DimOp::create(b, tokens, 0);
  Type i64 = b.getI64Type();
  Value past = tensor::CastOp::create(
      b, module.func.getArgumentTypes()[module.lengths],
      tensor::FromElementsOp::create(
          b, RankedTensorType::get({1}, i64),
          ValueRange{arith::IndexCastOp::create(b, i64, start)}));
  auto hiddenType = cast<RankedTensorType>(hidden.getType());
  Value rows = tensor::ExpandShapeOp::create(
      b,
      RankedTensorType::get({1, ShapedType::kDynamic, hiddenType.getDimSize(1)},
                            hiddenType.getElementType()),
      hidden, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  Forward result = forward(
      b, module,
      toRows(b, tokens, c1, count,
             module.func.getArgumentTypes()[module.tokens]),
      span(b, start, count, module.func.getArgumentTypes()[module.positions]),
      cache, slot, past, rows);
  Value last = arith::SubIOp::create(b, count, c1);
  Picks proposal = proposalsAt(
      b, result.logits, c1,
      [&](ImplicitLocOpBuilder &, Value) { return last; },
      [&](ImplicitLocOpBuilder &, Value, int64_t) { return key; });
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  SmallVector<Value> results{
      tensor::ExtractOp::create(b, proposal.tokens, ValueRange{c0, c0})};
  if (rule.isSampling())
    results.push_back(tensor::CollapseShapeOp::create(
        b, RankedTensorType::get({module.vocab}, hiddenType.getElementType()),
        tensor::CastOp::create(
            b,
            RankedTensorType::get({1, 1, module.vocab},
                                  hiddenType.getElementType()),
            proposal.probs),
        ArrayRef<ReassociationIndices>{{0, 1, 2}}));
  results.push_back(result.cache);
  func::ReturnOp::create(b, results);
}

/// @<decoder>_spec_round(cache, module cache, first, lengths, tokens,
/// proposals, [q,] keys) -> (picks, counts, proposals, [q,] cache, module
/// cache) with an MTP module: sequence b's proposal (row b, the module's
/// after its last token) is verified in one target forward of 2 rows per
/// sequence; then the module runs on those rows (the target's hidden
/// states there and the tokens the round committed after them) and its
/// row at the last committed token proposes the sequence's next. Sampled,
/// the proposals come with the distributions they were drawn from (q,
/// rows x 1 x vocabulary), acceptance is by rejection sampling with
/// keys[b], and the next proposal is drawn with keys[b] + 1.
void RoundBuilder::buildModuleSpecRound(ImplicitLocOpBuilder &b,
                                        func::FuncOp func) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  bool sampled = rule.isSampling();
  Value cache = entry->getArgument(0), moduleCache = entry->getArgument(1),
        first = entry->getArgument(2), lengths = entry->getArgument(3),
        keys = entry->getArguments().back();
  SmallVector<Value> arguments{cache, first, lengths, entry->getArgument(4),
                               entry->getArgument(5)};
  if (sampled)
    arguments.append({entry->getArgument(6), keys});
  Verified verified = verifyProposals(b, arguments, 1, sampled);
  const SlotModel &module = *draft;
  Value ids = tensor::CastOp::create(
      b, module.func.getArgumentTypes()[module.tokens], verified.picks);
  Forward proposed = forward(
      b, module, ids,
      positions(b, lengths, 0, 2,
                module.func.getArgumentTypes()[module.positions]),
      moduleCache, first, lengths, verified.result.hidden);
  // At each sequence's last committed row, as the decode loop draws an
  // MTP module's proposal after a round (its round key + 1).
  Picks next = proposalsAt(
      b, proposed.logits, verified.batch,
      [&](ImplicitLocOpBuilder &nb, Value r) {
        return lastCommittedRow(nb, verified.counts, r);
      },
      [&](ImplicitLocOpBuilder &nb, Value r, int64_t) -> Value {
        return arith::AddIOp::create(
            nb, tensor::ExtractOp::create(nb, keys, r),
            arith::ConstantOp::create(nb, nb.getI64IntegerAttr(1)));
      });
  SmallVector<Value> results{verified.picks, verified.counts, next.tokens};
  if (sampled)
    results.push_back(next.probs);
  results.append({verified.result.cache, proposed.cache});
  func::ReturnOp::create(b, results);
}

/// @<decoder>_spec_round(cache, draft cache, first, lengths, previous,
/// tokens, keys) -> (picks, counts, cache, draft cache). Row b's sequence
/// holds lengths[b] positions in the target's cache and at least
/// lengths[b] - 1 in the draft's; `previous` and `tokens` are its tokens at
/// lengths[b] - 1 and lengths[b]. The draft proposes gamma tokens (its
/// first forward feeds both, so a draft one position behind catches up),
/// the target verifies them in one forward of gamma + 1 rows per sequence,
/// and sequence b commits picks[b, 0 .. counts[b]). Sampled, keys[b] is the
/// sequence's round key, and the draws and the acceptance use the keys the
/// decode loop's round would.
void RoundBuilder::buildSpecRound(ImplicitLocOpBuilder &b, func::FuncOp func,
                                  int64_t gamma) {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value cache = entry->getArgument(0), draftCache = entry->getArgument(1),
        first = entry->getArgument(2), lengths = entry->getArgument(3),
        previous = entry->getArgument(4), tokens = entry->getArgument(5),
        keys = entry->getArgument(6);
  Value batch = tensor::DimOp::create(b, tokens, 0);
  auto argumentType = [](const SlotModel &model, unsigned index) {
    return model.func.getArgumentTypes()[index];
  };
  SmallVector<Picks> proposals;
  for (int64_t step = 0; step < gamma; ++step) {
    // Step 0 feeds positions length - 1 and length, step k > 0 length + k.
    int64_t offset = step == 0 ? -1 : step;
    SmallVector<Value> fed = step == 0 ? SmallVector<Value>{previous, tokens}
                                       : SmallVector<Value>{
                                             proposals.back().tokens};
    // Built in order, not as call arguments (evaluated in any order).
    Value rowPositions = positions(b, lengths, offset, fed.size(),
                                   argumentType(*draft, draft->positions));
    Value past = pastLengths(b, lengths, offset);
    Value ids = columns(b, fed, argumentType(*draft, draft->tokens));
    Forward drafted =
        forward(b, *draft, ids, rowPositions, draftCache, first, past);
    draftCache = drafted.cache;
    OpFoldResult lastRow = b.getIndexAttr(fed.size() - 1);
    proposals.push_back(
        rule.isSampling()
            ? sample(b, *draft, drafted.logits, batch, lastRow,
                     [&](ImplicitLocOpBuilder &nb, Value r) {
                       return keyAtPosition(nb, keys, lengths, r, step);
                     })
            : Picks{pick(b, *draft, drafted.logits, batch, lastRow), {}});
  }
  SmallVector<Value> verified{tokens};
  for (const Picks &proposal : proposals)
    verified.push_back(proposal.tokens);
  Value rowPositions = positions(b, lengths, 0, gamma + 1,
                                 argumentType(target, target.positions));
  Value ids = columns(b, verified, argumentType(target, target.tokens));
  Forward result =
      forward(b, target, ids, rowPositions, cache, first, lengths);
  Value picks, counts;
  if (rule.isSampling()) {
    int64_t draftVocab = draft->vocab;
    Type f = cast<RankedTensorType>(result.logits.getType()).getElementType();
    auto rowProposals = [&](ImplicitLocOpBuilder &nb, Value r) {
      OpFoldResult one = nb.getIndexAttr(1), zero = nb.getIndexAttr(0);
      SmallVector<Value> tokens;
      Value q =
          tensor::EmptyOp::create(nb, ArrayRef<int64_t>{gamma, draftVocab}, f);
      for (auto [k, proposal] : llvm::enumerate(proposals)) {
        tokens.push_back(tensor::ExtractOp::create(nb, proposal.tokens, r));
        Value row = tensor::ExtractSliceOp::create(
            nb, RankedTensorType::get({1, draftVocab}, f), proposal.probs,
            {r, zero}, {one, nb.getIndexAttr(draftVocab)}, {one, one});
        q = tensor::InsertSliceOp::create(
            nb, row, q, {nb.getIndexAttr(k), zero},
            {one, nb.getIndexAttr(draftVocab)}, {one, one});
      }
      return std::make_pair(tokens, q);
    };
    std::tie(picks, counts) = acceptSampled(b, gamma, rowProposals,
                                            result.logits, batch, keys);
  } else {
    picks = pickAll(b, result.logits, batch, gamma + 1);
    counts = acceptedCounts(b, ArrayRef<Value>(verified).drop_front(), picks,
                            batch);
  }
  func::ReturnOp::create(b, ValueRange{picks, counts, result.cache, draftCache});
}

/// The entry the runtime calls: `step` without the caches among its
/// results (its last ones, one per cache argument). The caller's cache
/// buffers are updated in place (bufferized, `step` writes into its
/// arguments), so a round copies no cache; a public function would have
/// to return the whole cache.
static void exportUpdatingInPlace(ImplicitLocOpBuilder &b, func::FuncOp step,
                                  StringRef name) {
  FunctionType type = step.getFunctionType();
  unsigned caches = llvm::count_if(type.getInputs(), llvm::IsaPred<KVCacheType>);
  TypeRange results = type.getResults().drop_back(caches);
  b.setInsertionPointToEnd(step->getBlock());
  auto entry = func::FuncOp::create(
      b, name, b.getFunctionType(type.getInputs(), results));
  Block *body = entry.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto call = func::CallOp::create(b, step, body->getArguments());
  func::ReturnOp::create(b, call.getResults().drop_back(caches));
  // The runtime calls it from C, as it calls the decode loops, with a
  // buffer of this shape for the first cache.
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

private:
  LogicalResult lower(DecoderOp decoder, SymbolTable &symbols);
};
} // namespace

/// The batched model `attrName` names on `decoder`, analyzed.
static FailureOr<SlotModel> lookupSlotModel(DecoderOp decoder,
                                            SymbolTable &symbols,
                                            StringRef attrName,
                                            StringRef what) {
  auto name = decoder->getAttrOfType<FlatSymbolRefAttr>(attrName);
  auto func = symbols.lookup<func::FuncOp>(name.getValue());
  if (!func)
    return decoder.emitError() << "decoder @" << decoder.getSymName()
                               << ": no batched " << what << " @"
                               << name.getValue();
  return analyzeSlotModel(func, decoder, what);
}

/// The results of `target` that are the logits of its `count` fused heads,
/// by depth, into target.heads.
static LogicalResult findHeads(SlotModel &target, DecoderOp decoder,
                               size_t count) {
  for (size_t k = 1; k <= count; ++k) {
    std::optional<unsigned> found =
        findResult(target.func, IOKind::HeadLogits, k);
    auto type = found ? dyn_cast<RankedTensorType>(
                            target.func.getResultTypes()[*found])
                      : RankedTensorType();
    if (!type || type.getRank() != 3 || type.isDynamicDim(2) ||
        type.getDimSize(2) != target.vocab)
      return decoder.emitError()
             << "decoder @" << decoder.getSymName() << ": its batched target @"
             << target.func.getSymName() << " does not return the logits of "
             << "head " << k << " for every row";
    target.heads.push_back(*found);
  }
  return success();
}

/// Why a decoder with a proposer has none in its batched rounds.
static StringRef roundsProposeNothing(DecoderOp decoder) {
  if (decoder.getTreeAttr())
    return "no trees in rounds yet";
  return "MTP modules propose in rounds as a chain of one";
}

LogicalResult LowerRoundsPass::lower(DecoderOp decoder, SymbolTable &symbols) {
  FailureOr<SlotModel> target = lookupSlotModel(
      decoder, symbols, SpecDialect::kSlotTargetAttrName, "target");
  if (failed(target))
    return failure();
  if (proposesWithHeadsInRounds(decoder, symbols) &&
      failed(findHeads(
          *target, decoder,
          cast<MTPProposerAttr>(decoder.getProposer()).getHeads().size())))
    return failure();
  // Plain rounds key sampled heads at the seed + 2^19 + the position, apart
  // from the target's draws (the seed + the position) and the rounds' keys
  // (the seed + 2^20 and up) only while positions stay under 2^19.
  int64_t capacity = target->cacheType.getCapacity();
  if (!target->heads.empty() && decoder.getRule().isSampling() &&
      capacity + static_cast<int64_t>(target->heads.size()) >=
          kKeysPerRound / 2)
    return decoder.emitError()
           << "decoder @" << decoder.getSymName() << ": sampled heads in "
           << "batched rounds need a context under "
           << kKeysPerRound / 2 - static_cast<int64_t>(target->heads.size())
           << " positions, not " << capacity;
  std::optional<SlotModel> draft;
  bool proposingModule = isa<MTPProposerAttr>(decoder.getProposer());
  if (decoder->hasAttr(SpecDialect::kSlotDraftAttrName)) {
    FailureOr<SlotModel> found =
        lookupSlotModel(decoder, symbols, SpecDialect::kSlotDraftAttrName,
                        proposingModule ? "MTP module" : "draft");
    if (failed(found))
      return failure();
    draft = *found;
    if (proposingModule && !target->hiddenResult)
      return decoder.emitError()
             << "decoder @" << decoder.getSymName() << ": its batched target @"
             << target->func.getSymName()
             << " does not return the hidden states its MTP module reads";
  } else {
    proposingModule = false;
  }
  if (!draft && target->heads.empty() &&
      !isa<NoProposerAttr>(decoder.getProposer()))
    decoder.emitRemark() << "decoder @" << decoder.getSymName()
                         << ": its batched rounds run the target alone ("
                         << roundsProposeNothing(decoder) << ")";
  ModuleOp module = getOperation();
  ImplicitLocOpBuilder b(decoder.getLoc(), module.getBody(),
                         module.getBody()->end());
  Type cache = target->cacheType, index = b.getIndexType(),
       i64 = b.getI64Type();
  auto tokens = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  std::string prefix = decoder.getSymName().str();
  RoundBuilder builder(*target, draft, decoder.getRule(), decoder.getLoc());
  auto addStep = [&](StringRef entry, TypeRange inputs, TypeRange results) {
    b.setInsertionPointToEnd(module.getBody());
    auto step = func::FuncOp::create(b, prefix + "_" + entry.str() + "_step",
                                     b.getFunctionType(inputs, results));
    step.setPrivate();
    return std::make_pair(step, prefix + "_" + entry.str());
  };
  // With heads, every forward also gives each sequence's next proposals.
  auto heads = static_cast<int64_t>(target->heads.size());
  auto proposals = RankedTensorType::get({ShapedType::kDynamic, heads}, i64);
  SmallVector<Type> prefillResults{i64}, roundResults{tokens};
  bool sampled = decoder.getRule().isSampling();
  Type f = cast<RankedTensorType>(target->func.getResultTypes()[target->logits])
               .getElementType();
  // Sampled heads' proposals travel with their distributions.
  auto headsQ = RankedTensorType::get(
      {ShapedType::kDynamic, heads, target->vocab}, f);
  if (heads) {
    prefillResults.push_back(RankedTensorType::get({heads}, i64));
    roundResults.push_back(proposals);
    if (sampled) {
      prefillResults.push_back(RankedTensorType::get({heads, target->vocab}, f));
      roundResults.push_back(headsQ);
    }
  }
  // With an MTP module, the target's hidden states by row.
  RankedTensorType hiddenRows;
  if (proposingModule) {
    auto hidden = cast<RankedTensorType>(
        target->func.getResultTypes()[*target->hiddenResult]);
    hiddenRows = RankedTensorType::get(
        {ShapedType::kDynamic, hidden.getDimSize(2)}, hidden.getElementType());
    prefillResults.push_back(hiddenRows);
    roundResults.push_back(hiddenRows);
  }
  prefillResults.push_back(cache);
  roundResults.push_back(cache);
  SmallVector<std::pair<func::FuncOp, std::string>> steps{
      addStep("prefill", {cache, index, index, tokens, i64}, prefillResults),
      addStep("round", {cache, index, tokens, tokens, tokens}, roundResults)};
  builder.buildPrefill(b, steps[0].first, *target);
  builder.buildRound(b, steps[1].first);
  if (heads) {
    auto picks = RankedTensorType::get({ShapedType::kDynamic, heads + 1}, i64);
    SmallVector<Type> inputs{cache, index, tokens, tokens, proposals},
        results{picks, tokens, proposals};
    if (sampled) {
      inputs.push_back(headsQ);
      results.push_back(headsQ);
    }
    inputs.push_back(tokens);
    results.push_back(cache);
    steps.push_back(addStep("spec_round", inputs, results));
    builder.buildHeadsSpecRound(b, steps.back().first);
  }
  if (proposingModule) {
    Type moduleCache = draft->cacheType;
    auto one = RankedTensorType::get({ShapedType::kDynamic, 1}, i64);
    auto picks = RankedTensorType::get({ShapedType::kDynamic, 2}, i64);
    SmallVector<Type> prefillOut{i64}, roundIn{cache, moduleCache, index,
                                             tokens, tokens, one},
        roundOut{picks, tokens, one};
    if (decoder.getRule().isSampling()) {
      Type f = hiddenRows.getElementType();
      prefillOut.push_back(RankedTensorType::get({draft->vocab}, f));
      auto q = RankedTensorType::get({ShapedType::kDynamic, 1, draft->vocab}, f);
      roundIn.push_back(q);
      roundOut.push_back(q);
    }
    prefillOut.push_back(moduleCache);
    roundIn.push_back(tokens);
    roundOut.append({cache, moduleCache});
    steps.push_back(addStep("module_prefill",
                            {moduleCache, index, index, hiddenRows, tokens, i64},
                            prefillOut));
    builder.buildModulePrefill(b, steps.back().first);
    steps.push_back(addStep("spec_round", roundIn, roundOut));
    builder.buildModuleSpecRound(b, steps.back().first);
  } else if (draft && decoder->hasAttr(SpecDialect::kCrossTokenizerAttrName)) {
    // The draft proposes in its own tokens, which the runtime translates
    // between its rounds and @<decoder>_verify's.
    Type draftCache = draft->cacheType;
    int64_t gamma = cast<DraftProposerAttr>(decoder.getProposer()).getGamma();
    auto proposed = RankedTensorType::get({ShapedType::kDynamic, gamma}, i64);
    auto picks = RankedTensorType::get({ShapedType::kDynamic, gamma + 1}, i64);
    SmallVector<Type> verifyInputs{cache, index, tokens, tokens, proposed};
    if (decoder.getRule().isSampling()) {
      // The proposals' distributions in the target's vocabulary, which the
      // runtime maps from the draft's.
      Type f = cast<RankedTensorType>(
                   target->func.getResultTypes()[target->logits])
                   .getElementType();
      verifyInputs.push_back(RankedTensorType::get(
          {ShapedType::kDynamic, gamma, target->vocab}, f));
      verifyInputs.push_back(tokens);
    }
    steps.push_back(addStep("verify", verifyInputs, {picks, tokens, cache}));
    builder.buildVerify(b, steps.back().first, gamma);
    steps.push_back(addStep("draft_prefill",
                            {draftCache, index, index, tokens, i64},
                            {i64, draftCache}));
    builder.buildPrefill(b, steps.back().first, *draft);
    auto bias = RankedTensorType::get(
        {ShapedType::kDynamic, draft->vocab},
        cast<RankedTensorType>(
            draft->func.getResultTypes()[draft->logits]).getElementType());
    steps.push_back(addStep("draft_round",
                            {draftCache, index, tokens, tokens, bias},
                            {bias, draftCache}));
    builder.buildBiasedDraftRound(b, steps.back().first);
  } else if (draft) {
    Type draftCache = draft->cacheType;
    int64_t gamma = cast<DraftProposerAttr>(decoder.getProposer()).getGamma();
    auto picks = RankedTensorType::get({ShapedType::kDynamic, gamma + 1},
                                       b.getI64Type());
    steps.push_back(addStep("draft_prefill",
                            {draftCache, index, index, tokens, i64},
                            {i64, draftCache}));
    steps.push_back(
        addStep("spec_round",
                {cache, draftCache, index, tokens, tokens, tokens, tokens},
                {picks, tokens, cache, draftCache}));
    builder.buildPrefill(b, steps[2].first, *draft);
    builder.buildSpecRound(b, steps[3].first, gamma);
  }
  for (auto &[step, name] : steps)
    exportUpdatingInPlace(b, step, name);
  return success();
}

void LowerRoundsPass::runOnOperation() {
  SymbolTable symbols(getOperation());
  for (auto decoder : llvm::to_vector(getOperation().getOps<DecoderOp>()))
    if (decoder->hasAttr(SpecDialect::kSlotTargetAttrName) &&
        failed(lower(decoder, symbols)))
      return signalPassFailure();
}
