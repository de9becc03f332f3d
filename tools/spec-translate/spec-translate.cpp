//===- spec-translate.cpp - translate models into and out of MLIR ---------===//
//
// mlir-translate with Specula's translations, notably --import-onnx.
//
//===----------------------------------------------------------------------===//

#include "specula/ONNXImport.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  specula::registerONNXImportTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Specula translation driver\n"));
}
