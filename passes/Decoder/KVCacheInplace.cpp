//===- KVCacheInplace.cpp - preallocated KV caches in model functions -----===//

#include "passes/Decoder/Passes.h"

#include "passes/Decoder/CausalMask.h"

#include "llvm/ADT/SmallPtrSet.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/Regex.h"

namespace specula {
#define GEN_PASS_DEF_SPECKVCACHEINPLACE
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
/// One of a layer's key or value cache tensors.
struct CacheSlot {
  int64_t layer;
  CachePart part;
};

/// The slot of a past (or present) key or value, by its #spec.io.
std::optional<CacheSlot> slotOf(IOAttr io, bool present) {
  if (!io)
    return std::nullopt;
  IOKind key = present ? IOKind::PresentKey : IOKind::PastKey;
  IOKind value = present ? IOKind::PresentValue : IOKind::PastValue;
  if (io.getKind() != key && io.getKind() != value)
    return std::nullopt;
  return CacheSlot{*io.getIndex(),
                   io.getKind() == key ? CachePart::Keys : CachePart::Values};
}

struct KVCacheInplacePass
    : public specula::impl::SpecKVCacheInplaceBase<KVCacheInplacePass> {
  using Base::Base;
  void runOnOperation() override;
};

/// What the rewritten function knows of the past: its length (with slots,
/// the batch's longest) and the batch it runs; with slots, also the first
/// slot and each row's past length.
struct Past {
  Value length, batch;
  Value firstSlot, lengths;
  /// The last op computing them, at the start of the body.
  Operation *ready = nullptr;
};

/// The rewrite of one function's functional cache. analyze() checks
/// everything and records what to change; apply() changes it and cannot
/// fail, so a refusal leaves the function as it was.
class CacheRewrite {
public:
  CacheRewrite(func::FuncOp func, int64_t slots) : func(func), slots(slots) {}

  /// Fails with a diagnostic if the cache cannot be rewritten; false if
  /// there is none.
  FailureOr<bool> analyze(int64_t capacity);
  void apply();

private:
  LogicalResult findSlots();
  LogicalResult findConcats();
  LogicalResult findPastUses();
  LogicalResult findAttentionMask();
  LogicalResult findCausalMasksForSlots();
  Past addPastArguments(OpBuilder &b);
  void bindAttentionMask(OpBuilder &b, const Past &past);
  Value writeCaches(OpBuilder &b, Value cache, const Past &past);
  void maskEachSlot(OpBuilder &b, const Past &past);
  void updateSignature(OpBuilder &b, Value cache);

  func::FuncOp func;
  int64_t slots;
  /// With slots: the causal masks to make one per row.
  SmallVector<linalg::GenericOp> causalMasks;
  /// Past arguments and present results by (layer, part).
  std::map<std::pair<int64_t, int>, unsigned> pastArgs, presentResults;
  KVCacheType cacheType;
  std::vector<std::tuple<tensor::ConcatOp, CacheSlot>> concats;
  SmallVector<tensor::CastOp> pastCasts;
  SmallVector<std::pair<tensor::DimOp, int64_t>> pastDims;
  /// The attention_mask and input_ids arguments, when there is a mask.
  std::optional<unsigned> maskArg, tokenArg;
};
} // namespace

static StringRef partName(int part) { return part == 0 ? ".key" : ".value"; }

LogicalResult CacheRewrite::findSlots() {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (std::optional<CacheSlot> slot = slotOf(getArgumentIO(func, i), false))
      pastArgs[{slot->layer, static_cast<int>(slot->part)}] = i;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (std::optional<CacheSlot> slot = slotOf(getResultIO(func, i), true))
      presentResults[{slot->layer, static_cast<int>(slot->part)}] = i;
  int64_t layers = static_cast<int64_t>(pastArgs.size() / 2);
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int part : {0, 1})
      if (!pastArgs.count({layer, part}) || !presentResults.count({layer, part}))
        return func.emitError()
               << "@" << func.getSymName() << " lacks "
               << (pastArgs.count({layer, part}) ? "present." : "past_key_values.")
               << layer << partName(part)
               << "; a functional cache needs past and present for every layer";
  return success();
}

/// Each present output must be Concat(past, new) along the sequence axis.
LogicalResult CacheRewrite::findConcats() {
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  auto stripCasts = [](Value v) {
    while (auto cast = v.getDefiningOp<tensor::CastOp>())
      v = cast.getSource();
    return v;
  };
  for (auto &[slot, resultIndex] : presentResults) {
    auto concat =
        stripCasts(ret.getOperand(resultIndex)).getDefiningOp<tensor::ConcatOp>();
    Value past = entry.getArgument(pastArgs[slot]);
    if (!concat || concat.getDim() != 2 || concat.getInputs().size() != 2 ||
        stripCasts(concat.getInputs()[0]) != past)
      return func.emitError()
             << "present." << slot.first << partName(slot.second) << " of @"
             << func.getSymName() << " is not Concat(past_key_values."
             << slot.first << partName(slot.second)
             << ", new) along the sequence axis";
    concats.emplace_back(concat, CacheSlot{slot.first,
                                           static_cast<CachePart>(slot.second)});
  }
  return success();
}

/// A past tensor may only feed its concatenation (directly or through casts)
/// and its shape (tensor.dim with a constant index).
LogicalResult CacheRewrite::findPastUses() {
  llvm::SmallPtrSet<Operation *, 16> concatOps;
  for (auto &[concat, slot] : concats)
    concatOps.insert(concat);
  Block &entry = func.getBody().front();
  for (auto &[slot, argIndex] : pastArgs) {
    SmallVector<Value> worklist{entry.getArgument(argIndex)};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (concatOps.contains(user))
          continue;
        if (auto cast = dyn_cast<tensor::CastOp>(user)) {
          pastCasts.push_back(cast);
          worklist.push_back(cast.getResult());
          continue;
        }
        auto dim = dyn_cast<tensor::DimOp>(user);
        std::optional<int64_t> index =
            dim ? dim.getConstantIndex() : std::nullopt;
        if (!index)
          return user->emitError()
                 << "past_key_values." << slot.first << partName(slot.second)
                 << " of @" << func.getSymName()
                 << " is used other than by its concatenation and its shape";
        pastDims.emplace_back(dim, *index);
      }
    }
  }
  return success();
}

/// An attention_mask (batch x total positions, as optimum exports take) is
/// all ones for one unpadded sequence, which is what the decode loops run;
/// it needs the input_ids to know the total.
LogicalResult CacheRewrite::findAttentionMask() {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    IOAttr io = getArgumentIO(func, i);
    if (io && io.getKind() == IOKind::AttentionMask)
      maskArg = i;
    else if (io && io.getKind() == IOKind::TokenIds)
      tokenArg = i;
  }
  if (!maskArg)
    return success();
  auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[*maskArg]);
  if (!type || type.getRank() != 2 || !type.isDynamicDim(1) ||
      (!type.isDynamicDim(0) && type.getDimSize(0) != 1) ||
      !(type.getElementType().isIntOrIndex() ||
        isa<FloatType>(type.getElementType())))
    return func.emitError() << "attention_mask of @" << func.getSymName()
                            << " must be batch x total_sequence (dynamic) "
                               "of integers or floats, got "
                            << func.getArgumentTypes()[*maskArg];
  auto tokenType = tokenArg ? dyn_cast<RankedTensorType>(
                                  func.getArgumentTypes()[*tokenArg])
                            : RankedTensorType();
  if (!tokenType || tokenType.getRank() != 2)
    return func.emitError() << "@" << func.getSymName()
                            << " has an attention_mask but no input_ids "
                               "(batch x sequence) to size it by";
  return success();
}

FailureOr<bool> CacheRewrite::analyze(int64_t capacity) {
  if (failed(findSlots()))
    return failure();
  if (pastArgs.empty())
    return false; // Nothing to rewrite: no functional cache.

  // The cache's geometry from the past tensors: batch x heads x past x dim.
  auto pastType =
      cast<RankedTensorType>(func.getArgumentTypes()[pastArgs[{0, 0}]]);
  if (pastType.getRank() != 4 || pastType.isDynamicDim(1) ||
      pastType.isDynamicDim(3))
    return func.emitError() << "past_key_values.0.key of @"
                            << func.getSymName()
                            << " must be batch x kv_heads x past x head_dim "
                               "with static heads and head dimension, got "
                            << pastType;
  if (capacity <= 0) {
    auto config =
        func->getAttrOfType<ModelConfigAttr>(SpecDialect::kConfigAttrName);
    if (!config || !config.getMaxContext())
      return func.emitError() << "@" << func.getSymName()
                              << " has no max_context; pass capacity=<positions>";
    capacity = *config.getMaxContext();
  }
  int64_t layers = static_cast<int64_t>(pastArgs.size() / 2);
  SmallVector<int64_t> shape{layers, pastType.getDimSize(1), capacity,
                             pastType.getDimSize(3)};
  if (slots > 0) {
    if (!pastType.isDynamicDim(0))
      return func.emitError() << "@" << func.getSymName()
                              << " has a fixed batch of "
                              << pastType.getDimSize(0)
                              << "; a cache of slots needs a dynamic batch";
    shape.insert(shape.begin() + 1, slots);
  }
  cacheType = KVCacheType::get(func.getContext(), shape,
                               pastType.getElementType());
  if (failed(findConcats()) || failed(findPastUses()) ||
      failed(findAttentionMask()) ||
      (slots > 0 && failed(findCausalMasksForSlots())))
    return failure();
  return true;
}

/// Each concatenation becomes a write of the new entries at the past length
/// and a read of the first past + new positions, in program order, threading
/// the cache through them. Returns the last cache value.
Value CacheRewrite::writeCaches(OpBuilder &b, Value cache, const Past &past) {
  llvm::sort(concats, [](const auto &a, const auto &b) {
    return std::get<0>(a)->isBeforeInBlock(std::get<0>(b));
  });
  Value current = cache;
  for (auto &[concat, slot] : concats) {
    b.setInsertionPoint(concat);
    Location l = concat.getLoc();
    Value entries = concat.getInputs()[1];
    auto layer = static_cast<uint64_t>(slot.layer);
    Value written =
        slots > 0
            ? Value(CacheWriteSlotsOp::create(b, l, cacheType, current,
                                              slot.part, layer, past.firstSlot,
                                              past.lengths, entries))
            : Value(CacheWriteOp::create(b, l, cacheType, current, slot.part,
                                         layer, past.length, entries));
    Value newLength = tensor::DimOp::create(b, l, entries, 2);
    Value total = arith::AddIOp::create(b, l, past.length, newLength);
    auto readType = RankedTensorType::get(
        {slots > 0 ? ShapedType::kDynamic : 1, cacheType.getNumKVHeads(),
         ShapedType::kDynamic, cacheType.getHeadDim()},
        cacheType.getElementType());
    Value all =
        slots > 0
            ? Value(CacheReadSlotsOp::create(b, l, readType, written, slot.part,
                                             layer, past.firstSlot, past.batch,
                                             total))
            : Value(CacheReadOp::create(b, l, readType, written, slot.part,
                                        layer, total));
    if (all.getType() != concat.getType())
      all = tensor::CastOp::create(b, l, concat.getType(), all);
    concat.replaceAllUsesWith(all);
    concat.erase();
    current = written;
  }
  return current;
}

/// The mask becomes ones over the past and new positions.
void CacheRewrite::bindAttentionMask(OpBuilder &b, const Past &past) {
  if (!maskArg)
    return;
  Block &entry = func.getBody().front();
  Location loc = func.getLoc();
  b.setInsertionPointAfter(past.ready);
  auto type = cast<RankedTensorType>(func.getArgumentTypes()[*maskArg]);
  Value tokens = entry.getArgument(*tokenArg);
  Value total = arith::AddIOp::create(
      b, loc, past.length, tensor::DimOp::create(b, loc, tokens, 1));
  Type element = type.getElementType();
  Value one = arith::ConstantOp::create(
      b, loc, isa<FloatType>(element) ? TypedAttr(b.getFloatAttr(element, 1.0))
                                      : TypedAttr(b.getIntegerAttr(element, 1)));
  SmallVector<Value> sizes;
  if (type.isDynamicDim(0))
    sizes.push_back(past.batch);
  sizes.push_back(total);
  Value ones = tensor::SplatOp::create(b, loc, one, type, sizes);
  entry.getArgument(*maskArg).replaceAllUsesWith(ones);
}

/// Results: the presents dropped, the cache appended. Arguments: the pasts
/// and the attention mask dropped (the cache and past length were appended).
void CacheRewrite::updateSignature(OpBuilder &b, Value cache) {
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  auto io = [&](IOKind kind) {
    return b.getDictionaryAttr(b.getNamedAttr(
        SpecDialect::kIOAttrName, b.getAttr<IOAttr>(kind, std::nullopt)));
  };
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs, keptResultAttrs;
  func.getAllResultAttrs(resultAttrs);
  llvm::BitVector droppedResults(func.getNumResults());
  for (auto &[slot, index] : presentResults)
    droppedResults.set(index);
  for (auto [i, operand] : llvm::enumerate(ret.getOperands()))
    if (!droppedResults.test(i)) {
      results.push_back(operand);
      keptResultAttrs.push_back(resultAttrs[i]);
    }
  results.push_back(cache);
  keptResultAttrs.push_back(io(IOKind::KVCache));
  ret->setOperands(results);

  llvm::BitVector droppedArgs(entry.getNumArguments());
  for (auto &[slot, index] : pastArgs)
    droppedArgs.set(index);
  if (maskArg)
    droppedArgs.set(*maskArg);
  SmallVector<DictionaryAttr> argAttrs, keptArgAttrs;
  func.getAllArgAttrs(argAttrs);
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (!droppedArgs.test(i))
      keptArgAttrs.push_back(attrs);
  keptArgAttrs.push_back(io(IOKind::KVCache));
  if (slots > 0) {
    keptArgAttrs.push_back(io(IOKind::FirstSlot));
    keptArgAttrs.push_back(io(IOKind::PastLengths));
  } else {
    keptArgAttrs.push_back(io(IOKind::PastLength));
  }
  entry.eraseArguments(droppedArgs);
  func.setFunctionType(b.getFunctionType(
      entry.getArgumentTypes(), ValueRange(results).getTypes()));
  func.setAllArgAttrs(keptArgAttrs);
  func.setAllResultAttrs(keptResultAttrs);
}

/// Appends the past's arguments and computes what the body needs of them at
/// its start: with slots, the batch is the number of past lengths and the
/// past is their maximum.
Past CacheRewrite::addPastArguments(OpBuilder &b) {
  Block &entry = func.getBody().front();
  Location loc = func.getLoc();
  b.setInsertionPointToStart(&entry);
  Past past;
  if (slots == 0) {
    past.length = entry.addArgument(b.getIndexType(), loc);
    past.batch = arith::ConstantIndexOp::create(b, loc, 1);
    past.ready = past.batch.getDefiningOp();
    return past;
  }
  past.firstSlot = entry.addArgument(b.getIndexType(), loc);
  past.lengths = entry.addArgument(
      RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type()), loc);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  past.batch = tensor::DimOp::create(b, loc, past.lengths, 0);
  auto longest = scf::ForOp::create(
      b, loc, zero, past.batch, one, ValueRange{zero},
      [&](OpBuilder &nb, Location l, Value row, ValueRange longest) {
        Value length = arith::IndexCastOp::create(
            nb, l, nb.getIndexType(),
            tensor::ExtractOp::create(nb, l, past.lengths, row));
        scf::YieldOp::create(
            nb, l, ValueRange{arith::MaxSIOp::create(nb, l, longest[0], length)
                                  .getResult()});
      });
  past.length = longest.getResult(0);
  past.ready = longest;
  return past;
}

/// With slots, every causal mask must feed scores of batch x heads x
/// queries x keys whose batch (loop dimension 0) it does not vary with:
/// those become one mask per row.
LogicalResult CacheRewrite::findCausalMasksForSlots() {
  causalMasks = findCausalMasks(func);
  if (causalMasks.empty())
    return func.emitError()
           << "@" << func.getSymName()
           << " has no causal attention mask of the form Where(key_pos > "
              "query_pos, -inf, scores) to make one per sequence of a batch "
              "of slots";
  for (linalg::GenericOp mask : causalMasks)
    for (OpOperand &use : mask.getResult(0).getUses()) {
      auto scores = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!scores)
        continue; // its shape
      AffineMap map = scores.getMatchingIndexingMap(&use);
      if (scores.getNumLoops() != 4 || map.isFunctionOfDim(0))
        return scores.emitError()
               << "the causal mask of @" << func.getSymName()
               << " masks scores that are not batch x heads x queries x keys "
                  "broadcast over the batch; a cache of slots needs one mask "
                  "per sequence";
    }
  return success();
}

/// Each causal mask becomes `key > past_lengths[b] + query`, batch x
/// queries x keys, and the scores read row b's.
void CacheRewrite::maskEachSlot(OpBuilder &b, const Past &past) {
  for (linalg::GenericOp mask : causalMasks) {
    Location loc = mask.getLoc();
    b.setInsertionPoint(mask);
    Value init = mask.getDpsInitOperand(0)->get();
    Value queries = tensor::DimOp::create(b, loc, init, 0);
    Value keys = tensor::DimOp::create(b, loc, init, 1);
    Value empty = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{past.batch, queries, keys},
        b.getI1Type());
    MLIRContext *context = b.getContext();
    AffineMap rows = AffineMap::get(3, 0, getAffineDimExpr(0, context));
    auto perRow = linalg::GenericOp::create(
        b, loc, empty.getType(), ValueRange{past.lengths}, ValueRange{empty},
        ArrayRef<AffineMap>{rows, b.getMultiDimIdentityMap(3)},
        SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
        [](OpBuilder &nb, Location l, ValueRange args) {
          Value length =
              arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[0]);
          Value query = linalg::IndexOp::create(nb, l, 1);
          Value key = linalg::IndexOp::create(nb, l, 2);
          Value position = arith::AddIOp::create(nb, l, length, query);
          linalg::YieldOp::create(
              nb, l,
              ValueRange{arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::sgt, key, position)
                             .getResult()});
        });
    for (OpOperand &use :
         llvm::make_early_inc_range(mask.getResult(0).getUses())) {
      auto scores = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!scores)
        continue;
      SmallVector<AffineMap> maps = scores.getIndexingMapsArray();
      AffineMap &map = maps[use.getOperandNumber()];
      SmallVector<AffineExpr> results{getAffineDimExpr(0, context)};
      llvm::append_range(results, map.getResults());
      map = AffineMap::get(map.getNumDims(), 0, results, context);
      scores.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
      use.set(perRow.getResult(0));
    }
  }
}

void CacheRewrite::apply() {
  Block &entry = func.getBody().front();
  OpBuilder b(func.getContext());
  // Appended after the existing arguments: updateSignature's attributes
  // assume they are the last ones.
  Value cache = entry.addArgument(cacheType, func.getLoc());
  Past past = addPastArguments(b);
  // The past tensors' shapes become the past length and the geometry.
  for (auto [dim, index] : pastDims) {
    b.setInsertionPoint(dim);
    Value size = index == 0   ? past.batch
                 : index == 2 ? past.length
                              : Value(arith::ConstantIndexOp::create(
                                    b, dim.getLoc(),
                                    index == 1 ? cacheType.getNumKVHeads()
                                               : cacheType.getHeadDim()));
    dim.replaceAllUsesWith(size);
    dim.erase();
  }
  bindAttentionMask(b, past);
  if (slots > 0)
    maskEachSlot(b, past);
  Value last = writeCaches(b, cache, past);
  // The casts of the pasts fed only the replaced concatenations.
  for (tensor::CastOp cast : llvm::reverse(pastCasts))
    cast.erase();
  updateSignature(b, last);
}

void KVCacheInplacePass::runOnOperation() {
  if (slots < 0) {
    getOperation().emitError() << "spec-kv-cache-inplace: slots must be 0 "
                                  "(one sequence) or positive, got "
                               << static_cast<int64_t>(slots);
    return signalPassFailure();
  }
  bool failedAny = false;
  for (auto func : getOperation().getOps<func::FuncOp>()) {
    auto role = func->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
    if (!role || func.isExternal() ||
        role.getKind() == FunctionRole::MedusaHead)
      continue;
    auto slotsAttr = func->getAttrOfType<IntegerAttr>(SpecDialect::kSlotsAttrName);
    CacheRewrite rewrite(func, slotsAttr ? slotsAttr.getInt() : slots);
    FailureOr<bool> rewritable = rewrite.analyze(capacity);
    if (failed(rewritable))
      failedAny = true;
    else if (*rewritable)
      rewrite.apply();
  }
  if (failedAny)
    signalPassFailure();
}
