//===- ModelLoader.cpp - parse, check and shape-infer ONNX models ---------===//
//
// Compiled with -fexceptions: libonnx throws on invalid models.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ModelLoader.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <fstream>
#include <sstream>

using namespace specula::onnx_import;

static bool looksTextual(const std::string &contents) {
  for (char c : contents) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r')
      continue;
    return c == '<' || c == '#';
  }
  return false;
}

/// Replaces external data references by the bytes they point to.
static bool loadExternalData(onnx::TensorProto &tensor,
                             const std::string &modelDir, std::string &error) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return true;
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::stoll(entry.value());
    else if (entry.key() == "length")
      length = std::stoll(entry.value());
  }
  if (location.empty()) {
    error = "initializer '" + tensor.name() +
            "' has external data without a location";
    return false;
  }
  std::string path = modelDir.empty() ? location : modelDir + "/" + location;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = "initializer '" + tensor.name() + "': cannot open external data "
            "file '" + path + "'";
    return false;
  }
  file.seekg(0, std::ios::end);
  int64_t size = file.tellg();
  if (length < 0)
    length = size - offset;
  if (offset < 0 || offset + length > size) {
    error = "initializer '" + tensor.name() + "': external data file '" +
            path + "' holds " + std::to_string(size) + " bytes, fewer than "
            "offset " + std::to_string(offset) + " + length " +
            std::to_string(length);
    return false;
  }
  std::string bytes(length, '\0');
  file.seekg(offset);
  file.read(bytes.data(), length);
  tensor.set_raw_data(std::move(bytes));
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return true;
}

bool specula::onnx_import::loadModel(const std::string &contents,
                                     const std::string &modelDir,
                                     const LoadOptions &options,
                                     onnx::ModelProto &model,
                                     std::string &error) {
  try {
    if (looksTextual(contents)) {
      onnx::OnnxParser parser(contents.c_str());
      auto status = parser.Parse(model);
      if (!status.IsOK()) {
        error = "invalid textual ONNX: " + status.ErrorMessage();
        return false;
      }
    } else if (!model.ParseFromString(contents)) {
      error = "not a valid ONNX protobuf (truncated or corrupt file?)";
      return false;
    }
    if (!model.has_graph()) {
      error = "the model has no graph";
      return false;
    }
    for (auto &tensor : *model.mutable_graph()->mutable_initializer())
      if (!loadExternalData(tensor, modelDir, error))
        return false;
    if (options.runChecker)
      onnx::checker::check_model(model);
    if (options.runShapeInference) {
      onnx::ShapeInferenceOptions inferOptions{/*check_type=*/true,
                                               /*error_mode=*/1,
                                               /*enable_data_propagation=*/true};
      onnx::shape_inference::InferShapes(
          model, onnx::OpSchemaRegistry::Instance(), inferOptions);
    }
    return true;
  } catch (const onnx::checker::ValidationError &e) {
    error = std::string("the ONNX checker rejects the model: ") + e.what();
  } catch (const onnx::InferenceError &e) {
    error = std::string("ONNX shape inference failed: ") + e.what();
  } catch (const std::exception &e) {
    error = std::string("cannot load the model: ") + e.what();
  }
  return false;
}

std::optional<int> specula::onnx_import::operatorSinceVersion(
    const std::string &opType, const std::string &domain, int opsetVersion) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(opType, opsetVersion, domain);
  if (!schema)
    return std::nullopt;
  return schema->since_version();
}
