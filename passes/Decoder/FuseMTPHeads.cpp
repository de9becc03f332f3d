//===- FuseMTPHeads.cpp - fuse Medusa heads into the target ---------------===//

#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/FormatVariadic.h"

namespace specula {
#define GEN_PASS_DEF_SPECFUSEMTPHEADS
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

/// The bytes of a constant's elements, for comparing weights by value: the
/// blob of a dense_resource, the raw data of dense elements.
static std::optional<ArrayRef<char>> constantBytes(ElementsAttr value) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
    return std::nullopt;
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return dense.getRawData();
  return std::nullopt;
}

namespace {
struct Deduplicated {
  unsigned weights = 0; // tensors of at least 1 KiB
  uint64_t weightBytes = 0;
};
} // namespace

/// Replaces every constant equal (type and bytes) to an earlier one in the
/// function's entry block by that one; counts the weight tensors removed.
static Deduplicated deduplicateConstants(func::FuncOp func) {
  llvm::DenseMap<std::pair<Type, size_t>, SmallVector<arith::ConstantOp, 1>>
      seen;
  Deduplicated removed;
  for (auto constant : llvm::make_early_inc_range(
           func.getBody().front().getOps<arith::ConstantOp>())) {
    auto value = dyn_cast<ElementsAttr>(constant.getValue());
    std::optional<ArrayRef<char>> bytes =
        value ? constantBytes(value) : std::nullopt;
    if (!bytes)
      continue;
    auto key = std::make_pair(
        constant.getType(),
        static_cast<size_t>(llvm::hash_combine_range(*bytes)));
    auto &candidates = seen[key];
    arith::ConstantOp original;
    for (arith::ConstantOp candidate : candidates) {
      std::optional<ArrayRef<char>> other =
          constantBytes(cast<ElementsAttr>(candidate.getValue()));
      if (other && *other == *bytes) {
        original = candidate;
        break;
      }
    }
    if (!original) {
      candidates.push_back(constant);
      continue;
    }
    constant.replaceAllUsesWith(original.getResult());
    constant.erase();
    if (bytes->size() >= 1024) {
      ++removed.weights;
      removed.weightBytes += bytes->size();
    }
  }
  return removed;
}

namespace {
/// A decoder's heads and target, checked: fusing them cannot fail.
struct HeadFusion {
  func::FuncOp target;
  SmallVector<func::FuncOp> heads;
  unsigned hiddenIndex;
  /// What the heads read: the hidden state, or its last position.
  RankedTensorType headInput;
};

struct FuseMTPHeadsPass
    : public specula::impl::SpecFuseMTPHeadsBase<FuseMTPHeadsPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  FailureOr<HeadFusion> check(DecoderOp decoder, MTPProposerAttr proposer,
                              SymbolTable &symbols);
  LogicalResult fuse(DecoderOp decoder, MTPProposerAttr proposer,
                     SymbolTable &symbols);
};
} // namespace

FailureOr<HeadFusion> FuseMTPHeadsPass::check(DecoderOp decoder,
                                              MTPProposerAttr proposer,
                                              SymbolTable &symbols) {
  ArrayRef<FlatSymbolRefAttr> refs = proposer.getHeads();
  if (numHeads < 0 || numHeads > static_cast<int64_t>(refs.size()))
    return decoder.emitError()
           << "spec-fuse-mtp-heads: num-heads is "
           << static_cast<int64_t>(numHeads) << " but the decoder has "
           << refs.size() << " heads";
  if (numHeads > 0)
    refs = refs.take_front(numHeads);

  HeadFusion fusion;
  for (FlatSymbolRefAttr ref : refs) {
    auto head = symbols.lookup<func::FuncOp>(ref.getValue());
    if (head.getNumArguments() != 1 || head.isExternal())
      return head.emitError() << "Medusa head @" << ref.getValue()
                              << " must have a body and take exactly one "
                                 "argument, the hidden state";
    fusion.heads.push_back(head);
  }
  fusion.target = symbols.lookup<func::FuncOp>(decoder.getTarget());
  func::FuncOp target = fusion.target;
  if (target.isExternal())
    return target.emitError() << "target @" << target.getSymName()
                              << " has no body";
  std::optional<unsigned> hiddenIndex =
      findResult(target, IOKind::HiddenStates);
  if (!hiddenIndex)
    return target.emitError()
           << "target @" << target.getSymName()
           << " returns no hidden state (#spec.io<hidden_states>: the output "
              "hidden_states, per the model contract) for its heads to read";
  fusion.hiddenIndex = *hiddenIndex;
  auto hiddenType = cast<RankedTensorType>(target.getResultTypes()[*hiddenIndex]);
  fusion.headInput = hiddenType;
  if (lastPositionOnly) {
    if (hiddenType.getRank() != 3)
      return target.emitError()
             << "the hidden state must be batch x sequence x hidden to "
                "select the last position, got "
             << hiddenType;
    fusion.headInput = RankedTensorType::get(
        {hiddenType.getDimSize(0), 1, hiddenType.getDimSize(2)},
        hiddenType.getElementType());
  }

  for (func::FuncOp head : fusion.heads) {
    Type argType = head.getArgumentTypes().front();
    if (argType != fusion.headInput &&
        !tensor::CastOp::areCastCompatible(fusion.headInput, argType))
      return head.emitError() << "head @" << head.getSymName() << " takes "
                              << argType
                              << ", which the target's hidden state "
                              << fusion.headInput << " cannot be cast to";
  }
  return fusion;
}

/// The last position of a batch x sequence x hidden state.
static Value selectLastPosition(OpBuilder &b, Location loc, Value hidden,
                                RankedTensorType type) {
  auto hiddenType = cast<RankedTensorType>(hidden.getType());
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  Value batch = tensor::DimOp::create(b, loc, hidden, 0);
  Value length = tensor::DimOp::create(b, loc, hidden, 1);
  Value last = arith::SubIOp::create(
      b, loc, length, arith::ConstantIndexOp::create(b, loc, 1));
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), OpFoldResult(last),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {
      hiddenType.isDynamicDim(0) ? OpFoldResult(batch)
                                 : b.getIndexAttr(hiddenType.getDimSize(0)),
      b.getIndexAttr(1), b.getIndexAttr(hiddenType.getDimSize(2))};
  return tensor::ExtractSliceOp::create(b, loc, type, hidden, offsets, sizes,
                                        strides);
}

/// A copy of the target followed by the heads, returning the target's
/// results and one #spec.io<head_logits, index = k> per head.
static func::FuncOp buildFused(HeadFusion &fusion, bool lastPositionOnly,
                               SymbolTable &symbols) {
  func::FuncOp target = fusion.target;
  OpBuilder b(target);
  b.setInsertionPointAfter(target);
  auto fused = cast<func::FuncOp>(b.clone(*target));
  fused.setSymName((target.getSymName() + "_fused").str());
  symbols.insert(fused);
  // Decode loops that need the target alone (the no-speculation baseline)
  // find it here.
  fused->setAttr(SpecDialect::kFusedFromAttrName,
                 FlatSymbolRefAttr::get(target.getSymNameAttr()));
  auto ret = cast<func::ReturnOp>(fused.getBody().back().getTerminator());
  b.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  Value hidden = ret.getOperand(fusion.hiddenIndex);
  if (lastPositionOnly)
    hidden = selectLastPosition(b, loc, hidden, fusion.headInput);

  SmallVector<Value> results(ret.getOperands());
  SmallVector<DictionaryAttr> resultAttrs;
  fused.getAllResultAttrs(resultAttrs);
  for (auto [k, head] : llvm::enumerate(fusion.heads)) {
    Type argType = head.getArgumentTypes().front();
    Value input = hidden;
    if (input.getType() != argType)
      input = tensor::CastOp::create(b, loc, argType, input);
    IRMapping mapping;
    Block &body = head.getBody().front();
    mapping.map(body.getArgument(0), input);
    for (Operation &op : body.without_terminator())
      b.clone(op, mapping);
    auto headReturn = cast<func::ReturnOp>(body.getTerminator());
    results.push_back(mapping.lookup(headReturn.getOperand(0)));
    resultAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(SpecDialect::kIOAttrName,
                       b.getAttr<IOAttr>(IOKind::HeadLogits, k + 1))));
  }
  ret->setOperands(results);
  fused.setFunctionType(b.getFunctionType(fused.getArgumentTypes(),
                                          ValueRange(results).getTypes()));
  fused.setAllResultAttrs(resultAttrs);
  return fused;
}

LogicalResult FuseMTPHeadsPass::fuse(DecoderOp decoder,
                                     MTPProposerAttr proposer,
                                     SymbolTable &symbols) {
  FailureOr<HeadFusion> fusion = check(decoder, proposer, symbols);
  if (failed(fusion))
    return failure();
  func::FuncOp fused = buildFused(*fusion, lastPositionOnly, symbols);
  Deduplicated removed = deduplicateConstants(fused);
  decoder.setTargetAttr(FlatSymbolRefAttr::get(fused.getSymNameAttr()));
  decoder.emitRemark() << "fused " << fusion->heads.size()
                       << " Medusa heads into @" << fused.getSymName()
                       << "; " << removed.weights
                       << " weight tensors shared with the target or another "
                          "head are stored once ("
                       << llvm::formatv("{0:F1}", removed.weightBytes / 1024.0)
                       << " KiB saved)";
  return success();
}

/// Whether `proposer`'s heads are DeepSeek-style MTP modules, which the
/// decode loop runs after the target's forward (fusing them is not
/// supported yet); the decoder's verifier keeps them of one kind.
static bool proposesWithModules(MTPProposerAttr proposer,
                                SymbolTable &symbols) {
  auto head = symbols.lookup<func::FuncOp>(
      proposer.getHeads().front().getValue());
  auto role =
      head ? head->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName) : nullptr;
  return role && role.getKind() == FunctionRole::MTPModule;
}

void FuseMTPHeadsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  bool failedAny = false;
  for (auto decoder : llvm::to_vector(module.getOps<DecoderOp>()))
    if (auto mtp = dyn_cast<MTPProposerAttr>(decoder.getProposer());
        mtp && !proposesWithModules(mtp, symbols))
      failedAny |= failed(fuse(decoder, mtp, symbols));
  if (failedAny)
    signalPassFailure();
}
