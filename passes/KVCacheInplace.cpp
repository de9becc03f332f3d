//===- KVCacheInplace.cpp - preallocated KV caches in model functions -----===//

#include "passes/Passes.h"

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
#include "passes/Passes.h.inc"
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

private:
  LogicalResult rewrite(func::FuncOp func);
};
} // namespace

LogicalResult KVCacheInplacePass::rewrite(func::FuncOp func) {
  StringRef name = func.getSymName();
  // Past arguments and present results by (layer, part).
  std::map<std::pair<int64_t, int>, unsigned> pastArgs, presentResults;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (std::optional<CacheSlot> slot = slotOf(getArgumentIO(func, i), false))
      pastArgs[{slot->layer, static_cast<int>(slot->part)}] = i;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (std::optional<CacheSlot> slot = slotOf(getResultIO(func, i), true))
      presentResults[{slot->layer, static_cast<int>(slot->part)}] = i;
  if (pastArgs.empty())
    return success(); // Nothing to rewrite: no functional cache.
  int64_t layers = static_cast<int64_t>(pastArgs.size() / 2);
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int part : {0, 1})
      if (!pastArgs.count({layer, part}) || !presentResults.count({layer, part}))
        return func.emitError()
               << "@" << name << " lacks "
               << (pastArgs.count({layer, part}) ? "present." : "past_key_values.")
               << layer << (part == 0 ? ".key" : ".value")
               << "; a functional cache needs past and present for every layer";

  // The cache's geometry from the past tensors: batch x heads x past x dim.
  auto pastType =
      cast<RankedTensorType>(func.getArgumentTypes()[pastArgs[{0, 0}]]);
  if (pastType.getRank() != 4 || pastType.isDynamicDim(1) ||
      pastType.isDynamicDim(3))
    return func.emitError() << "past_key_values.0.key "
                               "of @"
                            << name
                            << " must be batch x kv_heads x past x head_dim "
                               "with static heads and head dimension, got "
                            << pastType;
  int64_t cap = capacity;
  if (cap <= 0) {
    auto config =
        func->getAttrOfType<ModelConfigAttr>(SpecDialect::kConfigAttrName);
    if (!config || !config.getMaxContext())
      return func.emitError() << "@" << name
                              << " has no max_context; pass capacity=<positions>";
    cap = *config.getMaxContext();
  }
  auto cacheType = KVCacheType::get(
      func.getContext(),
      {layers, pastType.getDimSize(1), cap, pastType.getDimSize(3)},
      pastType.getElementType());

  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  Location loc = func.getLoc();
  OpBuilder b(func.getContext());
  BlockArgument cache = entry.addArgument(cacheType, loc);
  BlockArgument pastLength = entry.addArgument(b.getIndexType(), loc);

  // Each present output must be Concat(past, new) along the sequence axis.
  std::vector<std::tuple<tensor::ConcatOp, CacheSlot>> concats;
  for (auto &[slot, resultIndex] : presentResults) {
    Value present = ret.getOperand(resultIndex);
    while (auto cast = present.getDefiningOp<tensor::CastOp>())
      present = cast.getSource();
    auto concat = present.getDefiningOp<tensor::ConcatOp>();
    Value past = entry.getArgument(pastArgs[slot]);
    auto isPast = [&](Value v) {
      while (auto cast = v.getDefiningOp<tensor::CastOp>())
        v = cast.getSource();
      return v == past;
    };
    if (!concat || concat.getDim() != 2 || concat.getInputs().size() != 2 ||
        !isPast(concat.getInputs()[0]))
      return func.emitError()
             << "present." << slot.first
             << (slot.second == 0 ? ".key" : ".value") << " of @" << name
             << " is not Concat(past_key_values." << slot.first
             << (slot.second == 0 ? ".key" : ".value")
             << ", new) along the sequence axis";
    concats.emplace_back(concat, CacheSlot{slot.first,
                                           static_cast<CachePart>(slot.second)});
  }

  // The past tensors' shapes become the past length and the geometry.
  for (auto &[slot, argIndex] : pastArgs) {
    for (OpOperand &use : llvm::make_early_inc_range(
             entry.getArgument(argIndex).getUses())) {
      Operation *user = use.getOwner();
      if (isa<tensor::ConcatOp, tensor::CastOp>(user))
        continue;
      auto dim = dyn_cast<tensor::DimOp>(user);
      std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
      if (!index)
        return user->emitError()
               << "past_key_values." << slot.first
               << (slot.second == 0 ? ".key" : ".value") << " of @" << name
               << " is used other than by its concatenation and its shape";
      b.setInsertionPoint(dim);
      Value size =
          *index == 2
              ? Value(pastLength)
              : Value(arith::ConstantIndexOp::create(
                    b, dim.getLoc(),
                    *index == 0 ? 1 : cacheType.getShape()[*index == 1 ? 1 : 3]));
      dim.replaceAllUsesWith(size);
      dim.erase();
    }
  }

  // Writes in program order, threading the cache through them.
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

  // Results: drop the presents, append the cache. Arguments: drop the pasts.
  SmallVector<Value> results;
  llvm::BitVector droppedResults(func.getNumResults());
  for (auto &[slot, index] : presentResults)
    droppedResults.set(index);
  for (auto [i, operand] : llvm::enumerate(ret.getOperands()))
    if (!droppedResults.test(i))
      results.push_back(operand);
  results.push_back(current);
  SmallVector<DictionaryAttr> resultAttrs, keptResultAttrs;
  func.getAllResultAttrs(resultAttrs);
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    if (!droppedResults.test(i))
      keptResultAttrs.push_back(attrs);
  auto io = [&](IOKind kind) {
    return b.getDictionaryAttr(b.getNamedAttr(SpecDialect::kIOAttrName,
                                              b.getAttr<IOAttr>(kind, std::nullopt)));
  };
  keptResultAttrs.push_back(io(IOKind::KVCache));
  ret->setOperands(results);

  llvm::BitVector droppedArgs(entry.getNumArguments());
  for (auto &[slot, index] : pastArgs)
    droppedArgs.set(index);
  SmallVector<DictionaryAttr> argAttrs, keptArgAttrs;
  func.getAllArgAttrs(argAttrs);
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (!droppedArgs.test(i))
      keptArgAttrs.push_back(attrs);
  for (IOKind kind : {IOKind::KVCache, IOKind::PastLength})
    keptArgAttrs.push_back(io(kind));
  for (unsigned i : droppedArgs.set_bits())
    if (!entry.getArgument(i).use_empty())
      return func.emitError() << "a past tensor of @"
                              << name << " is still used after the rewrite";
  entry.eraseArguments(droppedArgs);
  func.setFunctionType(b.getFunctionType(
      entry.getArgumentTypes(), ValueRange(results).getTypes()));
  func.setAllArgAttrs(keptArgAttrs);
  func.setAllResultAttrs(keptResultAttrs);
  return success();
}

void KVCacheInplacePass::runOnOperation() {
  bool failedAny = false;
  for (auto func : getOperation().getOps<func::FuncOp>()) {
    auto role = func->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
    if (!role || func.isExternal() ||
        role.getKind() == FunctionRole::MedusaHead)
      continue;
    failedAny |= failed(rewrite(func));
  }
  if (failedAny)
    signalPassFailure();
}
