//===- ONNXImport.h - import ONNX models into MLIR --------------*- C++ -*-===//
//
// Imports an ONNX model (binary protobuf, or the textual syntax of
// onnx/defs/parser.h) as one func.func on tensors in upstream dialects
// (linalg, tensor, arith, math), tagged with spec.role / spec.config from the
// model's metadata_props.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_ONNXIMPORT_H
#define SPECULA_ONNXIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <string>
#include <vector>

namespace specula {

struct ONNXImportOptions {
  /// Name of the imported function.
  std::string functionName = "main";
  /// Run the ONNX checker first.
  bool runChecker = true;
  /// Run ONNX shape inference (values without a type cannot be imported).
  bool runShapeInference = true;
  /// Initializers with more elements become dense_resource blobs, which are
  /// printed once, out of line, in hex (never as megabytes of decimal text).
  int64_t maxInlineElements = 64;
  /// Refuse a model that breaks the model contract (README "Model
  /// contract"), naming every violation.
  bool requireContract = false;
  /// metadata_props entries for the keys the model lacks (what an export
  /// folder's config.json states; readExportFolderMetadata).
  std::map<std::string, std::string> defaultMetadata;
  /// Import float16 and bfloat16 tensors as f32 (exactly: every half value
  /// is an f32 value), as Specula's CPU and GPU kernels compute: a
  /// half-precision export becomes its f32 twin, and the weights' stored
  /// precision is reported (ONNXImportFacts) for specc --weights to keep.
  /// Off, they import as f16 (bfloat16 is refused), as ONNX computes them.
  bool halfAsFloat = false;
};

/// What importONNX found that its caller may act on.
struct ONNXImportFacts {
  /// The precision the model's weight matrices were stored in, by most
  /// elements: "f32", "f16" or "bf16".
  std::string weightPrecision = "f32";
};

/// What the model contract asks of one model file and what it lacks.
struct ModelContractReport {
  /// "target, vocab 259, 4 layer(s), 3276800 parameters, tokenizer
  /// sha256:8f913ac5..."
  std::string summary;
  /// Each violation, as a sentence naming the key, input or output; empty
  /// when the model follows the contract.
  std::vector<std::string> problems;
};

/// Loads the model in `source` (with the ONNX checker, without shape
/// inference) and checks it against the model contract: the configuration
/// in metadata_props and the inputs and outputs its spec_role needs. A model
/// that does not load is one problem.
ModelContractReport checkModelContract(
    llvm::StringRef source, llvm::StringRef sourceName,
    const std::map<std::string, std::string> &defaultMetadata = {});

/// A model given as a Hugging Face export folder: `path/model.onnx` when
/// `path` is a directory, else `path`.
std::string resolveModelPath(llvm::StringRef path);

/// For a model in an export folder: the contract's metadata keys from the
/// config.json beside `modelPath` (vocab_size, bos/eos/pad_token_id (pad
/// defaults to EOS; the first of an EOS list, the whole list as
/// "eos_token_ids" ("2,32000"); generation_config.json's EOS when
/// config.json has none), max_position_embeddings, num_hidden_layers,
/// num_attention_heads, num_key_value_heads, hidden_size, head_dim), the
/// fingerprint of tokenizer.json beside it, and spec_role `role`. Empty
/// without a config.json; fails with `error` naming the file and key.
mlir::FailureOr<std::map<std::string, std::string>>
readExportFolderMetadata(llvm::StringRef modelPath, llvm::StringRef role,
                         std::string &error);

/// A model of an export folder and the contract metadata its folder gives it.
struct ExportFolderModel {
  std::string path;
  std::map<std::string, std::string> metadata;
};

/// The DeepSeek-style MTP modules of an export folder (DeepSeek-V3, R1):
/// config.json's num_nextn_predict_layers N, and each module an ONNX file
/// beside model.onnx, mtp_module.onnx (or mtp_module_1.onnx) when N is 1,
/// else mtp_module_1.onnx ... mtp_module_N.onnx, in depth order.
struct ExportFolderMTP {
  /// num_nextn_predict_layers (0 when config.json has none).
  int64_t declared = 0;
  /// The modules, with spec_role mtp_module, spec_depth k and one layer;
  /// empty when the folder has none of the files (exporters often write
  /// model.onnx alone).
  std::vector<ExportFolderModel> modules;
};

/// The MTP modules beside `modelPath`; fails with `error` naming the file
/// for a count that is not a non-negative integer, a folder with some of
/// the N modules but not all, or one module under both names.
mlir::FailureOr<ExportFolderMTP>
readExportFolderMTPModules(llvm::StringRef modelPath, std::string &error);

/// "sha256:<hex>" of a tokenizer.json's canonical form
/// (specrt::Tokenizer::canonicalJson).
mlir::FailureOr<std::string> tokenizerFingerprint(llvm::StringRef path,
                                                  std::string &error);

/// Imports the model in `source` into `module`. `sourceName` is the file name
/// used in diagnostics; external data files are looked up beside it. Emits
/// one error naming the file (and node, operator and opset where it applies)
/// and fails on invalid or unsupported input; `module` is unchanged then.
/// `facts`, when given, receives what the import found.
mlir::LogicalResult importONNX(mlir::ModuleOp module, llvm::StringRef source,
                               llvm::StringRef sourceName,
                               const ONNXImportOptions &options = {},
                               ONNXImportFacts *facts = nullptr);

/// The operator types in `source` that the importer has no handler for (at
/// the model's opset), each once, sorted; empty when all are supported.
/// Fails with `error` set when the model does not load.
mlir::FailureOr<std::vector<std::string>>
findUnsupportedOperators(llvm::StringRef source, llvm::StringRef sourceName,
                         std::string &error);

/// Every supported operator as "Name" with its schema versions, for --help
/// and documentation: "Add [7-14]".
std::vector<std::string> describeSupportedOperators();

/// Adds the dialects the importer creates.
void registerONNXImportDialects(mlir::DialectRegistry &registry);

/// Registers `--import-onnx` for mlir-translate-like tools.
void registerONNXImportTranslation();

} // namespace specula

#endif // SPECULA_ONNXIMPORT_H
