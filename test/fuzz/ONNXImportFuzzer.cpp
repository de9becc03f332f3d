//===- ONNXImportFuzzer.cpp - libFuzzer target: the ONNX importer ---------===//
//
// Feeds arbitrary bytes to specula::importONNX, as spec-translate, specc and
// spec-run-graph do with a model file: binary protobuf or textual ONNX. Any
// input may be refused with an error; none may crash, hang, or produce IR
// that does not verify (the importer reports that as "an importer bug", which
// this target turns into a finding).
//
// Besides libFuzzer's byte mutations, a custom mutator edits parsed models
// (ONNXMutator.h: attributes, dimensions, constant values, edges, opsets),
// so that valid models with one value out of range are searched too.
//
//===----------------------------------------------------------------------===//

#include "ONNXMutator.h"
#include "specula/ONNXImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

/// One time in four, or when the input is no model, libFuzzer's own byte
/// mutations; else one to three structural ones, written as a binary model.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  if (rng() % 4 == 0 ||
      !specula::fuzz::parseModel(
          std::string(reinterpret_cast<const char *>(data), size), model))
    return LLVMFuzzerMutate(data, size, maxSize);
  for (int i = 0, n = 1 + rng() % 3; i < n; ++i)
    (void)specula::fuzz::mutateModel(model, rng);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

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
  // Half the inputs import as specc does, half-precision tensors as f32
  // (the last byte decides, so that a mutation can flip it).
  options.halfAsFloat = size > 0 && (data[size - 1] & 1);
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
