//===- Passes.h - decoder-level passes: composition, KV caches, the decode loop -*- C++ -*-===//

#ifndef SPECULA_PASSES_DECODER_PASSES_H
#define SPECULA_PASSES_DECODER_PASSES_H

#include "specula/Defaults.h"

#include "mlir/Pass/Pass.h"

namespace specula {

#define GEN_PASS_DECL
#include "passes/Decoder/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Decoder/Passes.h.inc"

} // namespace specula

#endif // SPECULA_PASSES_DECODER_PASSES_H
