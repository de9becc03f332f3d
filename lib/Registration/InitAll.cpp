//===- InitAll.cpp - register Specula dialects and passes -----------------===//

#include "specula/InitAll.h"

#include "dialects/spec/SpecDialect.h"
#include "passes/CPU/Passes.h"
#include "passes/Common/Passes.h"
#include "passes/Common/SliceSubsets.h"
#include "passes/Decoder/Passes.h"
#include "passes/GPU/Passes.h"
#include "specula/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

void specula::registerSpeculaDialects(mlir::DialectRegistry &registry) {
  registry.insert<spec::SpecDialect, mlir::func::FuncDialect>();
  registerSliceSubsetModels(registry);
}

void specula::registerSpeculaPasses() {
  registerDecoderPasses();
  registerCommonPasses();
  registerCPUPasses();
  registerGPUPasses();
  registerSpeculaPipelines();
}
