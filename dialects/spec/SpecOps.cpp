//===- SpecOps.cpp - spec dialect operation verifiers ---------------------===//

#include "dialects/spec/SpecOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace specula::spec;

#define GET_OP_CLASSES
#include "dialects/spec/SpecOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Model function lookup and signature checks
//===----------------------------------------------------------------------===//

namespace {
/// A function that a spec op refers to, with the spec attributes it carries.
struct ModelFunction {
  FunctionOpInterface op;
  FlatSymbolRefAttr ref;
  RoleAttr role;
  ModelConfigAttr config;
};
} // namespace

/// Resolves `ref` from `user` to a function whose role is one of `roles`.
/// `what` names the reference in diagnostics ("target", "draft", "head 2").
static FailureOr<ModelFunction>
lookupModelFunction(Operation *user, SymbolTableCollection &symbolTable,
                    FlatSymbolRefAttr ref, const Twine &what,
                    ArrayRef<FunctionRole> roles) {
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(user, ref);
  if (!symbol)
    return user->emitOpError() << what << " " << ref
                               << " does not name a symbol";
  auto fn = dyn_cast<FunctionOpInterface>(symbol);
  if (!fn) {
    InFlightDiagnostic diag = user->emitOpError()
                              << what << " " << ref << " is not a function";
    diag.attachNote(symbol->getLoc()) << "symbol defined here";
    return diag;
  }
  auto role = fn->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
  std::string expected;
  llvm::raw_string_ostream os(expected);
  llvm::interleave(
      roles, os, [&](FunctionRole r) { os << "'" << stringifyFunctionRole(r) << "'"; },
      " or ");
  if (!role) {
    InFlightDiagnostic diag = user->emitOpError()
                              << what << " " << ref << " has no '"
                              << SpecDialect::kRoleAttrName
                              << "' attribute; expected role " << expected;
    diag.attachNote(fn->getLoc()) << "function defined here";
    return diag;
  }
  if (!llvm::is_contained(roles, role.getKind())) {
    InFlightDiagnostic diag = user->emitOpError()
                              << what << " " << ref << " has role '"
                              << stringifyFunctionRole(role.getKind())
                              << "', expected " << expected;
    diag.attachNote(fn->getLoc()) << "function defined here";
    return diag;
  }
  auto config = fn->getAttrOfType<ModelConfigAttr>(SpecDialect::kConfigAttrName);
  return ModelFunction{fn, ref, role, config};
}

/// Returns the vocabulary dimension of `logits` when it is static.
static std::optional<int64_t> staticVocab(RankedTensorType logits) {
  if (logits.getRank() == 0 || logits.isDynamicDim(logits.getRank() - 1))
    return std::nullopt;
  return logits.getShape().back();
}

/// Checks that `model` takes `firstInput` (token ids or a hidden state) as
/// its first argument and returns logits as its first result, and that the
/// logits' vocabulary dimension agrees with the model's own configuration.
/// Returns the logits type.
static FailureOr<RankedTensorType>
verifyModelSignature(Operation *user, const ModelFunction &model,
                     const Twine &what, bool takesTokenIds) {
  FunctionOpInterface fn = model.op;
  ArrayRef<Type> inputs = fn.getArgumentTypes();
  auto firstInput = inputs.empty() ? TensorType()
                                   : dyn_cast<TensorType>(inputs.front());
  bool inputOk = firstInput && (takesTokenIds
                                    ? firstInput.getElementType().isSignlessInteger()
                                    : isa<FloatType>(firstInput.getElementType()));
  if (!inputOk) {
    InFlightDiagnostic diag = user->emitOpError() << what << " " << model.ref;
    if (takesTokenIds)
      diag << " must take token ids (a tensor of signless integers) as its "
              "first argument";
    else
      diag << " must take a hidden state (a tensor of floats) as its first "
              "argument";
    if (!inputs.empty())
      diag << ", got " << inputs.front();
    return diag;
  }
  ArrayRef<Type> results = fn.getResultTypes();
  auto logits =
      results.empty() ? RankedTensorType() : dyn_cast<RankedTensorType>(results.front());
  if (!logits || logits.getRank() < 1 ||
      !isa<FloatType>(logits.getElementType())) {
    InFlightDiagnostic diag = user->emitOpError()
                              << what << " " << model.ref
                              << " must return logits (a ranked tensor of "
                                 "floats, vocabulary last) as its first result";
    if (!results.empty())
      diag << ", got " << results.front();
    return diag;
  }
  std::optional<int64_t> vocab = staticVocab(logits);
  if (model.config && vocab && *vocab != model.config.getVocabSize())
    return user->emitOpError()
           << what << " " << model.ref << " returns logits over " << *vocab
           << " tokens but its spec.config has vocab_size "
           << model.config.getVocabSize();
  return logits;
}

/// Checks that a proposer is interchangeable with the target token for
/// token: same vocabulary size and, when both are known, same tokenizer.
static LogicalResult verifySameVocabulary(Operation *user,
                                          const ModelFunction &target,
                                          RankedTensorType targetLogits,
                                          const ModelFunction &proposer,
                                          RankedTensorType proposerLogits,
                                          const Twine &what) {
  std::optional<int64_t> targetVocab =
      target.config ? std::optional(target.config.getVocabSize())
                    : staticVocab(targetLogits);
  std::optional<int64_t> proposerVocab =
      proposer.config ? std::optional(proposer.config.getVocabSize())
                      : staticVocab(proposerLogits);
  if (targetVocab && proposerVocab && *targetVocab != *proposerVocab)
    return user->emitOpError()
           << "vocabulary size mismatch: target " << target.ref << " has "
           << *targetVocab << " tokens, " << what << " " << proposer.ref
           << " has " << *proposerVocab;
  StringAttr targetTok = target.config ? target.config.getTokenizer() : nullptr;
  StringAttr proposerTok =
      proposer.config ? proposer.config.getTokenizer() : nullptr;
  if (targetTok && proposerTok && targetTok != proposerTok)
    return user->emitOpError()
           << "tokenizer mismatch: target " << target.ref << " has "
           << targetTok << ", " << what << " " << proposer.ref << " has "
           << proposerTok << "; token ids would mean different text";
  return success();
}

//===----------------------------------------------------------------------===//
// DecoderOp
//===----------------------------------------------------------------------===//

int64_t DecoderOp::getNumProposals() {
  return getProposer().getNumProposals();
}

LogicalResult DecoderOp::verify() {
  if ((*this)->hasAttr(SpecDialect::kCrossTokenizerAttrName) &&
      (!isa<DraftProposerAttr>(getProposer()) || getTreeAttr()))
    return emitOpError() << "'" << SpecDialect::kCrossTokenizerAttrName
                         << "' marks a draft proposing chains";
  if (FloatAttr rate = getAcceptanceRateAttr())
    if (!(rate.getValueAsDouble() >= 0.0 && rate.getValueAsDouble() <= 1.0))
      return emitOpError() << "acceptance_rate must lie in [0, 1], got "
                           << detail::formatShortestDouble(
                                  rate.getValueAsDouble());
  if (auto draft = dyn_cast<DraftProposerAttr>(getProposer());
      draft && !draft.getMinConfidence().isZero()) {
    if (getTreeAttr())
      return emitOpError() << "a draft's tree has a fixed shape; "
                              "min_confidence stops chains of proposals";
    if (!isa<GreedyAttr>(getRule()))
      return emitOpError()
             << "min_confidence stops a draft's proposals early under greedy "
                "verification only";
  }
  if (TreeAttr tree = getTreeAttr()) {
    if (isa<NoProposerAttr>(getProposer()))
      return emitOpError() << "a tree of candidates needs a proposer; "
                              "#spec.none proposes nothing";
    if (auto mtp = dyn_cast<MTPProposerAttr>(getProposer());
        mtp && tree.getMaxDepth() > static_cast<int64_t>(mtp.getHeads().size()))
      return emitOpError() << "the tree is " << tree.getMaxDepth()
                           << " candidates deep but the proposer has "
                           << mtp.getHeads().size() << " heads";
    // A draft runs one forward per depth: gamma is the tree's depth.
    if (auto draft = dyn_cast<DraftProposerAttr>(getProposer());
        draft && tree.getMaxDepth() != draft.getGamma())
      return emitOpError() << "the tree is " << tree.getMaxDepth()
                           << " candidates deep but the draft proposes gamma "
                              "= "
                           << draft.getGamma()
                           << " per round; a draft's tree is gamma deep";
  }
  return success();
}

LogicalResult
DecoderOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *op = getOperation();
  FailureOr<ModelFunction> target = lookupModelFunction(
      op, symbolTable, getTargetAttr(), "target", {FunctionRole::Target});
  if (failed(target))
    return failure();
  FailureOr<RankedTensorType> targetLogits =
      verifyModelSignature(op, *target, "target", /*takesTokenIds=*/true);
  if (failed(targetLogits))
    return failure();

  ProposerAttrInterface proposer = getProposer();
  SmallVector<RoleAttr> roles;
  for (auto [index, ref] : llvm::enumerate(proposer.getProposerFunctions())) {
    std::string what = proposer.describeFunction(index);
    FailureOr<ModelFunction> function = lookupModelFunction(
        op, symbolTable, ref, what, proposer.getAllowedRoles());
    if (failed(function))
      return failure();
    FailureOr<RankedTensorType> logits = verifyModelSignature(
        op, *function, what, proposer.takesTokenIds());
    // A cross-tokenizer draft's tokens are translated, not shared.
    bool translated = op->hasAttr(SpecDialect::kCrossTokenizerAttrName);
    if (failed(logits) ||
        (!translated &&
         failed(verifySameVocabulary(op, *target, *targetLogits, *function,
                                     *logits, what))))
      return failure();
    roles.push_back(function->role);
  }
  if (getTreeAttr() && roles.front().getKind() == FunctionRole::MTPModule)
    return emitOpError() << "trees of candidates are verified for Medusa "
                            "heads and drafts; MTP modules propose one chain";
  return proposer.verifyRoles(op, roles);
}

//===----------------------------------------------------------------------===//
// Step operations
//===----------------------------------------------------------------------===//

LogicalResult ProposeOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  if (logits.getRank() < 1)
    return emitOpError("logits must have a vocabulary dimension");
  auto tokens = dyn_cast<RankedTensorType>(getTokens().getType());
  if (!tokens ||
      failed(verifyCompatibleShape(tokens.getShape(),
                                   logits.getShape().drop_back())))
    return emitOpError() << "tokens must have the logits' shape without the "
                            "vocabulary dimension ("
                         << logits << "), got " << getTokens().getType();
  if (getProbs().getType() != logits)
    return emitOpError() << "probs must have the logits' type " << logits
                         << ", got " << getProbs().getType();
  if (getRule().isSampling() && !getKey())
    return emitOpError("sampling with #spec.rejection needs a generator key");
  return success();
}

CallInterfaceCallable VerifyOp::getCallableForCallee() {
  return getCalleeAttr();
}

void VerifyOp::setCalleeFromCallable(CallInterfaceCallable callee) {
  setCalleeAttr(cast<FlatSymbolRefAttr>(cast<SymbolRefAttr>(callee)));
}

Operation::operand_range VerifyOp::getArgOperands() { return getInputs(); }

MutableOperandRange VerifyOp::getArgOperandsMutable() {
  return getInputsMutable();
}

LogicalResult VerifyOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ModelFunction> target =
      lookupModelFunction(getOperation(), symbolTable, getCalleeAttr(),
                          "callee", {FunctionRole::Target});
  if (failed(target))
    return failure();
  auto fnType = cast<FunctionType>(target->op.getFunctionType());
  if (!llvm::equal(fnType.getInputs(), getInputs().getTypes()) ||
      !llvm::equal(fnType.getResults(), getOutputs().getTypes()))
    return emitOpError() << "type " << FunctionType::get(getContext(),
                                                         getInputs().getTypes(),
                                                         getOutputs().getTypes())
                         << " does not match the signature " << fnType
                         << " of target " << getCalleeAttr();
  return success();
}

LogicalResult AcceptOp::verify() {
  auto proposals = cast<RankedTensorType>(getProposals().getType());
  auto logits = cast<RankedTensorType>(getTargetLogits().getType());
  if (proposals.getRank() != 1)
    return emitOpError() << "proposals must be a 1-D tensor of gamma tokens, "
                            "got "
                         << proposals;
  if (logits.getRank() != 2)
    return emitOpError() << "target logits must be 2-D (gamma + 1 positions x "
                            "vocabulary), got "
                         << logits;
  if (!proposals.isDynamicDim(0) && !logits.isDynamicDim(0) &&
      logits.getDimSize(0) != proposals.getDimSize(0) + 1)
    return emitOpError() << "target logits must have one row more than there "
                            "are proposals ("
                         << proposals.getDimSize(0) + 1 << "), got "
                         << logits.getDimSize(0);
  bool sampling = getRule().isSampling();
  if (!sampling && (getProbs() || getKey()))
    return emitOpError("#spec.greedy verification takes neither proposal "
                       "probabilities nor a generator key");
  if (sampling && (!getProbs() || !getKey()))
    return emitOpError("#spec.rejection verification needs the proposal "
                       "probabilities (probs) and a generator key (key)");
  if (Value probs = getProbs()) {
    auto probsType = cast<RankedTensorType>(probs.getType());
    if (probsType.getRank() != 2 ||
        failed(verifyCompatibleShape(probsType.getShape(),
                                     {proposals.getDimSize(0),
                                      logits.getDimSize(1)})) ||
        probsType.getElementType() != logits.getElementType())
      return emitOpError() << "proposal probabilities must be gamma x "
                              "vocabulary with the logits' element type, got "
                           << probsType;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// KV caches
//===----------------------------------------------------------------------===//

/// Ops on one sequence's cache refuse a cache of slots.
static LogicalResult verifyOneSequence(Operation *op, KVCacheType cache) {
  if (cache.hasSlots())
    return op->emitOpError()
           << "takes one sequence's cache, got one of " << cache.getNumSlots()
           << " slots (read and write those with spec.cache.read_slots and "
              "spec.cache.write_slots)";
  return success();
}

/// Checks that `tensor` holds keys or values for `cache`: layers x kv_heads x
/// positions x head_dim, with the cache's element type and at most its
/// capacity of positions.
static LogicalResult verifyCacheSlice(Operation *op, KVCacheType cache,
                                      RankedTensorType tensor,
                                      StringRef what) {
  if (failed(verifyOneSequence(op, cache)))
    return failure();
  if (tensor.getRank() != 4)
    return op->emitOpError()
           << what << " must be layers x kv_heads x positions x head_dim (rank "
           << "4), got " << tensor;
  if (tensor.getElementType() != cache.getElementType())
    return op->emitOpError() << what << " element type "
                             << tensor.getElementType()
                             << " does not match the cache's "
                             << cache.getElementType();
  for (unsigned dim : {0u, 1u, 3u})
    if (!tensor.isDynamicDim(dim) &&
        tensor.getDimSize(dim) != cache.getShape()[dim])
      return op->emitOpError()
             << what << " dimension " << dim << " is "
             << tensor.getDimSize(dim) << " but the cache's is "
             << cache.getShape()[dim];
  if (!tensor.isDynamicDim(2) && tensor.getDimSize(2) > cache.getCapacity())
    return op->emitOpError() << what << " hold " << tensor.getDimSize(2)
                             << " positions, more than the cache's capacity "
                             << cache.getCapacity();
  return success();
}

LogicalResult CacheAppendOp::verify() {
  return verifyCacheSlice(getOperation(), getCache().getType(),
                          getKeys().getType(), "keys");
}

LogicalResult CacheViewOp::verify() {
  return verifyCacheSlice(getOperation(), getCache().getType(),
                          getKeys().getType(), "keys");
}

LogicalResult CacheCommitOp::verify() {
  APInt count;
  if (!matchPattern(getCount(), m_ConstantInt(&count)))
    return success();
  if (count.isNegative())
    return emitOpError() << "count must be non-negative, got "
                         << count.getSExtValue();
  if (count.getSExtValue() > getCache().getType().getCapacity())
    return emitOpError() << "count " << count.getSExtValue()
                         << " exceeds the cache's capacity "
                         << getCache().getType().getCapacity();
  return success();
}

/// Checks that `tensor` holds one layer's entries for `cache`: batch (1) x
/// kv_heads x positions x head_dim with the cache's element type, and that
/// `layer` names one of its layers.
static LogicalResult verifyLayerSlice(Operation *op, KVCacheType cache,
                                      RankedTensorType tensor, int64_t layer,
                                      StringRef what, bool slots = false) {
  if (!slots && failed(verifyOneSequence(op, cache)))
    return failure();
  if (layer < 0 || layer >= cache.getNumLayers())
    return op->emitOpError() << "layer " << layer << " is out of range: the "
                             << "cache has " << cache.getNumLayers()
                             << " layers";
  if (tensor.getRank() != 4)
    return op->emitOpError() << what
                             << " must be batch x kv_heads x positions x "
                                "head_dim (rank 4), got "
                             << tensor;
  if (tensor.getElementType() != cache.getElementType())
    return op->emitOpError() << what << " element type "
                             << tensor.getElementType()
                             << " does not match the cache's "
                             << cache.getElementType();
  if (!slots && !tensor.isDynamicDim(0) && tensor.getDimSize(0) != 1)
    return op->emitOpError() << "caches hold batch 1; " << what
                             << " has batch " << tensor.getDimSize(0);
  if (!tensor.isDynamicDim(1) && tensor.getDimSize(1) != cache.getNumKVHeads())
    return op->emitOpError() << what << " has " << tensor.getDimSize(1)
                             << " KV heads but the cache has "
                             << cache.getNumKVHeads();
  if (!tensor.isDynamicDim(3) && tensor.getDimSize(3) != cache.getHeadDim())
    return op->emitOpError() << what << " has head dimension "
                             << tensor.getDimSize(3) << " but the cache has "
                             << cache.getHeadDim();
  if (!tensor.isDynamicDim(2) && tensor.getDimSize(2) > cache.getCapacity())
    return op->emitOpError() << what << " hold " << tensor.getDimSize(2)
                             << " positions, more than the cache's capacity "
                             << cache.getCapacity();
  return success();
}

LogicalResult CacheWriteOp::verify() {
  return verifyLayerSlice(getOperation(), getCache().getType(),
                          getNewEntries().getType(), getLayer(), "new entries");
}

LogicalResult CacheReadOp::verify() {
  return verifyLayerSlice(getOperation(), getCache().getType(),
                          getEntries().getType(), getLayer(), "entries");
}

/// The batched ops take a cache of slots and entries of as many rows as the
/// batch has sequences.
static LogicalResult verifySlots(Operation *op, KVCacheType cache) {
  if (!cache.hasSlots())
    return op->emitOpError() << "takes a cache of slots (layers x slots x "
                                "kv_heads x capacity x head_dim), got "
                             << cache;
  return success();
}

LogicalResult CacheWriteSlotsOp::verify() {
  auto cache = getCache().getType();
  if (failed(verifySlots(getOperation(), cache)) ||
      failed(verifyLayerSlice(getOperation(), cache, getNewEntries().getType(),
                              getLayer(), "new entries", /*slots=*/true)))
    return failure();
  int64_t rows = getNewEntries().getType().getDimSize(0);
  int64_t lengths = getPastLengths().getType().getDimSize(0);
  if (!ShapedType::isDynamic(rows) && !ShapedType::isDynamic(lengths) &&
      rows != lengths)
    return emitOpError() << "new entries have " << rows
                         << " sequences but there are " << lengths
                         << " past lengths";
  if (!ShapedType::isDynamic(rows) && rows > cache.getNumSlots())
    return emitOpError() << "new entries have " << rows
                         << " sequences, more than the cache's "
                         << cache.getNumSlots() << " slots";
  return success();
}

LogicalResult CacheReadSlotsOp::verify() {
  auto cache = getCache().getType();
  if (failed(verifySlots(getOperation(), cache)) ||
      failed(verifyLayerSlice(getOperation(), cache, getEntries().getType(),
                              getLayer(), "entries", /*slots=*/true)))
    return failure();
  int64_t rows = getEntries().getType().getDimSize(0);
  if (!ShapedType::isDynamic(rows) && rows > cache.getNumSlots())
    return emitOpError() << "entries have " << rows
                         << " sequences, more than the cache's "
                         << cache.getNumSlots() << " slots";
  return success();
}
