//===- FuseParallelLoops.h - one kernel for adjacent loop nests -*- C++ -*-===//
//
// On the GPU each outermost scf.parallel nest becomes a kernel launch, and a
// decode step's launches cost more than its arithmetic. Adjacent nests over
// the same iteration space (a reduction's initializing fill and the
// reduction, an elementwise op and the next one, the key and value cache
// writes) can be one kernel when each iteration of the second reads only
// what the same iteration of the first wrote; adjacent nests that touch no
// common buffer (a layer's projections) can be one kernel over both their
// iterations.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_GPU_FUSEPARALLELLOOPS_H
#define SPECULA_PASSES_GPU_FUSEPARALLELLOOPS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace specula {

/// Fuses chains of adjacent outermost scf.parallel loops under `root` into
/// one loop each (the first's body prepended to the second's) where
/// that is legal, after dropping their dimensions of one iteration (where
/// others remain):
/// - the loops have no nested scf.parallel and equal bounds and steps
///   (equal constants, the same value, or the dimension of the same size);
/// - the ops between them have no regions and allocate, or touch no buffer
///   that may alias one the first loop writes, and write none it reads;
/// - every pair of accesses, one by each loop with at least one a write,
///   to buffers that may alias is a memref.load or memref.store of the same
///   view at the same indices (or equal constants), those indices using
///   every loop variable directly (so the same iteration touches the
///   element in both loops and no other iteration does), or of subviews of
///   one buffer whose static ranges in some dimension do not overlap;
/// - the loops' other memory effects are reads or writes of known buffers.
/// Returns the number of loops fused away.
unsigned fuseParallelLoops(mlir::Operation *root);

/// Merges chains of adjacent outermost scf.parallel loops under `root` that
/// may run at once into one loop each, over the concatenation of their
/// iteration spaces (row-major, one dimension): an iteration runs the body
/// of the loop its index falls in. Legal where no loop of a chain writes a
/// buffer that may alias one another touches (subviews of one buffer whose
/// static ranges in some dimension do not overlap excepted), and the ops
/// between them may move past the earlier ones (as for fusion); run after
/// fuseParallelLoops, whose loops must keep their own dimensions. Returns the
/// number of loops merged away.
unsigned mergeIndependentLoops(mlir::Operation *root);

/// Whether buffers `a` and `b` may share memory, seen through their views: a
/// fresh allocation shares none with any other buffer, distinct globals
/// share none; anything else (function arguments) may.
bool mayShareMemory(mlir::Value a, mlir::Value b);

} // namespace specula

#endif // SPECULA_PASSES_GPU_FUSEPARALLELLOOPS_H
