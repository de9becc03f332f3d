//===- InplaceModel.h - bundled models as the loops call them -*- C++ -*-===//
//
// Shared by the unit tests that run a bundled model in the in-place cache
// form (spec-kv-cache-inplace, spec-lower-steps), compiled with the CPU
// pipeline by GraphExecutor.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_TEST_UNIT_PASSES_INPLACEMODEL_H
#define SPECULA_TEST_UNIT_PASSES_INPLACEMODEL_H

#include "passes/Decoder/Passes.h"
#include "specula/InitAll.h"
#include "specula/ONNXImport.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>

namespace specula::test_models {

/// Loads every dialect the import and the pipeline need into `context`.
inline void loadDialects(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  registerSpeculaDialects(registry);
  mlir::registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

/// Imports models/`file` into `module` as function `name` and gives it a
/// cache of `capacity` positions written in place: the function then takes
/// (token ids, positions, cache, past length) and returns its outputs and
/// the cache, ready for GraphExecutor::compile. With `slots`, a cache of
/// that many sequences, and (first slot, past lengths) for the past length.
inline mlir::LogicalResult importInplaceModel(mlir::ModuleOp module,
                                              llvm::StringRef file,
                                              llvm::StringRef name,
                                              int64_t capacity,
                                              int64_t slots = 0) {
  std::string path = std::string(SPECULA_MODELS_DIR) + "/" + file.str();
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return mlir::emitError(module.getLoc()) << "cannot read " << path;
  ONNXImportOptions options;
  options.functionName = name.str();
  if (mlir::failed(importONNX(module, (*buffer)->getBuffer(), path, options)))
    return mlir::failure();
  mlir::PassManager pm(module.getContext());
  SpecKVCacheInplaceOptions cache;
  cache.capacity = capacity;
  cache.slots = slots;
  pm.addPass(createSpecKVCacheInplace(cache));
  pm.addPass(createSpecLowerSteps());
  return pm.run(module);
}

} // namespace specula::test_models

#endif // SPECULA_TEST_UNIT_PASSES_INPLACEMODEL_H
