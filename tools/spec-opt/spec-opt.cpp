//===- spec-opt.cpp - run spec dialect passes on MLIR files ---------------===//
//
// mlir-opt with the spec dialect and Specula's passes, plus every upstream
// dialect and pass, so that model functions in any upstream dialect and the
// lowering pipelines can be tested from lit.
//
//===----------------------------------------------------------------------===//

#include "specula/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  specula::registerSpeculaPasses();

  mlir::DialectRegistry registry;
  specula::registerSpeculaDialects(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary (spec-to-cuda) translates kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Specula optimizer driver\n", registry));
}
