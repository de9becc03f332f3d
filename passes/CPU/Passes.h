//===- Passes.h - CPU code generation -*- C++ -*-===//

#ifndef SPECULA_PASSES_CPU_PASSES_H
#define SPECULA_PASSES_CPU_PASSES_H

#include "specula/Defaults.h"

#include "mlir/Pass/Pass.h"

namespace specula {

#define GEN_PASS_DECL
#include "passes/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/CPU/Passes.h.inc"

} // namespace specula

#endif // SPECULA_PASSES_CPU_PASSES_H
