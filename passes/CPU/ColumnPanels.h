//===- ColumnPanels.h - constant weights as column panels ------*- C++ -*-===//
//
// spec-block-contractions' column tiles read a row-major `[K, N]` weight a
// tile of C columns at a time: C elements from each of K rows, N elements
// apart, a new page for every step of the reduction, which the hardware
// prefetchers do not follow (bench/weight_stream.c: 9 GB/s against 26 for
// the same reads from contiguous memory). packColumnPanels stores what
// the tiles of a constant weight read contiguously instead.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_CPU_COLUMNPANELS_H
#define SPECULA_PASSES_CPU_COLUMNPANELS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace specula {

/// For the column-tiled weight contractions `ops` (after the column loop is
/// tiled, before the rows are): a constant `[K, N]` weight, columns minor,
/// whose every use is a tile's `[K, C]` slice is replaced by a constant
/// `[N / C, K, C]` of panels, the loop's tile p reading panel p, and one
/// `[K, R]` constant per static remainder tile. The tiles compute what they
/// computed, in the same order. Constants read otherwise stay as they are.
/// Returns whether any constant was packed.
bool packColumnPanels(llvm::ArrayRef<mlir::linalg::LinalgOp> ops,
                      mlir::RewriterBase &rewriter);

} // namespace specula

#endif // SPECULA_PASSES_CPU_COLUMNPANELS_H
