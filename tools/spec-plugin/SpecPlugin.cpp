//===- SpecPlugin.cpp - Specula as an mlir-opt dialect and pass plugin ----===//

#include "specula/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Specula", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            specula::registerSpeculaDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Specula", LLVM_VERSION_STRING,
          []() { specula::registerSpeculaPasses(); }};
}
