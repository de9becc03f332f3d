//===- Passes.h - GPU code generation -*- C++ -*-===//

#ifndef SPECULA_PASSES_GPU_PASSES_H
#define SPECULA_PASSES_GPU_PASSES_H

#include "specula/Defaults.h"

#include "mlir/Pass/Pass.h"

namespace specula {

#define GEN_PASS_DECL
#include "passes/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/GPU/Passes.h.inc"

} // namespace specula

#endif // SPECULA_PASSES_GPU_PASSES_H
