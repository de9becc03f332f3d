//===- Passes.h - passes both devices' code generation shares -*- C++ -*-===//

#ifndef SPECULA_PASSES_COMMON_PASSES_H
#define SPECULA_PASSES_COMMON_PASSES_H

#include "specula/Defaults.h"

#include "mlir/Pass/Pass.h"

namespace specula {

#define GEN_PASS_DECL
#include "passes/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Common/Passes.h.inc"

} // namespace specula

#endif // SPECULA_PASSES_COMMON_PASSES_H
