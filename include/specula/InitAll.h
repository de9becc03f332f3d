//===- InitAll.h - register Specula with an MLIR tool or pipeline -*- C++ -*-//
//
// The entry points for using Specula as a library: add its dialect to a
// registry and its passes to the global pass registry, as mlir-opt-like tools
// and the Specula plugin do.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_INITALL_H
#define SPECULA_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace specula {

/// Adds the spec dialect and the upstream dialects its passes create, and
/// the tensor slices' subset models bufferization analyses quickly; call it
/// before mlir::registerAllDialects (an op keeps the first model attached).
void registerSpeculaDialects(mlir::DialectRegistry &registry);

/// Registers every Specula pass and pipeline (spec-to-cpu,
/// spec-graph-to-llvm) for textual use.
void registerSpeculaPasses();

} // namespace specula

#endif // SPECULA_INITALL_H
