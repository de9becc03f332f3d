//===- DecodeLoop.h - the parts decode loops are built of -------*- C++ -*-===//
//
// spec-lower-generate turns each spec.decoder into decode-loop functions.
// Whatever proposes, they share a shape: a prologue (the prompt in the
// sequence buffer, the target's prefill), rounds in an scf.while whose state
// is a DecodeState, the proposer's own values and the loop's counters, then
// target-only steps for the last positions of the context. DecodeLoopBuilder
// builds that shape and the blocks rounds are made of; each proposer's
// lowering (LowerGenerate.cpp) builds only its round.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_DECODER_DECODELOOP_H
#define SPECULA_PASSES_DECODER_DECODELOOP_H

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

namespace specula {

/// Sampling keys below this are the target-only steps' (one per position);
/// each round owns this many from its own base on (the batched rounds key
/// their draws the same way).
inline constexpr int64_t kKeysPerRound = 1 << 20;

/// A model function in the in-place cache form: ([previous_hidden_states,]
/// token_ids, position_ids, kv_cache, past_length) -> (logits
/// [1 x n x vocab], ..., kv_cache).
struct CachedModel {
  mlir::func::FuncOp func;
  spec::KVCacheType cache;
  int64_t vocab;
  /// MTP modules take the previous hidden states first.
  bool takesHidden;
  /// A target rewritten by spec-tree-attention takes a tree mask last.
  bool takesTree = false;

  /// `func` in that form, or an error at `user` saying what it lacks.
  static mlir::FailureOr<CachedModel> get(mlir::func::FuncOp func,
                                          mlir::Operation *user);
  /// The logits' element type.
  mlir::Type getFloatType();
};

/// What every decode loop carries from round to round, whatever proposes.
struct DecodeState {
  mlir::Value seq;       ///< tensor<capacity x i64>: prompt, committed tokens
  mlir::Value cache;     ///< the target's in-place cache
  mlir::Value length;    ///< index: the last committed token's position
  mlir::Value generated; ///< index: tokens generated so far
  mlir::Value steps;     ///< index: target forwards so far
  mlir::Value last;      ///< i64: the last committed token

  static constexpr unsigned kSize = 6;
  llvm::SmallVector<mlir::Value> getValues() const {
    return {seq, cache, length, generated, steps, last};
  }
  static DecodeState from(mlir::ValueRange values) {
    return {values[0], values[1], values[2], values[3], values[4], values[5]};
  }
};

/// What a proposer's round gives the loop.
struct RoundResult {
  DecodeState state;
  /// The proposer's own loop values, in the order it started them.
  llvm::SmallVector<mlir::Value> proposerState;
  mlir::Value accepted;    ///< index: proposals the round accepted
  mlir::Value proposingNs; ///< i64: nanoseconds the round spent proposing
  /// index: the histogram entry that counts the round; null counts it by
  /// `accepted`. A tree round counts its final accepted node, from which the
  /// runtime derives both the accepted lengths and each node's acceptance.
  mlir::Value outcome = {};
};

/// One verification round: the target's forward on [last, proposals...],
/// spec.accept and the commit of what it accepted.
struct VerifiedRound {
  spec::VerifyOp verify;
  mlir::Value accepted; ///< index: proposals accepted
  mlir::Value next;     ///< i64: the token the target gives after them
  mlir::Value seq;      ///< the sequence with both committed
  mlir::Value length;   ///< index: the position of `next`

  mlir::Value getCache() { return verify.getResults().back(); }
};

/// One forward's verification of a tree of candidates and the commit of its
/// accepted path.
struct VerifiedTree {
  spec::VerifyOp verify;
  /// index: the accepted path's row at each depth from 0 (the root); past
  /// the accepted candidates, the last accepted row again.
  llvm::SmallVector<mlir::Value> path;
  mlir::Value accepted; ///< index: candidates accepted
  DecodeState state;    ///< after the commit, the accepted rows moved

  /// The row the round ended at: the accepted path's last.
  mlir::Value getFinalRow() const { return path.back(); }
};

/// Builds one decode-loop function `@<decoder><suffix>(prompt, max_new_tokens,
/// key, stop_tokens) -> (sequence, length, target forwards, histogram of
/// the rounds' outcomes (accepted proposals, or a tree's final node), ns
/// proposing, ns verifying)` after the
/// decoder. The constructor emits the prologue; buildLoop the rest.
class DecodeLoopBuilder {
public:
  using RoundFn = llvm::function_ref<RoundResult(
      const DecodeState &state, mlir::ValueRange proposerState)>;

  DecodeLoopBuilder(spec::DecoderOp decoder, const CachedModel &target,
                    int64_t capacity, mlir::SymbolTable &symbols,
                    llvm::StringRef suffix);

  mlir::ImplicitLocOpBuilder &getBuilder() { return b; }
  mlir::Type getFloatType() const { return floatType; }
  /// Positions the loop's sequence buffer holds.
  int64_t getCapacity() const { return capacity; }
  mlir::Value getKey() const { return key; }
  mlir::Value getPromptLength() const { return promptLength; }
  /// The prompt as one row of token ids and its positions (what the
  /// target's prefill was given).
  mlir::Value getPromptIds() const { return promptIds; }
  mlir::Value getPromptPositions() const { return promptPositions; }
  /// The target's prefill call on the prompt.
  mlir::func::CallOp getPrefill() const { return prefill; }

  /// The first token (the target's pick from the prompt's last row) and the
  /// state after it: what every loop starts from.
  DecodeState startAfterPrefill();

  /// Emits the loop and the return: rounds of at most `roundSize` positions
  /// (built by `round` from the state and the proposer's values) while
  /// tokens are wanted, the round fits the context and no committed token
  /// ended the generation; then target-only steps while fewer than
  /// `roundSize` positions are left, so that the loop stops exactly where
  /// the target alone stops. A round's outcome (RoundResult::outcome) is
  /// below `roundSize`.
  void buildLoop(const DecodeState &init, mlir::ValueRange proposerInit,
                 int64_t roundSize, RoundFn round);

  // Blocks rounds are made of.
  mlir::Value index(int64_t value);
  mlir::Value i64(int64_t value);
  /// `tensor<1 x length x i64>` of seq[start, start + length).
  mlir::Value tokens(mlir::Value seq, mlir::Value start, mlir::Value length);
  /// `tensor<1 x length x i64>` of start, start + 1, ...
  mlir::Value positions(mlir::Value start, mlir::Value length);
  /// The tree mask of a chain of `rows` rows (each sees itself and the rows
  /// before it), what a target that verifies trees gets on other forwards.
  mlir::Value causalTree(mlir::Value rows);
  /// `model`'s call on `operands`, cast to its (possibly less static)
  /// argument types; a target that verifies trees gets the causal tree when
  /// `operands` leave it out.
  mlir::func::CallOp call(const CachedModel &model,
                          mlir::ValueRange operands);
  /// Row `row` of `logits [1 x n x vocab]` as `tensor<1 x vocab>`.
  mlir::Value logitsRow(mlir::Value logits, mlir::Value row, int64_t vocab);
  /// The token spec.propose picks from a `1 x vocab` row under the rule
  /// (keyed by `key` when sampling), and the distribution q it drew from.
  std::pair<mlir::Value, mlir::Value> propose(mlir::Value row,
                                              mlir::Value key);
  /// Whether the rule samples (draws need keys).
  bool isSampling() const { return rule.isSampling(); }
  /// The token the rule picks at each row of `rows [n x vocab]`, as
  /// `tensor<n x i64>`; when sampling, row r draws with `key`'s counter r.
  mlir::Value pickRows(mlir::Value rows, mlir::Value key);
  /// The most likely token of a `1 x vocab` row (the first maximum),
  /// whatever the rule.
  mlir::Value argmax(mlir::Value row);
  /// The `count` most likely tokens of a `1 x vocab` row, best first: the
  /// argmax, then the argmax with the ones before masked out.
  llvm::SmallVector<mlir::Value> mostLikely(mlir::Value row, int64_t count);
  /// The positions (`tensor<n x i64>`: `length` + each row's depth) of the
  /// rows `rows` of `tree` (0: the root), fed in that order, and their mask
  /// over the keys `columns` (`n x m` i1: key j is row i or one of its
  /// ancestors; see spec-tree-attention).
  std::pair<mlir::Value, mlir::Value> treeRows(spec::TreeAttr tree,
                                               llvm::ArrayRef<int64_t> rows,
                                               llvm::ArrayRef<int64_t> columns,
                                               mlir::Value length);
  /// Verifies `tree`'s `candidates` (`tensor<nodes x i64>`, in row order)
  /// under `state.last` in one target forward: rows [last, candidates...]
  /// at positions length + depth, each seeing the cache and its ancestors.
  /// The target's pick at the root (greedy or sampled) selects the matching
  /// child, and so on down; the path's tokens and the target's token after
  /// it are committed and the path's cache rows move next to the prefix.
  VerifiedTree verifyTree(const DecodeState &state, spec::TreeAttr tree,
                          mlir::Value candidates);
  /// Verifies `proposals` (with their q in `probs` when sampling) after
  /// `state.last` in one target forward, accepts and commits. With
  /// `proposed` (an index, greedy only), only the first `proposed` are
  /// verified: the forward has `proposed + 1` rows, and the proposals after
  /// them must be -1, a token no row's argmax is.
  VerifiedRound verifyAndCommit(const DecodeState &state, mlir::Value proposals,
                                mlir::Value probs, mlir::Value roundKey,
                                mlir::Value proposed = {});
  /// A state advanced by a round that committed `round`: one more target
  /// forward, `round.accepted + 1` more tokens.
  DecodeState advance(const DecodeState &state, VerifiedRound &round);
  /// One target-only step: the target's forward on the last token and the
  /// token the rule picks from its logits, committed after it.
  DecodeState targetStep(const DecodeState &state);
  /// The runtime's clock, in nanoseconds.
  mlir::Value readClock();
  /// Nanoseconds since `start` (a readClock value).
  mlir::Value elapsedSince(mlir::Value start);
  /// The sampling key of the round after `steps` target forwards: each round
  /// owns 2^20 consecutive keys.
  mlir::Value roundKey(mlir::Value steps);
  /// `vector` (`length` elements) as `tensor<1 x length>`.
  mlir::Value toRow(mlir::Value vector, mlir::Value length);
  /// `values` as `model`'s operands: cast to its argument types, with the
  /// causal tree appended for a target that verifies trees when left out.
  llvm::SmallVector<mlir::Value> operandsFor(const CachedModel &model,
                                             mlir::ValueRange values);

private:
  struct Counters;
  /// The rows down `tree` whose candidates equal the target's `picks` at
  /// their parents, root first (once no child matches, the last row
  /// repeats to the tree's depth), and how many candidates it accepted.
  std::pair<llvm::SmallVector<mlir::Value>, mlir::Value>
  acceptedPath(spec::TreeAttr tree, mlir::Value candidates, mlir::Value picks);
  mlir::Value isStop(mlir::Value token);
  /// Hands a committed `token` to the runtime's hook; whether it stops the
  /// generation (a stop token, or the runtime's request).
  mlir::Value reportedStop(mlir::Value token);
  /// Reports the tokens `seq` holds after `from` up to `to`; whether one
  /// stops.
  mlir::Value committedStop(mlir::Value seq, mlir::Value from, mlir::Value to);
  mlir::Value shouldContinue(mlir::Value generated, mlir::Value length,
                             mlir::Value ended, int64_t roundSize);
  mlir::ValueRange buildRounds(const DecodeState &init,
                               mlir::ValueRange proposerInit, int64_t roundSize,
                               RoundFn round);
  void buildRound(mlir::Block *body, unsigned proposerValues,
                  int64_t roundSize, RoundFn round);
  void buildTail(mlir::ValueRange results, unsigned proposerValues);
  void finish(const DecodeState &state, mlir::ValueRange counters);

  mlir::ImplicitLocOpBuilder b;
  CachedModel target;
  spec::VerificationRuleAttrInterface rule;
  int64_t capacity;
  std::optional<int64_t> eos;
  mlir::Type floatType;
  mlir::func::FuncOp func, clock, tokenHook;
  mlir::Value maxNew, key, stopTokens, promptLength, seq, promptIds,
      promptPositions;
  mlir::func::CallOp prefill;
};

} // namespace specula

#endif // SPECULA_PASSES_DECODER_DECODELOOP_H
