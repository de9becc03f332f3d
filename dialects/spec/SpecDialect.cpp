//===- SpecDialect.cpp - spec dialect registration and attribute checks ---===//

#include "dialects/spec/SpecDialect.h"
#include "dialects/spec/SpecOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

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
  if (name != kRoleAttrName && name != kConfigAttrName &&
      name != kFusedFromAttrName && name != kContextCapacityAttrName)
    return op->emitError() << "unknown spec dialect attribute '" << name
                           << "'; expected '" << kRoleAttrName << "', '"
                           << kConfigAttrName << "', '" << kFusedFromAttrName
                           << "' or '" << kContextCapacityAttrName << "'";
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
  if (name == kContextCapacityAttrName) {
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
