//===- SpecDialect.cpp - spec dialect registration and attribute checks ---===//

#include "dialects/spec/SpecDialect.h"
#include "dialects/spec/SpecOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

using namespace mlir;
using namespace specula::spec;

#include "dialects/spec/SpecDialect.cpp.inc"

void SpecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/spec/SpecOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}

/// Checks the discardable attributes `spec.role`, `spec.config` and
/// `spec.fused_from`: they describe model functions, so they belong on
/// function-like operations.
LogicalResult SpecDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kColumnTilesAttrName || name == kRowTilesAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<LoopLikeOpInterface>(op))
      return op->emitError() << "'" << name << "' is a unit attribute of loops";
    return success();
  }
  if (name == kSlotCacheShapeAttrName) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!shape || shape.size() != 6 ||
        llvm::any_of(shape.asArrayRef(), [](int64_t d) { return d <= 0; }) ||
        !isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << name
                             << "' is six positive sizes on a function";
    return success();
  }
  if (name == kCrossTokenizerAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<DecoderOp>(op))
      return op->emitError() << "'" << name
                             << "' is a unit attribute of spec.decoder";
    return success();
  }
  if (name == kSlotTargetAttrName || name == kSlotDraftAttrName) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()) || !isa<DecoderOp>(op))
      return op->emitError() << "'" << name
                             << "' names a function (@symbol) on a "
                                "spec.decoder";
    return success();
  }
  if (name != kRoleAttrName && name != kConfigAttrName &&
      name != kFusedFromAttrName && name != kContextCapacityAttrName &&
      name != kSlotsAttrName)
    return op->emitError() << "unknown spec dialect attribute '" << name
                           << "'; expected '" << kRoleAttrName << "', '"
                           << kConfigAttrName << "', '" << kFusedFromAttrName
                           << "', '" << kContextCapacityAttrName << "', '"
                           << kSlotsAttrName << "', '" << kSlotTargetAttrName
                           << "', '" << kSlotDraftAttrName << "', '"
                           << kCrossTokenizerAttrName << "', '"
                           << kSlotCacheShapeAttrName << "', '"
                           << kColumnTilesAttrName << "' or '"
                           << kRowTilesAttrName << "'";
  if (!isa<FunctionOpInterface>(op))
    return op->emitError() << "'" << name
                           << "' is only valid on function operations";
  if (name == kRoleAttrName && !isa<RoleAttr>(attr.getValue()))
    return op->emitError() << "'" << name
                           << "' must be a #spec.role attribute, got "
                           << attr.getValue();
  if (name == kConfigAttrName && !isa<ModelConfigAttr>(attr.getValue()))
    return op->emitError() << "'" << name
                           << "' must be a #spec.model_config attribute, got "
                           << attr.getValue();
  if (name == kContextCapacityAttrName || name == kSlotsAttrName) {
    auto capacity = dyn_cast<IntegerAttr>(attr.getValue());
    if (!capacity || capacity.getInt() <= 0)
      return op->emitError() << "'" << name
                             << "' must be a positive integer, got "
                             << attr.getValue();
  }
  if (name == kFusedFromAttrName) {
    auto source = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
    if (!source)
      return op->emitError() << "'" << name
                             << "' must name a function (@symbol), got "
                             << attr.getValue();
    Operation *table = SymbolTable::getNearestSymbolTable(op->getParentOp());
    auto function = dyn_cast_or_null<FunctionOpInterface>(
        table ? SymbolTable::lookupSymbolIn(table, source) : nullptr);
    auto role = function ? function->getAttrOfType<RoleAttr>(kRoleAttrName)
                         : RoleAttr();
    if (!role || role.getKind() != FunctionRole::Target)
      return op->emitError() << "'" << name << "' names " << source
                             << ", which is not a function of role target";
  }
  return success();
}

/// spec.io on a function's arguments and results must be a #spec.io;
/// spec.name (names of decode-loop arguments) a string.
static LogicalResult verifyValueAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == SpecDialect::kIOAttrName) {
    if (!isa<IOAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' must be a #spec.io attribute, got "
                             << attr.getValue();
    return success();
  }
  if (name == "spec.name") {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'spec.name' must be a string";
    return success();
  }
  return op->emitError() << "unknown spec dialect argument or result "
                            "attribute '"
                         << name << "'; expected '" << SpecDialect::kIOAttrName
                         << "' or 'spec.name'";
}

LogicalResult SpecDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned,
                                                    NamedAttribute attr) {
  return verifyValueAttribute(op, attr);
}

LogicalResult SpecDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned, unsigned,
                                                       NamedAttribute attr) {
  return verifyValueAttribute(op, attr);
}

IOAttr specula::spec::getArgumentIO(FunctionOpInterface func, unsigned i) {
  return func.getArgAttrOfType<IOAttr>(i, SpecDialect::kIOAttrName);
}

IOAttr specula::spec::getResultIO(FunctionOpInterface func, unsigned i) {
  return func.getResultAttrOfType<IOAttr>(i, SpecDialect::kIOAttrName);
}

static bool matches(IOAttr io, IOKind kind, std::optional<int64_t> index) {
  return io && io.getKind() == kind && (!index || io.getIndex() == index);
}

std::optional<unsigned> specula::spec::findArgument(
    FunctionOpInterface func, IOKind kind, std::optional<int64_t> index) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (matches(getArgumentIO(func, i), kind, index))
      return i;
  return std::nullopt;
}

std::optional<unsigned> specula::spec::findResult(FunctionOpInterface func,
                                                  IOKind kind,
                                                  std::optional<int64_t> index) {
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (matches(getResultIO(func, i), kind, index))
      return i;
  return std::nullopt;
}

void specula::spec::setArgumentIO(FunctionOpInterface func, unsigned i,
                                  IOKind kind, std::optional<int64_t> index) {
  func.setArgAttr(i, SpecDialect::kIOAttrName,
                  IOAttr::get(func.getContext(), kind, index));
}

void specula::spec::setResultIO(FunctionOpInterface func, unsigned i,
                                IOKind kind, std::optional<int64_t> index) {
  func.setResultAttr(i, SpecDialect::kIOAttrName,
                     IOAttr::get(func.getContext(), kind, index));
}
