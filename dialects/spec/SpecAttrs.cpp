//===- SpecAttrs.cpp - spec dialect attribute verifiers -------------------===//

#include "dialects/spec/SpecDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace specula::spec;

std::string specula::spec::detail::formatShortestDouble(double value) {
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text(buffer);
  // Keep it a float literal: `1.0`, not `1`.
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

void specula::spec::detail::printShortestDouble(AsmPrinter &printer,
                                                const APFloat &value) {
  double number = value.convertToDouble();
  if (!std::isfinite(number))
    return printer.printFloat(value);
  printer << formatShortestDouble(number);
}

#include "dialects/spec/SpecEnums.cpp.inc"
#include "dialects/spec/SpecAttrInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/spec/SpecAttrs.cpp.inc"

void SpecDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/spec/SpecAttrs.cpp.inc"
      >();
}

LogicalResult IOAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             IOKind kind, std::optional<int64_t> index) {
  bool layered = kind == IOKind::PastKey || kind == IOKind::PastValue ||
                 kind == IOKind::PresentKey || kind == IOKind::PresentValue;
  bool indexed = layered || kind == IOKind::HeadLogits;
  if (indexed && !index)
    return emitError() << "'" << stringifyIOKind(kind) << "' requires an index ("
                       << (layered ? "the layer" : "the head's depth") << ")";
  if (!indexed && index)
    return emitError() << "'" << stringifyIOKind(kind)
                       << "' does not take an index";
  if (index && *index < (layered ? 0 : 1))
    return emitError() << "the index of '" << stringifyIOKind(kind)
                       << "' must be at least " << (layered ? 0 : 1) << ", got "
                       << *index;
  return success();
}

LogicalResult RoleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               FunctionRole kind,
                               std::optional<int64_t> depth) {
  bool isHead =
      kind == FunctionRole::MedusaHead || kind == FunctionRole::MTPModule;
  if (isHead && !depth)
    return emitError() << "role '" << stringifyFunctionRole(kind)
                       << "' requires a depth (1 for the first proposal)";
  if (!isHead && depth)
    return emitError() << "role '" << stringifyFunctionRole(kind)
                       << "' does not take a depth";
  if (depth && *depth < 1)
    return emitError() << "depth must be at least 1, got " << *depth;
  return success();
}

LogicalResult
ModelConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t vocabSize, std::optional<int64_t> bos,
                        std::optional<int64_t> eos, std::optional<int64_t> pad,
                        std::optional<int64_t> maxContext,
                        StringAttr tokenizer) {
  if (vocabSize <= 0)
    return emitError() << "vocab_size must be positive, got " << vocabSize;
  for (auto [name, id] : {std::pair{"bos_token_id", bos},
                          std::pair{"eos_token_id", eos},
                          std::pair{"pad_token_id", pad}}) {
    if (id && (*id < 0 || *id >= vocabSize))
      return emitError() << name << " " << *id
                         << " is outside the vocabulary [0, " << vocabSize
                         << ")";
  }
  if (maxContext && *maxContext <= 0)
    return emitError() << "max_context must be positive, got " << *maxContext;
  if (tokenizer && tokenizer.getValue().empty())
    return emitError() << "tokenizer fingerprint must not be empty";
  return success();
}

LogicalResult
DraftProposerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          FlatSymbolRefAttr model, int64_t gamma,
                          APFloat minConfidenceValue) {
  double minConfidence = minConfidenceValue.convertToDouble();
  if (gamma < 1)
    return emitError() << "gamma (tokens proposed per step) must be at least "
                          "1, got "
                       << gamma;
  if (!(minConfidence >= 0.0 && minConfidence < 1.0))
    return emitError() << "min_confidence (a probability below which the "
                          "draft stops proposing) must lie in [0, 1), got "
                       << detail::formatShortestDouble(minConfidence);
  return success();
}

LogicalResult
MTPProposerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<FlatSymbolRefAttr> heads) {
  if (heads.empty())
    return emitError() << "an MTP proposer needs at least one head";
  return success();
}

LogicalResult TreeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> parents,
                               ArrayRef<int64_t> ranks) {
  if (parents.empty())
    return emitError() << "a tree needs at least one candidate";
  if (parents.size() != ranks.size())
    return emitError() << "a tree has one parent and one rank per candidate, "
                          "got "
                       << parents.size() << " parents and " << ranks.size()
                       << " ranks";
  for (auto [index, parent] : llvm::enumerate(parents)) {
    int64_t row = index + 1;
    if (parent < 0 || parent >= row)
      return emitError() << "candidate " << row << " has parent " << parent
                         << "; parents are the root (0) or earlier candidates";
    if (ranks[index] < 0)
      return emitError() << "candidate " << row << " has rank " << ranks[index]
                         << "; ranks count from 0";
    for (int64_t other = 0; other < static_cast<int64_t>(index); ++other)
      if (parents[other] == parent && ranks[other] == ranks[index])
        return emitError() << "candidates " << other + 1 << " and " << row
                           << " are the same token (rank " << ranks[index]
                           << " under parent " << parent << ")";
  }
  return success();
}

int64_t TreeAttr::getDepth(int64_t row) const {
  int64_t depth = 0;
  for (; row > 0; row = getParents()[row - 1])
    ++depth;
  return depth;
}

int64_t TreeAttr::getMaxDepth() const {
  int64_t deepest = 0;
  for (int64_t row = 1; row <= getNumNodes(); ++row)
    deepest = std::max(deepest, getDepth(row));
  return deepest;
}

bool TreeAttr::isAncestorOrSelf(int64_t ancestor, int64_t row) const {
  for (;; row = getParents()[row - 1]) {
    if (row == ancestor)
      return true;
    if (row == 0)
      return false;
  }
}

LogicalResult
RejectionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      APFloat temperatureValue, int64_t topK,
                      APFloat topPValue) {
  double temperature = temperatureValue.convertToDouble();
  double topP = topPValue.convertToDouble();
  if (!(temperature > 0.0) || !std::isfinite(temperature))
    return emitError() << "temperature must be positive and finite, got "
                       << detail::formatShortestDouble(temperature)
                       << " (use #spec.greedy for temperature 0)";
  if (topK < 0)
    return emitError() << "top_k must be non-negative (0 disables it), got "
                       << topK;
  if (!(topP > 0.0 && topP <= 1.0))
    return emitError() << "top_p must lie in (0, 1], got "
                       << detail::formatShortestDouble(topP);
  return success();
}

//===----------------------------------------------------------------------===//
// Proposers and verification rules
//===----------------------------------------------------------------------===//

int64_t DraftProposerAttr::getNumProposals() const { return getGamma(); }

SmallVector<FlatSymbolRefAttr> DraftProposerAttr::getProposerFunctions() const {
  return {getModel()};
}

SmallVector<FunctionRole> DraftProposerAttr::getAllowedRoles() const {
  return {FunctionRole::Draft};
}

bool DraftProposerAttr::takesTokenIds() const { return true; }

std::string DraftProposerAttr::describeFunction(unsigned) const {
  return "draft";
}

int64_t MTPProposerAttr::getNumProposals() const { return getHeads().size(); }

SmallVector<FlatSymbolRefAttr> MTPProposerAttr::getProposerFunctions() const {
  return llvm::to_vector(getHeads());
}

SmallVector<FunctionRole> MTPProposerAttr::getAllowedRoles() const {
  return {FunctionRole::MedusaHead, FunctionRole::MTPModule};
}

bool MTPProposerAttr::takesTokenIds() const { return false; }

std::string MTPProposerAttr::describeFunction(unsigned index) const {
  return "head " + std::to_string(index + 1);
}

int64_t NoProposerAttr::getNumProposals() const { return 0; }

SmallVector<FlatSymbolRefAttr> NoProposerAttr::getProposerFunctions() const {
  return {};
}

SmallVector<FunctionRole> NoProposerAttr::getAllowedRoles() const {
  return {};
}

bool NoProposerAttr::takesTokenIds() const { return true; }

std::string NoProposerAttr::describeFunction(unsigned) const { return ""; }

/// Heads of one kind, listed in depth order. An MTP module may also run again
/// at the next depth, on its own previous depth's hidden states (a chain, as
/// DeepSeek-V3 runs one module several times); a Medusa head cannot.
LogicalResult MTPProposerAttr::verifyRoles(Operation *decoder,
                                           ArrayRef<RoleAttr> roles) const {
  for (auto [index, role] : llvm::enumerate(roles)) {
    std::string what = describeFunction(index);
    FlatSymbolRefAttr ref = getHeads()[index];
    if (role.getKind() != roles.front().getKind())
      return decoder->emitOpError()
             << what << " " << ref << " is a '"
             << stringifyFunctionRole(role.getKind()) << "' but head 1 is a '"
             << stringifyFunctionRole(roles.front().getKind())
             << "'; one decoder uses one kind of head";
    bool chained = index > 0 && getHeads()[index - 1] == ref;
    if (chained && role.getKind() == FunctionRole::MTPModule)
      continue;
    if (llvm::is_contained(getHeads().take_front(index), ref))
      return decoder->emitOpError()
             << what << " " << ref
             << " is listed twice; only an MTP module can run again, at the "
                "depth after its own";
    int64_t depth = *role.getDepth();
    if (depth != static_cast<int64_t>(index) + 1)
      return decoder->emitOpError()
             << what << " " << ref << " has depth " << depth
             << "; heads must be listed in depth order 1.."
             << getHeads().size();
  }
  return success();
}

bool GreedyAttr::isSampling() const { return false; }

bool RejectionAttr::isSampling() const { return true; }
