//===- SpecOps.h - spec dialect operations ----------------------*- C++ -*-===//

#ifndef SPECULA_DIALECT_SPEC_SPECOPS_H
#define SPECULA_DIALECT_SPEC_SPECOPS_H

#include "dialects/spec/SpecDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/spec/SpecOps.h.inc"

#endif // SPECULA_DIALECT_SPEC_SPECOPS_H
