//===- ModelContract.cpp - what Specula asks of a model file --------------===//
//
// The model contract (docs/model-contract.md): the configuration in
// metadata_props and the inputs and outputs each spec_role needs. specc
// refuses a model that breaks it with every violation named, and
// spec-check-model reports on any number of files, from this one checker.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/HalfToFloat.h"
#include "lib/ONNXImport/ModelContract.h"
#include "lib/ONNXImport/ModelLoader.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace specula;
using namespace specula::onnx_import;

namespace {
/// One expected dimension: a size, or any symbolic (dynamic) one.
struct Dim {
  std::optional<int64_t> size;
  static Dim dynamic() { return {}; }
  static Dim of(std::optional<int64_t> size) { return {size}; }
};

class ContractChecker {
public:
  explicit ContractChecker(const onnx::ModelProto &model) : model(model) {
    for (const auto &prop : model.metadata_props())
      meta[prop.key()] = prop.value();
    for (const auto &input : model.graph().input())
      inputs[input.name()] = &input;
    for (const auto &output : model.graph().output())
      outputs[output.name()] = &output;
  }

  ModelContractReport check();

private:
  std::optional<int64_t> intMeta(llvm::StringRef key);
  std::string summarize();
  void checkMetadata();
  void checkInterface(const std::string &role);
  void expect(bool input, const std::string &name, int32_t elem,
              std::vector<Dim> shape);
  void expectCache(int64_t layers);

  const onnx::ModelProto &model;
  llvm::StringMap<std::string> meta;
  std::map<std::string, const onnx::ValueInfoProto *> inputs, outputs;
  /// The inputs the contract names; any other is a problem.
  std::set<std::string> known;
  std::vector<std::string> problems;
  /// The metadata integers, read once (a value that is not one is a
  /// problem).
  std::optional<int64_t> vocab, layers, depth, hidden, kvHeads, headDim;
};
} // namespace

static constexpr llvm::StringLiteral kRequiredMetadata[] = {
    "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id",
    "max_position_embeddings", "tokenizer_sha256", "spec_role"};
static constexpr llvm::StringLiteral kRoles[] = {"target", "draft",
                                                 "medusa_head", "mtp_module"};

/// A metadata integer; a present value that is not one is a problem.
std::optional<int64_t> ContractChecker::intMeta(llvm::StringRef key) {
  auto it = meta.find(key);
  if (it == meta.end())
    return std::nullopt;
  int64_t value;
  if (llvm::StringRef(it->second).getAsInteger(10, value)) {
    problems.push_back("metadata '" + key.str() + "' is '" + it->second +
                       "', not an integer");
    return std::nullopt;
  }
  return value;
}

static std::string describeShape(const onnx::ValueInfoProto &info) {
  std::string text = "[";
  const auto &dims = info.type().tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i) {
    if (i)
      text += ", ";
    text += dims[i].has_dim_value() ? std::to_string(dims[i].dim_value())
            : dims[i].dim_param().empty() ? "?"
                                          : dims[i].dim_param();
  }
  return text + "]";
}

void ContractChecker::expect(bool input, const std::string &name, int32_t elem,
                             std::vector<Dim> shape) {
  const char *kind = input ? "input" : "output";
  if (input)
    known.insert(name);
  auto &table = input ? inputs : outputs;
  auto it = table.find(name);
  if (it == table.end()) {
    problems.push_back(std::string("missing ") + kind + " '" + name + "'");
    return;
  }
  const onnx::TypeProto::Tensor &tensor = it->second->type().tensor_type();
  if (tensor.elem_type() != elem)
    problems.push_back(std::string(kind) + " '" + name +
                       "' has element type " +
                       elementTypeName(tensor.elem_type()) + ", expected " +
                       elementTypeName(elem));
  const auto &dims = tensor.shape().dim();
  bool matches = tensor.has_shape() &&
                 dims.size() == static_cast<int>(shape.size());
  for (int i = 0; matches && i < dims.size(); ++i) {
    bool symbolic = !dims[i].has_dim_value();
    matches = shape[i].size ? !symbolic && dims[i].dim_value() == *shape[i].size
                            : symbolic;
  }
  if (matches)
    return;
  std::string wanted = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    wanted += (i ? ", " : "") +
              (shape[i].size ? std::to_string(*shape[i].size) : "*");
  problems.push_back(std::string(kind) + " '" + name + "' has shape " +
                     describeShape(*it->second) + ", expected " + wanted +
                     "]" + " (* symbolic)");
}

void ContractChecker::expectCache(int64_t layers) {
  for (int64_t i = 0; i < layers; ++i)
    for (const char *part : {"key", "value"}) {
      std::vector<Dim> shape = {Dim::dynamic(), Dim::of(kvHeads),
                                Dim::dynamic(), Dim::of(headDim)};
      std::string suffix = std::to_string(i) + "." + part;
      expect(true, "past_key_values." + suffix, onnx::TensorProto::FLOAT,
             shape);
      expect(false, "present." + suffix, onnx::TensorProto::FLOAT, shape);
    }
}

/// "target depth 1, vocab 259, 4 layer(s), N parameters, tokenizer ...".
std::string ContractChecker::summarize() {
  std::string role = meta.lookup("spec_role");
  std::string summary = role.empty() ? "no role" : role;
  if (depth)
    summary += " depth " + std::to_string(*depth);
  if (vocab)
    summary += ", vocab " + std::to_string(*vocab);
  if (layers)
    summary += ", " + std::to_string(*layers) + " layer(s)";
  int64_t parameters = 0;
  for (const auto &tensor : model.graph().initializer()) {
    int64_t count = 1;
    for (int64_t dim : tensor.dims())
      count *= dim;
    parameters += count;
  }
  summary += ", " + std::to_string(parameters) + " parameters";
  std::string tokenizer = meta.lookup("tokenizer_sha256");
  if (!tokenizer.empty())
    summary += ", tokenizer " + tokenizer.substr(0, 15) + "...";
  return summary;
}

/// The metadata's values: ids inside the vocabulary, a known role.
void ContractChecker::checkMetadata() {
  if (vocab && *vocab < 1)
    problems.push_back("vocab_size " + std::to_string(*vocab) +
                       " must be at least 1");
  for (llvm::StringRef key : {"bos_token_id", "eos_token_id", "pad_token_id"})
    if (std::optional<int64_t> id = intMeta(key); id && vocab &&
                                                  (*id < 0 || *id >= *vocab))
      problems.push_back(key.str() + " " + std::to_string(*id) +
                         " outside [0, " + std::to_string(*vocab) + ")");
  if (std::optional<int64_t> context = intMeta("max_position_embeddings");
      context && *context < 1)
    problems.push_back("max_position_embeddings " + std::to_string(*context) +
                       " must be at least 1");
  std::string tokenizer = meta.lookup("tokenizer_sha256");
  if (!tokenizer.empty() && !llvm::StringRef(tokenizer).starts_with("sha256:"))
    problems.push_back("tokenizer_sha256 must start with 'sha256:'");
  std::string role = meta.lookup("spec_role");
  if (!role.empty() && !llvm::is_contained(kRoles, role))
    problems.push_back("spec_role '" + role +
                       "' is not one of target, draft, medusa_head, "
                       "mtp_module");
}

/// The inputs and outputs `role` needs, and no other input.
void ContractChecker::checkInterface(const std::string &role) {
  constexpr int32_t kInt64 = onnx::TensorProto::INT64,
                    kFloat = onnx::TensorProto::FLOAT;
  std::vector<Dim> tokens = {Dim::dynamic(), Dim::dynamic()};
  std::vector<Dim> states = {Dim::dynamic(), Dim::dynamic(), Dim::of(hidden)};
  std::vector<Dim> logits = {Dim::dynamic(), Dim::dynamic(), Dim::of(vocab)};
  if (role == "target" || role == "draft") {
    if (!layers || *layers < 1)
      problems.push_back("metadata 'num_hidden_layers' must be at least 1");
    expect(true, "input_ids", kInt64, tokens);
    expect(true, "position_ids", kInt64, tokens);
    expect(false, "logits", kFloat, logits);
    expect(false, "hidden_states", kFloat, states);
    expectCache(layers.value_or(0));
  } else {
    if (!depth || *depth < 1)
      problems.push_back("heads need metadata 'spec_depth' >= 1");
    if (role == "medusa_head") {
      expect(true, "hidden_states", kFloat, states);
    } else {
      expect(true, "previous_hidden_states", kFloat, states);
      expect(true, "input_ids", kInt64, tokens);
      expect(true, "position_ids", kInt64, tokens);
      expect(false, "hidden_states", kFloat, states);
      expectCache(layers.value_or(1));
    }
    expect(false, "logits", kFloat, logits);
  }
  // An attention mask is optional (the decode loops set it to ones); any
  // other input would have nothing to feed it.
  known.insert("attention_mask");
  for (const auto &[name, info] : inputs)
    if (!known.count(name))
      problems.push_back("input '" + name + "' is not part of the contract "
                         "for role '" + role + "'");
}

ModelContractReport ContractChecker::check() {
  ModelContractReport report;
  for (llvm::StringRef key : kRequiredMetadata)
    if (!meta.count(key))
      problems.push_back("metadata_props lacks '" + key.str() + "'");
  vocab = intMeta("vocab_size");
  layers = intMeta("num_hidden_layers");
  depth = intMeta("spec_depth");
  hidden = intMeta("hidden_size");
  kvHeads = intMeta("num_key_value_heads");
  headDim = intMeta("head_dim");
  report.summary = summarize();
  checkMetadata();
  std::string role = meta.lookup("spec_role");
  if (problems.empty() && !role.empty())
    checkInterface(role);
  report.problems = std::move(problems);
  return report;
}

ModelContractReport
specula::onnx_import::checkContract(const onnx::ModelProto &model) {
  return ContractChecker(model).check();
}

void specula::onnx_import::addDefaultMetadata(
    onnx::ModelProto &model, const std::map<std::string, std::string> &defaults) {
  std::set<std::string> present;
  for (const auto &prop : model.metadata_props())
    present.insert(prop.key());
  for (const auto &[key, value] : defaults)
    if (!present.count(key)) {
      onnx::StringStringEntryProto *entry = model.add_metadata_props();
      entry->set_key(key);
      entry->set_value(value);
    }
}

ModelContractReport specula::checkModelContract(
    llvm::StringRef source, llvm::StringRef sourceName,
    const std::map<std::string, std::string> &defaultMetadata) {
  onnx::ModelProto model;
  std::string error;
  LoadOptions options;
  options.runShapeInference = false;
  if (!loadModel(source, llvm::sys::path::parent_path(sourceName).str(),
                 options, model, error))
    return {"does not load", {"does not load as a valid ONNX model: " + error}};
  onnx_import::addDefaultMetadata(model, defaultMetadata);
  // Specula computes a half-precision export in f32 (specc imports it so).
  std::string stored = onnx_import::widenHalfToFloat(model);
  ModelContractReport report = onnx_import::checkContract(model);
  if (stored != "f32")
    report.summary += ", weights stored as " + stored;
  return report;
}
