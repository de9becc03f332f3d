//===- WeightContraction.h - contractions whose rows share an operand -*- C++
//-*-===//
//
// A forward multiplies its rows by weight matrices, and its queries by the
// keys and values of each attention head: `out[outer..., rows, n] +=
// a[outer..., rows, k] * w[outer..., k, n]` with `w` the same for every row.
// Both devices' contraction schedules (spec-block-contractions on the CPU,
// spec-gpu-contractions on the GPU) read each element of `w` once for many
// rows; this is how they recognize such ops.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_COMMON_WEIGHTCONTRACTION_H
#define SPECULA_PASSES_COMMON_WEIGHTCONTRACTION_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"

#include <optional>

namespace specula {

/// The loops of a weight contraction by role.
struct ContractionDims {
  llvm::SmallVector<unsigned>
      outer;        // batch loops and all row loops but the last
  unsigned rows;    // the innermost row loop
  unsigned columns; // n: the output's innermost dimension
  unsigned depth;   // k: the reduction
  unsigned weight;  // the input that is `w` (0 or 1)
};

/// The roles of `op`'s loops if it is an f32 contraction whose second
/// operand does not depend on the rows: one reduction k, a multiply-accumulate
/// body, an output indexed by its innermost loop n, `w` indexed by k, n and
/// loops shared with `a`, and at least one row loop (indexing `a` and the
/// output, not `w`).
std::optional<ContractionDims>
matchWeightContraction(mlir::linalg::LinalgOp op);

} // namespace specula

#endif // SPECULA_PASSES_COMMON_WEIGHTCONTRACTION_H
