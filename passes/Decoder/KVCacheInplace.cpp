//===- KVCacheInplace.cpp - preallocated KV caches in model functions -----===//

#include "passes/Decoder/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// The rewrite of one function's functional cache. analyze() checks
/// everything and records what to change; apply() changes it and cannot
/// fail, so a refusal leaves the function as it was.
class CacheRewrite {
public:
  explicit CacheRewrite(func::FuncOp func) : func(func) {}

  /// Fails with a diagnostic if the cache cannot be rewritten; false if
  /// there is none.
  FailureOr<bool> analyze(int64_t capacity);
  void apply();

private:
  LogicalResult findSlots();
  LogicalResult findConcats();
  LogicalResult findPastUses();
  LogicalResult findAttentionMask();
  void bindAttentionMask(OpBuilder &b, Value pastLength);
  Value writeCaches(OpBuilder &b, Value cache, Value pastLength);
  void updateSignature(OpBuilder &b, Value cache);

  func::FuncOp func;
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
  cacheType = KVCacheType::get(
      func.getContext(),
      {layers, pastType.getDimSize(1), capacity, pastType.getDimSize(3)},
      pastType.getElementType());
  if (failed(findConcats()) || failed(findPastUses()) ||
      failed(findAttentionMask()))
    return failure();
  return true;
}

/// Each concatenation becomes a write of the new entries at the past length
/// and a read of the first past + new positions, in program order, threading
/// the cache through them. Returns the last cache value.
Value CacheRewrite::writeCaches(OpBuilder &b, Value cache, Value pastLength) {
  llvm::sort(concats, [](const auto &a, const auto &b) {
    return std::get<0>(a)->isBeforeInBlock(std::get<0>(b));
  });
  Value current = cache;
  for (auto &[concat, slot] : concats) {
    b.setInsertionPoint(concat);
    Location l = concat.getLoc();
    Value entries = concat.getInputs()[1];
    Value written = CacheWriteOp::create(
        b, l, cacheType, current, slot.part,
        static_cast<uint64_t>(slot.layer), pastLength, entries);
    Value newLength = tensor::DimOp::create(b, l, entries, 2);
    Value total = arith::AddIOp::create(b, l, pastLength, newLength);
    auto entriesType = cast<RankedTensorType>(entries.getType());
    auto readType = RankedTensorType::get(
        {1, cacheType.getNumKVHeads(), ShapedType::kDynamic,
         cacheType.getHeadDim()},
        entriesType.getElementType());
    Value all =
        CacheReadOp::create(b, l, readType, written, slot.part,
                            static_cast<uint64_t>(slot.layer), total);
    if (all.getType() != concat.getType())
      all = tensor::CastOp::create(b, l, concat.getType(), all);
    concat.replaceAllUsesWith(all);
    concat.erase();
    current = written;
  }
  return current;
}

/// The mask becomes ones over the past and new positions.
void CacheRewrite::bindAttentionMask(OpBuilder &b, Value pastLength) {
  if (!maskArg)
    return;
  Block &entry = func.getBody().front();
  Location loc = func.getLoc();
  b.setInsertionPointToStart(&entry);
  auto type = cast<RankedTensorType>(func.getArgumentTypes()[*maskArg]);
  Value tokens = entry.getArgument(*tokenArg);
  Value total = arith::AddIOp::create(
      b, loc, pastLength, tensor::DimOp::create(b, loc, tokens, 1));
  Type element = type.getElementType();
  Value one = arith::ConstantOp::create(
      b, loc, isa<FloatType>(element) ? TypedAttr(b.getFloatAttr(element, 1.0))
                                      : TypedAttr(b.getIntegerAttr(element, 1)));
  SmallVector<Value> sizes;
  if (type.isDynamicDim(0))
    sizes.push_back(arith::ConstantIndexOp::create(b, loc, 1));
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
  for (IOKind kind : {IOKind::KVCache, IOKind::PastLength})
    keptArgAttrs.push_back(io(kind));
  entry.eraseArguments(droppedArgs);
  func.setFunctionType(b.getFunctionType(
      entry.getArgumentTypes(), ValueRange(results).getTypes()));
  func.setAllArgAttrs(keptArgAttrs);
  func.setAllResultAttrs(keptResultAttrs);
}

void CacheRewrite::apply() {
  Block &entry = func.getBody().front();
  OpBuilder b(func.getContext());
  // Appended after the existing arguments: updateSignature's attributes
  // assume they are the last two.
  Value cache = entry.addArgument(cacheType, func.getLoc());
  Value pastLength = entry.addArgument(b.getIndexType(), func.getLoc());
  // The past tensors' shapes become the past length and the geometry.
  for (auto [dim, index] : pastDims) {
    b.setInsertionPoint(dim);
    Value size =
        index == 2
            ? pastLength
            : Value(arith::ConstantIndexOp::create(
                  b, dim.getLoc(),
                  index == 0 ? 1 : cacheType.getShape()[index == 1 ? 1 : 3]));
    dim.replaceAllUsesWith(size);
    dim.erase();
  }
  bindAttentionMask(b, pastLength);
  Value last = writeCaches(b, cache, pastLength);
  // The casts of the pasts fed only the replaced concatenations.
  for (tensor::CastOp cast : llvm::reverse(pastCasts))
    cast.erase();
  updateSignature(b, last);
}

void KVCacheInplacePass::runOnOperation() {
  bool failedAny = false;
  for (auto func : getOperation().getOps<func::FuncOp>()) {
    auto role = func->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
    if (!role || func.isExternal() ||
        role.getKind() == FunctionRole::MedusaHead)
      continue;
    CacheRewrite rewrite(func);
    FailureOr<bool> rewritable = rewrite.analyze(capacity);
    if (failed(rewritable))
      failedAny = true;
    else if (*rewritable)
      rewrite.apply();
  }
  if (failedAny)
    signalPassFailure();
}
