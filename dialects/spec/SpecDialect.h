//===- SpecDialect.h - spec dialect, attributes and types -------*- C++ -*-===//

#ifndef SPECULA_DIALECT_SPEC_SPECDIALECT_H
#define SPECULA_DIALECT_SPEC_SPECDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"

#include <string>

namespace specula::spec::detail {
/// The shortest decimal form of `value` that parses back to it.
std::string formatShortestDouble(double value);
/// Prints `value` (a double) as the shortest decimal that parses back to it,
/// e.g. `0.7` rather than `0.69999999999999996`.
void printShortestDouble(mlir::AsmPrinter &printer, const llvm::APFloat &value);
} // namespace specula::spec::detail

#include "dialects/spec/SpecDialect.h.inc"
#include "dialects/spec/SpecEnums.h.inc"

namespace specula::spec {
class RoleAttr;
} // namespace specula::spec
#include "dialects/spec/SpecAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/spec/SpecAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/spec/SpecTypes.h.inc"

namespace mlir {
class FunctionOpInterface;
} // namespace mlir

namespace specula::spec {
/// The #spec.io of argument or result `i` of `func`, or null.
IOAttr getArgumentIO(mlir::FunctionOpInterface func, unsigned i);
IOAttr getResultIO(mlir::FunctionOpInterface func, unsigned i);
/// The first argument or result of `func` that is `kind` (with `index`, when
/// given), if any.
std::optional<unsigned> findArgument(mlir::FunctionOpInterface func,
                                     IOKind kind,
                                     std::optional<int64_t> index = {});
std::optional<unsigned> findResult(mlir::FunctionOpInterface func, IOKind kind,
                                   std::optional<int64_t> index = {});
/// Marks argument or result `i` of `func` as `kind` (with `index`).
void setArgumentIO(mlir::FunctionOpInterface func, unsigned i, IOKind kind,
                   std::optional<int64_t> index = {});
void setResultIO(mlir::FunctionOpInterface func, unsigned i, IOKind kind,
                 std::optional<int64_t> index = {});
} // namespace specula::spec

#endif // SPECULA_DIALECT_SPEC_SPECDIALECT_H
