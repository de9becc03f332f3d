//===- ONNXImportFuzzer.cpp - libFuzzer target: the ONNX importer ---------===//
//
// Feeds arbitrary bytes to specula::importONNX, as spec-translate, specc and
// spec-run-graph do with a model file: binary protobuf or textual ONNX. Any
// input may be refused with an error; none may crash, hang, or produce IR
// that does not verify (the importer reports that as "an importer bug", which
// this target turns into a finding).
//
//===----------------------------------------------------------------------===//

#include "specula/ONNXImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    return c;
  }();
  std::string bugReport;
  mlir::ScopedDiagnosticHandler handler(
      context, [&](mlir::Diagnostic &diagnostic) {
        // The importer's own verdict (not text of the input it quotes).
        std::string message = diagnostic.str();
        if (message.rfind("the imported IR does not verify", 0) == 0)
          bugReport = message;
        return mlir::success();
      });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(context));
  specula::ONNXImportOptions options;
  // Small blobs stay inline: both attribute kinds get exercised.
  options.maxInlineElements = 16;
  (void)specula::importONNX(
      *module,
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", options);
  if (!bugReport.empty()) {
    std::fprintf(stderr, "importer bug: %s\n", bugReport.c_str());
    std::abort();
  }
  return 0;
}
