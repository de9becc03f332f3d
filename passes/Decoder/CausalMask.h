//===- CausalMask.h - the causal mask a model computes ----------*- C++ -*-===//
//
// spec-tree-attention makes a tree mask of a model's causal mask and
// spec-kv-cache-inplace (with slots) one per sequence of a batch: both find
// it as torch exports it.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_DECODER_CAUSALMASK_H
#define SPECULA_PASSES_DECODER_CAUSALMASK_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace specula {

/// Whether `generic` computes `future[q][k] = key_pos[k] > query_pos[q]` as
/// a `queries x keys` i1 tensor: one comparison of an operand that varies
/// with the keys (loop dimension 1) against one that varies with the
/// queries (dimension 0).
bool isCausalMask(mlir::linalg::GenericOp generic);

/// Whether every use of `mask` (but its shape's) is `Where(mask, -inf,
/// scores)`, and there is one.
bool masksScores(mlir::Value mask);

/// The causal masks of `func` that mask attention scores.
llvm::SmallVector<mlir::linalg::GenericOp>
findCausalMasks(mlir::Operation *func);

} // namespace specula

#endif // SPECULA_PASSES_DECODER_CAUSALMASK_H
