//===- LowerGenerate.cpp - the speculative decode loop --------------------===//
//
// Each spec.decoder becomes @<decoder>_generate (the speculative loop) and
// @<decoder>_target_only (the reference it must reproduce). The loop's
// shape is DecodeLoopBuilder's; this file holds what each proposer adds: its
// loop values and how a round proposes.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/DecodeLoop.h"
#include "passes/Decoder/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"

namespace specula {
#define GEN_PASS_DEF_SPECLOWERGENERATE
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {

/// Proposals waiting for their verification, and the distributions q they
/// were drawn from: `tensor<n x i64>`, `tensor<n x vocab x f>`.
struct Proposals {
  Value tokens, probs;

  /// Empty proposals for `count` tokens over `vocab`.
  static Proposals create(ImplicitLocOpBuilder &b, int64_t count,
                          int64_t vocab, Type floatType) {
    return {tensor::EmptyOp::create(b, {count}, b.getI64Type()),
            tensor::EmptyOp::create(b, {count, vocab}, floatType)};
  }
  /// These proposals with `token` (drawn from `q`, `1 x vocab`) at `index`.
  Proposals with(ImplicitLocOpBuilder &b, OpFoldResult index, Value token,
                 Value q) const {
    int64_t vocab = cast<RankedTensorType>(probs.getType()).getDimSize(1);
    return {tensor::InsertOp::create(
                b, token, tokens,
                ValueRange{getValueOrCreateConstantIndexOp(b, b.getLoc(),
                                                           index)}),
            tensor::InsertSliceOp::create(
                b, q, probs, {index, b.getIndexAttr(0)},
                {b.getIndexAttr(1), b.getIndexAttr(vocab)},
                {b.getIndexAttr(1), b.getIndexAttr(1)})};
  }
};

/// Lowers one proposer kind: what it needs is checked by its analysis before
/// any IR changes; build() then emits the generate function's loop.
class ProposerLowering {
public:
  virtual ~ProposerLowering() = default;
  /// The context both loops get: the smaller of the target's and the
  /// proposer's caches, so that both stop at the same length.
  virtual int64_t getCapacity() const = 0;
  virtual void build(DecodeLoopBuilder &loop) = 0;

protected:
  ProposerLowering(const CachedModel &target) : target(target) {}
  CachedModel target;
};

/// Fails, saying what to run, when `decoder` verifies a tree and its target
/// does not take the tree mask.
static LogicalResult checkTakesTree(DecoderOp decoder,
                                    const CachedModel &target) {
  if (target.takesTree)
    return success();
  func::FuncOp func = target.func;
  return decoder.emitError()
         << "target @" << func.getSymName()
         << " does not take a tree mask (#spec.io<tree_mask>) to verify "
            "the decoder's tree; run spec-tree-attention first";
}

//===----------------------------------------------------------------------===//
// Draft model
//===----------------------------------------------------------------------===//

/// gamma draft forwards propose; one target forward verifies.
class DraftLowering : public ProposerLowering {
public:
  static FailureOr<std::unique_ptr<ProposerLowering>>
  analyze(DecoderOp decoder, const CachedModel &target,
          DraftProposerAttr proposer, SymbolTable &symbols) {
    FailureOr<CachedModel> draft = CachedModel::get(
        symbols.lookup<func::FuncOp>(proposer.getModel().getValue()), decoder);
    if (failed(draft))
      return failure();
    TreeAttr tree = decoder.getTreeAttr();
    if (tree && failed(checkTakesTree(decoder, target)))
      return failure();
    // Below the first depth, the draft proposes from the tree's candidates.
    if (tree && tree.getMaxDepth() > 1 && !draft->takesTree)
      return decoder.emitError()
             << "draft @" << draft->func.getSymName()
             << " does not take a tree mask (#spec.io<tree_mask>) to "
                "propose the decoder's tree below its first depth; run "
                "spec-tree-attention first";
    return std::unique_ptr<ProposerLowering>(
        new DraftLowering(target, *draft, proposer.getGamma(),
                          proposer.getMinConfidence().convertToDouble(), tree));
  }

  int64_t getCapacity() const override {
    return std::min(target.cache.getCapacity(), draft.cache.getCapacity());
  }

  void build(DecodeLoopBuilder &loop) override;

private:
  DraftLowering(const CachedModel &target, const CachedModel &draft,
                int64_t gamma, double minConfidence, TreeAttr tree)
      : ProposerLowering(target), draft(draft), gamma(gamma),
        minConfidence(minConfidence), tree(tree) {}

  /// The draft's loop values: its cache and how many positions it holds.
  struct State {
    Value cache, cached;
    SmallVector<Value> getValues() const { return {cache, cached}; }
    static State from(ValueRange values) { return {values[0], values[1]}; }
  };

  RoundResult round(DecodeLoopBuilder &loop, const DecodeState &state,
                    State draftState);
  /// The proposals, and how many of them were made (an index; null when
  /// every round proposes gamma).
  struct Proposed {
    State state;
    Proposals proposals;
    Value count;
  };
  Proposed propose(DecodeLoopBuilder &loop, const DecodeState &state,
                   State draftState, Value roundKey);
  /// Whether the draft's probability of `token`, its most likely one after
  /// `row` (`1 x vocab` logits), is at least minConfidence.
  Value isConfident(ImplicitLocOpBuilder &b, Value row, Value token);
  RoundResult treeRound(DecodeLoopBuilder &loop, const DecodeState &state,
                        State draftState);
  /// The tree's candidates as the draft proposed them (by node; [0]
  /// unused), the candidates it was fed in the order they sit in its cache
  /// after the root, and its cache.
  struct ProposedTree {
    SmallVector<Value> token;
    SmallVector<int64_t> fed;
    Value cache;
  };
  ProposedTree proposeTree(DecodeLoopBuilder &loop, const DecodeState &state,
                           State draftState, Value afterLast);
  State keepAcceptedFed(DecodeLoopBuilder &loop, const VerifiedTree &verified,
                        ArrayRef<int64_t> fed, Value cache, Value afterLast);

  CachedModel draft;
  int64_t gamma;
  /// Drafting stops at a token of lower probability than this (0: off).
  double minConfidence;
  /// The candidates each round verifies, or null for one chain.
  TreeAttr tree;
};

void DraftLowering::build(DecodeLoopBuilder &loop) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  // The draft sees the prompt too.
  Value cache = CacheAllocOp::create(b, draft.cache);
  State init{loop.call(draft, {loop.getPromptIds(), loop.getPromptPositions(),
                               cache, loop.index(0)})
                 .getResults()
                 .back(),
             loop.getPromptLength()};
  DecodeState start = loop.startAfterPrefill();
  if (tree)
    return loop.buildLoop(start, init.getValues(), tree.getNumNodes() + 1,
                          [&](const DecodeState &state, ValueRange values) {
                            return treeRound(loop, state, State::from(values));
                          });
  loop.buildLoop(start, init.getValues(), gamma + 1,
                 [&](const DecodeState &state, ValueRange values) {
                   return round(loop, state, State::from(values));
                 });
}

RoundResult DraftLowering::round(DecodeLoopBuilder &loop,
                                 const DecodeState &state, State draftState) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  Value roundKey = loop.roundKey(state.steps);
  Value start = loop.readClock();
  auto [proposed, proposals, count] =
      propose(loop, state, draftState, roundKey);
  Value proposingNs = loop.elapsedSince(start);
  VerifiedRound verified = loop.verifyAndCommit(
      state, proposals.tokens, proposals.probs, roundKey, count);
  // The draft keeps what it cached of the accepted prefix.
  proposed.cached =
      arith::MinUIOp::create(b, verified.length, proposed.cached);
  return {loop.advance(state, verified), proposed.getValues(),
          verified.accepted, proposingNs};
}

Value DraftLowering::isConfident(ImplicitLocOpBuilder &b, Value row,
                                 Value token) {
  // p(token) >= t, with token the row's maximum m: sum_v exp(l_v - m) <=
  // 1 / t. A NaN anywhere makes the sum NaN: not confident.
  auto rowType = cast<RankedTensorType>(row.getType());
  Type f = rowType.getElementType();
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value maximum = tensor::ExtractOp::create(
      b, row,
      ValueRange{zero, arith::IndexCastOp::create(b, b.getIndexType(), token)});
  Value init =
      linalg::FillOp::create(
          b, ValueRange{arith::ConstantOp::create(b, b.getFloatAttr(f, 0.0))},
          ValueRange{tensor::EmptyOp::create(b, ArrayRef<int64_t>{}, f)})
          .getResult(0);
  MLIRContext *context = b.getContext();
  AffineMap all = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap none = AffineMap::get(2, 0, {}, context);
  auto sum = linalg::GenericOp::create(
      b, init.getType(), ValueRange{row}, ValueRange{init},
      ArrayRef<AffineMap>{all, none},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::reduction),
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value weight = math::ExpOp::create(
            nb, arith::SubFOp::create(nb, args[0], maximum));
        linalg::YieldOp::create(
            nb, ValueRange{arith::AddFOp::create(nb, args[1], weight)});
      });
  Value total = tensor::ExtractOp::create(b, sum.getResult(0), ValueRange{});
  return arith::CmpFOp::create(
      b, arith::CmpFPredicate::OLE, total,
      arith::ConstantOp::create(b, b.getFloatAttr(f, 1.0 / minConfidence)));
}

/// gamma draft forwards. The first feeds every token the draft has not
/// cached, seq[cached .. length]; step k feeds positions [cached,
/// length + k]. With minConfidence, the first token below it ends the
/// round's drafting: it is not proposed (its place stays -1), and the steps
/// after it run no forward.
DraftLowering::Proposed DraftLowering::propose(DecodeLoopBuilder &loop,
                                               const DecodeState &state,
                                               State draftState,
                                               Value roundKey) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  Proposals empty =
      Proposals::create(b, gamma, draft.vocab, loop.getFloatType());
  Value zero = loop.index(0), last = loop.index(gamma), one = loop.index(1);
  bool stops = minConfidence > 0.0;
  SmallVector<Value> init{draftState.cache, draftState.cached, empty.tokens,
                          empty.probs, state.last};
  if (stops) {
    init[2] = linalg::FillOp::create(b, ValueRange{loop.i64(-1)},
                                     ValueRange{empty.tokens})
                  .getResult(0);
    // Still drafting; tokens proposed so far.
    init.append({arith::ConstantIntOp::create(b, 1, 1), zero});
  }
  auto steps = scf::ForOp::create(b, zero, last, one, init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(steps.getBody());
  Value k = steps.getInductionVar();
  ValueRange args = steps.getRegionIterArgs();
  scf::IfOp drafting;
  if (stops) {
    drafting = scf::IfOp::create(b, steps.getResultTypes(), args[5],
                                 /*withElseRegion=*/true);
    b.setInsertionPointToStart(drafting.elseBlock());
    scf::YieldOp::create(b, args);
    b.setInsertionPointToStart(drafting.thenBlock());
  }
  Value cached = args[1], token = args[4];
  Value end = arith::AddIOp::create(b, state.length, k);
  Value count = arith::AddIOp::create(
      b, arith::SubIOp::create(b, end, cached), one);
  Value feed = loop.tokens(tensor::InsertOp::create(b, token, state.seq, end),
                           cached, count);
  func::CallOp forward = loop.call(
      draft, {feed, loop.positions(cached, count), args[0], cached});
  Value stepKey = arith::AddIOp::create(
      b, roundKey, arith::IndexCastOp::create(b, b.getI64Type(), end));
  Value lastRow =
      loop.logitsRow(forward.getResult(0),
                     arith::SubIOp::create(b, count, loop.index(1)),
                     draft.vocab);
  auto [proposal, q] = loop.propose(lastRow, stepKey);
  Value confident;
  if (stops) {
    confident = isConfident(b, lastRow, proposal);
    proposal = arith::SelectOp::create(b, confident, proposal, loop.i64(-1));
  }
  Proposals next = Proposals{args[2], args[3]}.with(b, k, proposal, q);
  SmallVector<Value> yielded{forward.getResults().back(),
                             arith::AddIOp::create(b, cached, count),
                             next.tokens, next.probs, proposal};
  if (stops) {
    yielded.append({confident, arith::SelectOp::create(
                                   b, confident,
                                   arith::AddIOp::create(b, k, one), args[6])});
    scf::YieldOp::create(b, yielded);
    b.setInsertionPointAfter(drafting);
    yielded = llvm::to_vector_of<Value>(drafting.getResults());
  }
  scf::YieldOp::create(b, yielded);
  ValueRange results = steps.getResults();
  return {State{results[0], results[1]}, Proposals{results[2], results[3]},
          stops ? results[6] : Value()};
}

/// The draft proposes the tree depth by depth (SpecInfer's token tree, of
/// a static shape), one forward per depth. The first feeds the committed
/// tokens it has not cached, as a chain round does, and its last row gives
/// the root's children (the ranks-th most likely tokens). The forward for
/// depth d > 1 feeds the candidates of depth d - 1 that have children, after
/// those fed before them in the cache; a tree mask lets each see its
/// ancestors there and not their siblings. Candidates are fixed before the
/// target draws, so sampling stays lossless (see verifyTree). After the
/// verify, the accepted candidates the draft was fed move next to the root
/// in its cache, as the target's rows do.
RoundResult DraftLowering::treeRound(DecodeLoopBuilder &loop,
                                     const DecodeState &state,
                                     State draftState) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  Value start = loop.readClock();
  Value afterLast = arith::AddIOp::create(b, state.length, loop.index(1));
  ProposedTree proposed = proposeTree(loop, state, draftState, afterLast);
  Value proposingNs = loop.elapsedSince(start);

  Value candidates = tensor::FromElementsOp::create(
      b, RankedTensorType::get({tree.getNumNodes()}, b.getI64Type()),
      ArrayRef<Value>(proposed.token).drop_front());
  VerifiedTree verified = loop.verifyTree(state, tree, candidates);
  State kept = keepAcceptedFed(loop, verified, proposed.fed, proposed.cache,
                               afterLast);
  return {verified.state, kept.getValues(), verified.accepted, proposingNs,
          verified.getFinalRow()};
}

DraftLowering::ProposedTree
DraftLowering::proposeTree(DecodeLoopBuilder &loop, const DecodeState &state,
                           State draftState, Value afterLast) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  int64_t nodes = tree.getNumNodes(), deepest = tree.getMaxDepth();
  Value one = loop.index(1);
  SmallVector<int64_t> children(nodes + 1, 0);
  for (int64_t parent : tree.getParents())
    ++children[parent];
  ProposedTree proposed;
  // Row `row`'s token, as the forwards produce them.
  SmallVector<Value> &token = proposed.token;
  token.resize(nodes + 1);
  // Proposes the children of each of `parents` from row `rowOf(place)` of
  // `logits`, `place` being the parent's place in `parents`.
  auto proposeChildren = [&](ArrayRef<int64_t> parents, Value logits,
                             function_ref<Value(int64_t)> rowOf) {
    for (auto [place, parent] : llvm::enumerate(parents)) {
      int64_t count = 0;
      for (int64_t node = 1; node <= nodes; ++node)
        if (tree.getParents()[node - 1] == parent)
          count = std::max(count, tree.getRanks()[node - 1] + 1);
      SmallVector<Value> best = loop.mostLikely(
          loop.logitsRow(logits, rowOf(place), draft.vocab), count);
      for (int64_t node = 1; node <= nodes; ++node)
        if (tree.getParents()[node - 1] == parent)
          token[node] = best[tree.getRanks()[node - 1]];
    }
  };

  Value count = arith::AddIOp::create(
      b, arith::SubIOp::create(b, state.length, draftState.cached), one);
  Value feed = loop.tokens(
      tensor::InsertOp::create(b, state.last, state.seq, state.length),
      draftState.cached, count);
  func::CallOp forward =
      loop.call(draft, {feed, loop.positions(draftState.cached, count),
                        draftState.cache, draftState.cached});
  Value lastRow = arith::SubIOp::create(b, count, one);
  proposeChildren({0}, forward.getResult(0), [&](int64_t) { return lastRow; });
  Value cache = forward.getResults().back();

  SmallVector<int64_t> fed;
  for (int64_t depth = 2; depth <= deepest; ++depth) {
    SmallVector<int64_t> parents;
    SmallVector<Value> parentTokens;
    for (int64_t node = 1; node <= nodes; ++node) {
      if (tree.getDepth(node) != depth - 1 || children[node] == 0)
        continue;
      parents.push_back(node);
      parentTokens.push_back(token[node]);
    }
    SmallVector<int64_t> columns(fed);
    llvm::append_range(columns, parents);
    int64_t rows = parents.size();
    Value tokens = tensor::FromElementsOp::create(
        b, RankedTensorType::get({rows}, b.getI64Type()), parentTokens);
    auto [positions, mask] =
        loop.treeRows(tree, parents, columns, state.length);
    Value past = arith::AddIOp::create(b, afterLast, loop.index(fed.size()));
    forward = loop.call(draft, {loop.toRow(tokens, loop.index(rows)),
                                loop.toRow(positions, loop.index(rows)), cache,
                                past, mask});
    cache = forward.getResults().back();
    proposeChildren(parents, forward.getResult(0),
                    [&](int64_t place) { return loop.index(place); });
    fed = std::move(columns);
  }
  proposed.fed = std::move(fed);
  proposed.cache = cache;
  return proposed;
}

/// The draft keeps the root and the accepted candidates it was fed: a
/// prefix of the path (a fed node's parent was fed), at afterLast + their
/// place in `fed`, moved next to the root.
DraftLowering::State DraftLowering::keepAcceptedFed(
    DecodeLoopBuilder &loop, const VerifiedTree &verified,
    ArrayRef<int64_t> fed, Value cache, Value afterLast) {
  if (fed.empty())
    return {cache, afterLast};
  ImplicitLocOpBuilder &b = loop.getBuilder();
  int64_t nodes = tree.getNumNodes();
  SmallVector<int64_t> slotOf(nodes + 1, 0), wasFed(nodes + 1, 0);
  for (auto [place, node] : llvm::enumerate(fed)) {
    slotOf[node] = place;
    wasFed[node] = 1;
  }
  auto tableType = RankedTensorType::get({nodes + 1}, b.getIndexType());
  Value slots = arith::ConstantOp::create(
      b, DenseIntElementsAttr::get(tableType, slotOf));
  Value fedFlags = arith::ConstantOp::create(
      b, DenseIntElementsAttr::get(tableType, wasFed));
  int64_t deepestFed = tree.getMaxDepth() - 1;
  SmallVector<Value> sources;
  Value moved = loop.index(0);
  for (int64_t depth = 1; depth <= deepestFed; ++depth) {
    Value row = verified.path[depth];
    sources.push_back(arith::AddIOp::create(
        b, afterLast, tensor::ExtractOp::create(b, slots, row)));
    Value accepted = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule, loop.index(depth), verified.accepted);
    moved = arith::AddIOp::create(
        b, moved,
        arith::SelectOp::create(b, accepted,
                                tensor::ExtractOp::create(b, fedFlags, row),
                                loop.index(0)));
  }
  Value fromRows = tensor::ExtractSliceOp::create(
      b,
      tensor::FromElementsOp::create(
          b, RankedTensorType::get({deepestFed}, b.getIndexType()), sources),
      {b.getIndexAttr(0)}, {OpFoldResult(moved)}, {b.getIndexAttr(1)});
  cache = CacheMoveOp::create(b, cache.getType(), cache, fromRows, afterLast);
  return {cache, arith::AddIOp::create(b, afterLast, moved)};
}

//===----------------------------------------------------------------------===//
// Medusa heads
//===----------------------------------------------------------------------===//

/// Heads fused into the target propose from the row of the last accepted
/// token of each verify forward: no separate proposing.
class MedusaLowering : public ProposerLowering {
public:
  static FailureOr<std::unique_ptr<ProposerLowering>>
  analyze(DecoderOp decoder, const CachedModel &target,
          MTPProposerAttr proposer);

  int64_t getCapacity() const override { return target.cache.getCapacity(); }
  void build(DecodeLoopBuilder &loop) override;

private:
  MedusaLowering(const CachedModel &target, SmallVector<unsigned> headResults,
                 TreeAttr tree)
      : ProposerLowering(target), headResults(std::move(headResults)),
        tree(tree) {}

  /// The heads' proposals from row `row` of a fused forward's `results`.
  Proposals propose(DecodeLoopBuilder &loop, ValueRange results, Value row,
                    Value roundKey);

  void buildTree(DecodeLoopBuilder &loop);
  /// The tree's candidates (`tensor<nodes x i64>`) from row `row` of a
  /// fused forward's `results`: node i is the ranks[i]-th most likely token
  /// of the head at its depth.
  Value proposeTree(DecodeLoopBuilder &loop, ValueRange results, Value row);
  RoundResult treeRound(DecodeLoopBuilder &loop, const DecodeState &state,
                        Value candidates);

  /// The fused target's results that are head logits, by depth.
  SmallVector<unsigned> headResults;
  /// The candidates each round verifies, or null for one chain.
  TreeAttr tree;
};

FailureOr<std::unique_ptr<ProposerLowering>>
MedusaLowering::analyze(DecoderOp decoder, const CachedModel &target,
                        MTPProposerAttr proposer) {
  func::FuncOp func = target.func;
  SmallVector<unsigned> headResults;
  for (int64_t k = 1, e = proposer.getHeads().size(); k <= e; ++k) {
    std::optional<unsigned> found = findResult(func, IOKind::HeadLogits, k);
    auto type = found
                    ? dyn_cast<RankedTensorType>(func.getResultTypes()[*found])
                    : RankedTensorType();
    if (!type || type.getRank() != 3 || type.getDimSize(1) == 1 ||
        type.isDynamicDim(2) || type.getDimSize(2) != target.vocab)
      return decoder.emitError()
             << "target @" << func.getSymName()
             << " does not return the logits of head " << k
             << " (#spec.io<head_logits, index = " << k << ">) for every "
                "position; fuse the heads with "
                "spec-fuse-mtp-heads{last-position-only=false} first";
    headResults.push_back(*found);
  }
  TreeAttr tree = decoder.getTreeAttr();
  if (tree && failed(checkTakesTree(decoder, target)))
    return failure();
  return std::unique_ptr<ProposerLowering>(
      new MedusaLowering(target, std::move(headResults), tree));
}

void MedusaLowering::build(DecodeLoopBuilder &loop) {
  if (tree)
    return buildTree(loop);
  ImplicitLocOpBuilder &b = loop.getBuilder();
  // The prefill's heads give the first proposals.
  Value lastRow =
      arith::SubIOp::create(b, loop.getPromptLength(), loop.index(1));
  DecodeState start = loop.startAfterPrefill();
  Proposals first = propose(loop, loop.getPrefill().getResults(), lastRow,
                            loop.getKey());
  loop.buildLoop(
      start, {first.tokens, first.probs}, headResults.size() + 1,
      [&](const DecodeState &state, ValueRange values) -> RoundResult {
        Value roundKey = loop.roundKey(state.steps);
        VerifiedRound verified =
            loop.verifyAndCommit(state, values[0], values[1], roundKey);
        Proposals next = propose(loop, verified.verify.getResults(),
                                 verified.accepted, roundKey);
        return {loop.advance(state, verified),
                {next.tokens, next.probs},
                verified.accepted,
                loop.i64(0)};
      });
}

Proposals MedusaLowering::propose(DecodeLoopBuilder &loop, ValueRange results,
                                  Value row, Value roundKey) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  Proposals proposals = Proposals::create(b, headResults.size(), target.vocab,
                                          loop.getFloatType());
  for (auto [k, result] : llvm::enumerate(headResults)) {
    Value stepKey = arith::AddIOp::create(b, roundKey, loop.i64(k + 1));
    auto [token, q] = loop.propose(
        loop.logitsRow(results[result], row, target.vocab), stepKey);
    proposals = proposals.with(b, b.getIndexAttr(k), token, q);
  }
  return proposals;
}

void MedusaLowering::buildTree(DecodeLoopBuilder &loop) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  Value lastRow =
      arith::SubIOp::create(b, loop.getPromptLength(), loop.index(1));
  DecodeState start = loop.startAfterPrefill();
  Value first = proposeTree(loop, loop.getPrefill().getResults(), lastRow);
  loop.buildLoop(start, {first}, tree.getNumNodes() + 1,
                 [&](const DecodeState &state, ValueRange values) {
                   return treeRound(loop, state, values[0]);
                 });
}

Value MedusaLowering::proposeTree(DecodeLoopBuilder &loop, ValueRange results,
                                  Value row) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  int64_t nodes = tree.getNumNodes();
  // The most likely tokens each depth's head needs, best first.
  SmallVector<int64_t> needed(tree.getMaxDepth() + 1, 0);
  for (int64_t node = 1; node <= nodes; ++node) {
    int64_t &count = needed[tree.getDepth(node)];
    count = std::max(count, tree.getRanks()[node - 1] + 1);
  }
  SmallVector<SmallVector<Value>> best(needed.size());
  for (int64_t depth = 1; depth < static_cast<int64_t>(needed.size()); ++depth)
    best[depth] = loop.mostLikely(
        loop.logitsRow(results[headResults[depth - 1]], row, target.vocab),
        needed[depth]);
  SmallVector<Value> candidates;
  for (int64_t node = 1; node <= nodes; ++node)
    candidates.push_back(
        best[tree.getDepth(node)][tree.getRanks()[node - 1]]);
  return tensor::FromElementsOp::create(
      b, RankedTensorType::get({nodes}, b.getI64Type()), candidates);
}

/// One forward verifies the tree; the heads' rows at the final accepted
/// row propose the next one.
RoundResult MedusaLowering::treeRound(DecodeLoopBuilder &loop,
                                      const DecodeState &state,
                                      Value candidates) {
  VerifiedTree verified = loop.verifyTree(state, tree, candidates);
  Value next =
      proposeTree(loop, verified.verify.getResults(), verified.getFinalRow());
  return {verified.state,
          {next},
          verified.accepted,
          loop.i64(0),
          verified.getFinalRow()};
}

//===----------------------------------------------------------------------===//
// MTP modules
//===----------------------------------------------------------------------===//

/// A chain of DeepSeek-V3-style MTP modules beside the target. The module at
/// depth d runs at position t on the previous depth's hidden state there
/// (the target's at depth 1) and the token at t + d, and proposes the token
/// at t + d + 1; each depth has its own in-place cache. Each round verifies
/// [last, p_1 .. p_D]; then every depth runs on the positions from its first
/// stale one up to the token the target gave: depth 1 on the verified rows,
/// depth d > 1 also again on the positions that were fed a rejected proposal,
/// reading the previous depth's hidden states from a history of them. The
/// last row of depth d proposes p_d, which depth d + 1 is fed.
class MTPModuleLowering : public ProposerLowering {
public:
  static FailureOr<std::unique_ptr<ProposerLowering>>
  analyze(DecoderOp decoder, const CachedModel &target,
          MTPProposerAttr proposer, SymbolTable &symbols);

  int64_t getCapacity() const override {
    int64_t capacity = target.cache.getCapacity();
    for (const Depth &depth : depths)
      capacity = std::min(capacity, depth.module.cache.getCapacity());
    return capacity;
  }
  void build(DecodeLoopBuilder &loop) override;

private:
  /// One depth of the chain: its module, and where that module returns its
  /// hidden states (needed from every depth but the last).
  struct Depth {
    CachedModel module;
    std::optional<unsigned> hiddenResult;
  };

  MTPModuleLowering(const CachedModel &target, unsigned hiddenResult,
                    SmallVector<Depth> depths)
      : ProposerLowering(target), hiddenResult(hiddenResult),
        depths(std::move(depths)) {}

  /// The chain's loop values: each depth's cache, the hidden states of every
  /// depth but the last (`1 x capacity x hidden`, by position), and the
  /// proposals waiting for verification.
  struct State {
    SmallVector<Value> caches, histories;
    Proposals pending;

    SmallVector<Value> getValues() const {
      SmallVector<Value> values(caches);
      llvm::append_range(values, histories);
      values.append({pending.tokens, pending.probs});
      return values;
    }
    static State from(ValueRange values, unsigned depths) {
      return {llvm::to_vector(values.take_front(depths)),
              llvm::to_vector(values.slice(depths, depths - 1)),
              {values[2 * depths - 1], values[2 * depths]}};
    }
  };

  State runChain(DecodeLoopBuilder &loop, Value targetHidden, Value seq,
                 Value end, ArrayRef<Value> starts, const State &previous,
                 Value key);
  Value extendSequence(DecodeLoopBuilder &loop, Value seq);

  unsigned hiddenResult;
  SmallVector<Depth> depths;
};

FailureOr<std::unique_ptr<ProposerLowering>>
MTPModuleLowering::analyze(DecoderOp decoder, const CachedModel &target,
                           MTPProposerAttr proposer, SymbolTable &symbols) {
  func::FuncOp targetFunc = target.func;
  std::optional<unsigned> hidden =
      findResult(targetFunc, IOKind::HiddenStates);
  if (!hidden)
    return decoder.emitError()
           << "the MTP module needs the target's hidden_states result and a "
              "previous_hidden_states argument";
  auto hiddenType =
      cast<RankedTensorType>(targetFunc.getResultTypes()[*hidden]);
  if (hiddenType.getRank() != 3 || hiddenType.isDynamicDim(2))
    return decoder.emitError()
           << "the target's hidden states must be [1 x n x hidden]";
  SmallVector<Depth> depths;
  ArrayRef<FlatSymbolRefAttr> heads = proposer.getHeads();
  for (auto [index, head] : llvm::enumerate(heads)) {
    FailureOr<CachedModel> module = CachedModel::get(
        symbols.lookup<func::FuncOp>(head.getValue()), decoder);
    if (failed(module))
      return failure();
    if (!module->takesHidden)
      return decoder.emitError()
             << "the MTP module needs the target's hidden_states result and a "
                "previous_hidden_states argument";
    Depth depth{*module, findResult(module->func, IOKind::HiddenStates)};
    if (index + 1 < heads.size()) {
      auto type = depth.hiddenResult
                      ? dyn_cast<RankedTensorType>(
                            module->func.getResultTypes()[*depth.hiddenResult])
                      : RankedTensorType();
      if (!type || type.getRank() != 3 || type.isDynamicDim(2))
        return decoder.emitError()
               << "MTP module " << head << " at depth " << index + 1
               << " must return its hidden states [1 x n x hidden] "
                  "(#spec.io<hidden_states>) for depth "
               << index + 2 << " to run on";
    }
    if (!depths.empty()) {
      // The previous depth's hidden states are this module's first input.
      Depth before = depths.back();
      int64_t given = cast<RankedTensorType>(
                          before.module.func
                              .getResultTypes()[*before.hiddenResult])
                          .getDimSize(2);
      auto wanted =
          dyn_cast<RankedTensorType>(module->func.getArgumentTypes()[0]);
      if (!wanted || wanted.getRank() != 3 ||
          (!wanted.isDynamicDim(2) && wanted.getDimSize(2) != given))
        return decoder.emitError()
               << "MTP module " << head << " at depth " << index + 1
               << " does not take [1 x n x " << given
               << "] hidden states, which depth " << index << " gives";
    }
    depths.push_back(depth);
  }
  return std::unique_ptr<ProposerLowering>(
      new MTPModuleLowering(target, *hidden, std::move(depths)));
}

void MTPModuleLowering::build(DecodeLoopBuilder &loop) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  // Every depth sees the prompt, the target's pick after it, and the
  // previous depths' proposals.
  DecodeState start = loop.startAfterPrefill();
  unsigned count = depths.size();
  State empty;
  for (auto [index, depth] : llvm::enumerate(depths)) {
    empty.caches.push_back(CacheAllocOp::create(b, depth.module.cache));
    if (index + 1 == count)
      continue;
    auto type = cast<RankedTensorType>(
        depth.module.func.getResultTypes()[*depth.hiddenResult]);
    empty.histories.push_back(tensor::EmptyOp::create(
        b, {1, loop.getCapacity(), type.getDimSize(2)},
        type.getElementType()));
  }
  SmallVector<Value> fromZero(count, loop.index(0));
  State init =
      runChain(loop, loop.getPrefill().getResult(hiddenResult), start.seq,
               loop.getPromptLength(), fromZero, empty, loop.getKey());
  loop.buildLoop(
      start, init.getValues(), count + 1,
      [&](const DecodeState &state, ValueRange values) -> RoundResult {
        State chain = State::from(values, count);
        Value roundKey = loop.roundKey(state.steps);
        VerifiedRound verified = loop.verifyAndCommit(
            state, chain.pending.tokens, chain.pending.probs, roundKey);
        Value proposeStart = loop.readClock();
        // Depth 1 runs on the verified rows. Depth d was fed the token at
        // t + d: its positions from verified.length - d on saw proposals
        // that may have been rejected, and it runs again from there (or
        // from the verified rows, which it has not seen yet).
        SmallVector<Value> starts{state.length};
        for (unsigned d = 2; d <= count; ++d) {
          // Ops in sequence, not in one call's arguments, whose order of
          // evaluation differs between compilers (and the IR with it).
          Value zero = loop.index(0);
          Value back = arith::SubIOp::create(b, verified.length, loop.index(d));
          Value stale = arith::MaxSIOp::create(b, back, zero);
          starts.push_back(arith::MinSIOp::create(b, stale, state.length));
        }
        State next = runChain(loop, verified.verify.getResult(hiddenResult),
                              verified.seq, verified.length, starts, chain,
                              roundKey);
        return {loop.advance(state, verified), next.getValues(),
                verified.accepted, loop.elapsedSince(proposeStart)};
      });
}

/// `seq` with room for the proposals after its last token: depth d is fed
/// d - 1 of them.
Value MTPModuleLowering::extendSequence(DecodeLoopBuilder &loop, Value seq) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  int64_t capacity = cast<RankedTensorType>(seq.getType()).getDimSize(0);
  Value extended = tensor::EmptyOp::create(
      b, {capacity + static_cast<int64_t>(depths.size())}, b.getI64Type());
  return tensor::InsertSliceOp::create(b, seq, extended,
                                       ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
                                       {b.getIndexAttr(capacity)},
                                       {b.getIndexAttr(1)});
}

/// Runs depth d (from 1) on positions [starts[d - 1], end), where `end` is
/// the position of the last token in `seq` and `targetHidden`'s rows are the
/// target's hidden states from starts[0]. Proposals are keyed from `key` + d.
MTPModuleLowering::State
MTPModuleLowering::runChain(DecodeLoopBuilder &loop, Value targetHidden,
                            Value seq, Value end, ArrayRef<Value> starts,
                            const State &previous, Value key) {
  ImplicitLocOpBuilder &b = loop.getBuilder();
  Value one = loop.index(1);
  Value tokensFrom = depths.size() > 1 ? extendSequence(loop, seq) : seq;
  State next{{},
             {},
             Proposals::create(b, depths.size(), target.vocab,
                               loop.getFloatType())};
  auto rowsOf = [&](Value hidden, OpFoldResult first, Value count) {
    auto type = cast<RankedTensorType>(hidden.getType());
    int64_t size = type.getDimSize(2);
    return tensor::ExtractSliceOp::create(
        b,
        RankedTensorType::get({1, ShapedType::kDynamic, size},
                              type.getElementType()),
        hidden, {b.getIndexAttr(0), first, b.getIndexAttr(0)},
        {b.getIndexAttr(1), count, b.getIndexAttr(size)},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
  };
  for (auto [index, depth] : llvm::enumerate(depths)) {
    Value start = starts[index];
    Value count = b.createOrFold<arith::SubIOp>(end, start);
    Value rows =
        index == 0
            ? rowsOf(targetHidden, b.getIndexAttr(0), count)
            : rowsOf(next.histories[index - 1], getAsOpFoldResult(start),
                     count);
    Value tokens = loop.tokens(
        tokensFrom, b.createOrFold<arith::AddIOp>(start, loop.index(index + 1)),
        count);
    func::CallOp forward =
        loop.call(depth.module, {rows, tokens, loop.positions(start, count),
                                 previous.caches[index], start});
    next.caches.push_back(forward.getResults().back());
    Value logits = loop.logitsRow(
        forward.getResult(0), b.createOrFold<arith::SubIOp>(count, one),
        target.vocab);
    Value stepKey = arith::AddIOp::create(b, key, loop.i64(index + 1));
    auto [token, q] = loop.propose(logits, stepKey);
    next.pending = next.pending.with(b, b.getIndexAttr(index), token, q);
    if (index + 1 == depths.size())
      break;
    // What the next depth reads: this depth's hidden states by position,
    // and its proposal after the last token.
    Value hidden = forward.getResult(*depth.hiddenResult);
    auto hiddenType = cast<RankedTensorType>(hidden.getType());
    Value history = previous.histories[index];
    auto historyType = cast<RankedTensorType>(history.getType());
    if (hiddenType.getShape() != ArrayRef<int64_t>{1, ShapedType::kDynamic,
                                                    historyType.getDimSize(2)})
      hidden = tensor::CastOp::create(
          b,
          RankedTensorType::get(
              {1, ShapedType::kDynamic, historyType.getDimSize(2)},
              historyType.getElementType()),
          hidden);
    next.histories.push_back(tensor::InsertSliceOp::create(
        b, hidden, history,
        {b.getIndexAttr(0), getAsOpFoldResult(start), b.getIndexAttr(0)},
        {b.getIndexAttr(1), count, b.getIndexAttr(historyType.getDimSize(2))},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1))));
    tokensFrom = tensor::InsertOp::create(
        b, token, tokensFrom,
        ValueRange{b.createOrFold<arith::AddIOp>(end, loop.index(index + 1))});
  }
  return next;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct LowerGeneratePass
    : public specula::impl::SpecLowerGenerateBase<LowerGeneratePass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult lower(DecoderOp decoder, SymbolTable &symbols);
};
} // namespace

static void buildTargetOnly(DecodeLoopBuilder &loop);

/// No proposer (#spec.none): the speculative loop is the target-only loop.
class TargetOnlyLowering : public ProposerLowering {
public:
  TargetOnlyLowering(const CachedModel &target) : ProposerLowering(target) {}
  int64_t getCapacity() const override { return target.cache.getCapacity(); }
  void build(DecodeLoopBuilder &loop) override { buildTargetOnly(loop); }
};

/// The lowering for `decoder`'s proposer, after checking what it needs.
static FailureOr<std::unique_ptr<ProposerLowering>>
analyzeProposer(DecoderOp decoder, const CachedModel &target,
                SymbolTable &symbols) {
  ProposerAttrInterface proposer = decoder.getProposer();
  // A draft with another tokenizer proposes in batched rounds only, where
  // the runtime translates its tokens: the decode loop is the target's.
  if (isa<NoProposerAttr>(proposer) ||
      decoder->hasAttr(SpecDialect::kCrossTokenizerAttrName))
    return std::unique_ptr<ProposerLowering>(
        std::make_unique<TargetOnlyLowering>(target));
  auto first = symbols.lookup<func::FuncOp>(
      proposer.getProposerFunctions().front().getValue());
  switch (first->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName)
              .getKind()) {
  case FunctionRole::Draft:
    return DraftLowering::analyze(
        decoder, target, cast<DraftProposerAttr>(proposer), symbols);
  case FunctionRole::MedusaHead:
    return MedusaLowering::analyze(decoder, target,
                                   cast<MTPProposerAttr>(proposer));
  case FunctionRole::MTPModule:
    return MTPModuleLowering::analyze(
        decoder, target, cast<MTPProposerAttr>(proposer), symbols);
  default:
    return decoder.emitError() << "proposer " << first.getSymNameAttr()
                               << " has a role that does not propose";
  }
}

/// `@<decoder>_target_only`: the same signature and kernels, one target
/// forward per token and no proposer: the reference speculative decoding
/// must reproduce (token for token under greedy verification).
static void buildTargetOnly(DecodeLoopBuilder &loop) {
  DecodeState start = loop.startAfterPrefill();
  loop.buildLoop(start, {}, 1,
                 [&](const DecodeState &state, ValueRange) -> RoundResult {
                   return {loop.targetStep(state), {}, loop.index(0),
                           loop.i64(0)};
                 });
}

/// The function the baseline runs: for fused Medusa heads, the target they
/// were fused into, so that it does not compute the heads.
static func::FuncOp getBaselineTarget(DecoderOp decoder,
                                      SymbolTable &symbols) {
  auto target = symbols.lookup<func::FuncOp>(decoder.getTarget());
  if (auto source = target->getAttrOfType<FlatSymbolRefAttr>(
          SpecDialect::kFusedFromAttrName))
    if (auto unfused = symbols.lookup<func::FuncOp>(source.getValue()))
      return unfused;
  return target;
}

LogicalResult LowerGeneratePass::lower(DecoderOp decoder,
                                       SymbolTable &symbols) {
  FailureOr<CachedModel> target = CachedModel::get(
      symbols.lookup<func::FuncOp>(decoder.getTarget()), decoder);
  if (failed(target))
    return failure();
  FailureOr<CachedModel> baseline =
      CachedModel::get(getBaselineTarget(decoder, symbols), decoder);
  if (failed(baseline))
    return failure();
  FailureOr<std::unique_ptr<ProposerLowering>> proposer =
      analyzeProposer(decoder, *target, symbols);
  if (failed(proposer))
    return failure();

  int64_t capacity = (*proposer)->getCapacity();
  DecodeLoopBuilder speculative(decoder, *target, capacity, symbols,
                                "_generate");
  (*proposer)->build(speculative);
  DecodeLoopBuilder targetOnly(decoder, *baseline, capacity, symbols,
                               "_target_only");
  buildTargetOnly(targetOnly);
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
