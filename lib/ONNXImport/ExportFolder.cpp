//===- ExportFolder.cpp - Hugging Face export folders as model input ------===//
//
// An optimum / transformers export folder states a model's configuration in
// config.json (and generation_config.json) beside model.onnx, and its
// tokenizer in tokenizer.json, instead of the ONNX file's metadata_props.
// This reads them into the contract's metadata keys, and finds the
// DeepSeek-style MTP modules a folder's config.json declares.
//
//===----------------------------------------------------------------------===//

#include "specula/ONNXImport.h"

#include "specrt/Tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;
using namespace specula;

std::string specula::resolveModelPath(llvm::StringRef path) {
  if (!llvm::sys::fs::is_directory(path))
    return path.str();
  llvm::SmallString<256> model(path);
  llvm::sys::path::append(model, "model.onnx");
  return std::string(model);
}

static std::string besideModel(llvm::StringRef modelPath, llvm::StringRef file) {
  llvm::SmallString<256> path(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(path, file);
  return std::string(path);
}

FailureOr<std::string> specula::tokenizerFingerprint(llvm::StringRef path,
                                                     std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer) {
    error = "cannot read '" + path.str() + "': " + buffer.getError().message();
    return failure();
  }
  std::string canonical, message;
  if (!specrt::Tokenizer::canonicalJson((*buffer)->getBuffer(), canonical, message)) {
    error = "'" + path.str() + "': " + message;
    return failure();
  }
  return "sha256:" + llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(canonical)),
                                 /*LowerCase=*/true);
}

/// A JSON file of the folder, parsed; a missing file is an empty object.
static FailureOr<llvm::json::Object> readJsonFile(const std::string &path,
                                                  std::string &error) {
  if (!llvm::sys::fs::exists(path))
    return llvm::json::Object();
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> value = llvm::json::parse((*buffer)->getBuffer());
  if (!value) {
    error = "'" + path + "' is not valid JSON: " + llvm::toString(value.takeError());
    return failure();
  }
  if (!value->getAsObject()) {
    error = "'" + path + "' is not a JSON object";
    return failure();
  }
  return std::move(*value->getAsObject());
}

/// An eos_token_id list as "2,32000"; fails naming `path` on an entry that
/// is not a token id.
static FailureOr<std::string> joinTokenIds(const llvm::json::Array &list,
                                           const std::string &path,
                                           std::string &error) {
  std::string ids;
  for (const llvm::json::Value &id : list) {
    std::optional<int64_t> value = id.getAsInteger();
    if (!value || *value < 0) {
      error = "'" + path + "': eos_token_id has an entry that is not a token id";
      return failure();
    }
    ids += (ids.empty() ? "" : ",") + std::to_string(*value);
  }
  return ids;
}

FailureOr<std::map<std::string, std::string>>
specula::readExportFolderMetadata(llvm::StringRef modelPath, llvm::StringRef role,
                                  std::string &error) {
  std::map<std::string, std::string> meta;
  std::string configPath = besideModel(modelPath, "config.json");
  if (!llvm::sys::fs::exists(configPath))
    return meta;
  FailureOr<llvm::json::Object> config = readJsonFile(configPath, error);
  FailureOr<llvm::json::Object> generation =
      readJsonFile(besideModel(modelPath, "generation_config.json"), error);
  if (failed(config) || failed(generation))
    return failure();

  // An integer key; `list` takes the first of a list (eos_token_id may be
  // one). Absent or null: nothing, and the contract names the missing key.
  bool bad = false;
  auto integer = [&](const llvm::json::Object &object, const std::string &path,
                     llvm::StringRef key) -> std::optional<int64_t> {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->getAsNull())
      return std::nullopt;
    if (const llvm::json::Array *list = value->getAsArray()) {
      if (key == "eos_token_id" && !list->empty())
        value = &list->front();
      else
        value = nullptr;
    }
    std::optional<int64_t> number = value ? value->getAsInteger() : std::nullopt;
    if (!number || *number < 0) {
      error = "'" + path + "': " + key.str() + " is not a non-negative integer";
      bad = true;
    }
    return number;
  };
  auto set = [&](llvm::StringRef key, std::optional<int64_t> value) {
    if (value)
      meta[key.str()] = std::to_string(*value);
  };
  for (llvm::StringRef key : {"vocab_size", "bos_token_id", "max_position_embeddings",
                              "num_hidden_layers", "num_attention_heads", "hidden_size"})
    set(key, integer(*config, configPath, key));
  // EOS: config.json's, else generation_config.json's; a list's first is
  // the contract's eos_token_id and all of them stop (eos_token_ids).
  const llvm::json::Object *eosSource = config->get("eos_token_id") ? &*config : &*generation;
  std::string eosPath = eosSource == &*config ? configPath
                                              : besideModel(modelPath, "generation_config.json");
  std::optional<int64_t> eos = integer(*eosSource, eosPath, "eos_token_id");
  set("eos_token_id", eos);
  if (const llvm::json::Array *list = eosSource->getArray("eos_token_id")) {
    FailureOr<std::string> ids = joinTokenIds(*list, eosPath, error);
    if (failed(ids))
      return failure();
    meta["eos_token_ids"] = *ids;
  }
  // Without a pad token, pad with EOS (as transformers' generate does).
  std::optional<int64_t> pad = integer(*config, configPath, "pad_token_id");
  set("pad_token_id", pad ? pad : eos);
  std::optional<int64_t> heads = integer(*config, configPath, "num_attention_heads");
  std::optional<int64_t> kvHeads = integer(*config, configPath, "num_key_value_heads");
  set("num_key_value_heads", kvHeads ? kvHeads : heads);
  std::optional<int64_t> headDim = integer(*config, configPath, "head_dim");
  std::optional<int64_t> hidden = integer(*config, configPath, "hidden_size");
  if (!headDim && hidden && heads && *heads > 0)
    headDim = *hidden / *heads;
  set("head_dim", headDim);
  if (bad)
    return failure();

  std::string tokenizerPath = besideModel(modelPath, "tokenizer.json");
  if (llvm::sys::fs::exists(tokenizerPath)) {
    FailureOr<std::string> fingerprint = tokenizerFingerprint(tokenizerPath, error);
    if (failed(fingerprint))
      return failure();
    meta["tokenizer_sha256"] = *fingerprint;
  }
  if (!role.empty())
    meta["spec_role"] = role.str();
  return meta;
}

/// The file of the MTP module at `depth` of `count` beside `modelPath`:
/// mtp_module.onnx or mtp_module_1.onnx for the only one, else
/// mtp_module_<depth>.onnx; empty when there is none (or, for the only one,
/// an error when both names exist).
static FailureOr<std::string> findMTPModuleFile(llvm::StringRef modelPath,
                                                int64_t depth, int64_t count,
                                                std::string &error) {
  std::string numbered =
      besideModel(modelPath, "mtp_module_" + std::to_string(depth) + ".onnx");
  if (count > 1)
    return llvm::sys::fs::exists(numbered) ? numbered : std::string();
  std::string plain = besideModel(modelPath, "mtp_module.onnx");
  bool hasPlain = llvm::sys::fs::exists(plain);
  bool hasNumbered = llvm::sys::fs::exists(numbered);
  if (hasPlain && hasNumbered) {
    error = "'" + plain + "' and '" + numbered +
            "' both hold the folder's one MTP module; remove one";
    return failure();
  }
  return hasPlain ? plain : hasNumbered ? numbered : std::string();
}

FailureOr<ExportFolderMTP>
specula::readExportFolderMTPModules(llvm::StringRef modelPath,
                                    std::string &error) {
  ExportFolderMTP mtp;
  std::string configPath = besideModel(modelPath, "config.json");
  FailureOr<llvm::json::Object> config = readJsonFile(configPath, error);
  if (failed(config))
    return failure();
  const llvm::json::Value *declared = config->get("num_nextn_predict_layers");
  if (!declared || declared->getAsNull())
    return mtp;
  std::optional<int64_t> count = declared->getAsInteger();
  if (!count || *count < 0) {
    error = "'" + configPath +
            "': num_nextn_predict_layers is not a non-negative integer";
    return failure();
  }
  mtp.declared = *count;
  for (int64_t depth = 1; depth <= *count; ++depth) {
    FailureOr<std::string> path =
        findMTPModuleFile(modelPath, depth, *count, error);
    if (failed(path))
      return failure();
    if (path->empty()) {
      // None exported is common (exporters write model.onnx alone); some
      // but not all is a broken folder.
      if (depth == 1)
        return mtp;
      error = "'" + configPath + "' declares " + std::to_string(*count) +
              " MTP modules (num_nextn_predict_layers) but '" +
              besideModel(modelPath, "mtp_module_" + std::to_string(depth) +
                                         ".onnx") +
              "' is missing";
      return failure();
    }
    FailureOr<std::map<std::string, std::string>> metadata =
        readExportFolderMetadata(*path, "mtp_module", error);
    if (failed(metadata))
      return failure();
    // Each of DeepSeek's MTP modules is one transformer block.
    (*metadata)["num_hidden_layers"] = "1";
    (*metadata)["spec_depth"] = std::to_string(depth);
    mtp.modules.push_back({*path, std::move(*metadata)});
  }
  return mtp;
}
