//===- IndexingMaps.h - indexing maps through layout ops --------*- C++ -*-===//

#ifndef SPECULA_PASSES_COMMON_INDEXINGMAPS_H
#define SPECULA_PASSES_COMMON_INDEXINGMAPS_H

#include "mlir/IR/AffineMap.h"

namespace specula {

/// `map` of a linalg.transpose's result as a map of its input: result
/// dimension i is input dimension permutation[i].
inline mlir::AffineMap throughTranspose(mlir::AffineMap map,
                                        llvm::ArrayRef<int64_t> permutation) {
  llvm::SmallVector<mlir::AffineExpr> exprs(map.getNumResults());
  for (auto [i, dim] : llvm::enumerate(permutation))
    exprs[dim] = map.getResult(i);
  return mlir::AffineMap::get(map.getNumDims(), 0, exprs, map.getContext());
}

} // namespace specula

#endif // SPECULA_PASSES_COMMON_INDEXINGMAPS_H
