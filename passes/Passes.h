//===- Passes.h - spec dialect passes ---------------------------*- C++ -*-===//

#ifndef SPECULA_PASSES_PASSES_H
#define SPECULA_PASSES_PASSES_H

#include "passes/Defaults.h"

#include "mlir/Pass/Pass.h"

namespace specula {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace specula

#endif // SPECULA_PASSES_PASSES_H
