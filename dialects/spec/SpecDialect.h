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

#define GET_ATTRDEF_CLASSES
#include "dialects/spec/SpecAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/spec/SpecTypes.h.inc"

#endif // SPECULA_DIALECT_SPEC_SPECDIALECT_H
