//===- SliceSubsets.h - fast subset models of tensor slices -----*- C++ -*-===//

#ifndef SPECULA_PASSES_COMMON_SLICESUBSETS_H
#define SPECULA_PASSES_COMMON_SLICESUBSETS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace specula {

/// Attaches to tensor.extract_slice and tensor.insert_slice upstream's subset
/// models with a syntactic fast path (identical offsets, sizes and strides),
/// which makes one-shot bufferization's analysis of blocked contractions
/// cheap. An op keeps the first model attached to it, so this must reach a
/// context before `mlir::registerAllDialects`' (registerSpeculaDialects adds
/// it; a registry that adds upstream's first gets upstream's models, slower
/// but with the same results).
void registerSliceSubsetModels(mlir::DialectRegistry &registry);

} // namespace specula

#endif // SPECULA_PASSES_COMMON_SLICESUBSETS_H
