//===- ONNXMutator.cpp - structure-aware mutations of ONNX models ---------===//

#include "ONNXMutator.h"

#include "onnx/defs/parser.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

using namespace specula::fuzz;

namespace {
using Rng = std::mt19937_64;

size_t pick(Rng &rng, size_t count) {
  return std::uniform_int_distribution<size_t>(0, count - 1)(rng);
}

bool coin(Rng &rng, unsigned oneIn) { return pick(rng, oneIn) == 0; }

/// A value the importer or libonnx may trust too far: signs, edges of the
/// integer types, sizes whose products overflow, and neighbours of `old`.
int64_t mutateInt(int64_t old, Rng &rng) {
  static constexpr int64_t kEdges[] = {
      std::numeric_limits<int64_t>::min(), -(int64_t(1) << 31), -2, -1, 0, 1,
      2, 3, 7, (int64_t(1) << 31) - 1, int64_t(1) << 31, int64_t(1) << 32,
      int64_t(1) << 48, 2600000000000000000, std::numeric_limits<int64_t>::max()};
  switch (pick(rng, 4)) {
  case 0:
    return kEdges[pick(rng, std::size(kEdges))];
  case 1:
    return static_cast<int64_t>(static_cast<uint64_t>(old) + (coin(rng, 2) ? 1 : -1));
  case 2:
    return static_cast<int64_t>(0 - static_cast<uint64_t>(old));
  default:
    return static_cast<int64_t>(static_cast<uint64_t>(old) * 2);
  }
}

float mutateFloat(float old, Rng &rng) {
  static constexpr float kEdges[] = {
      std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1.0f, -1.0f,
      std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()};
  if (coin(rng, 2))
    return kEdges[pick(rng, std::size(kEdges))];
  return coin(rng, 2) ? -old : old * 1e10f;
}

/// Edits one entry of a repeated field (or adds or removes one).
template <typename Repeated, typename Mutate>
void mutateList(Repeated &list, Rng &rng, Mutate mutate) {
  if (list.empty() || coin(rng, 6)) {
    list.Add(mutate(list.empty() ? 0 : list.Get(pick(rng, list.size()))));
    return;
  }
  size_t index = pick(rng, list.size());
  if (coin(rng, 6)) {
    list.erase(list.begin() + index);
    return;
  }
  list.Set(index, mutate(list.Get(index)));
}

int32_t mutateInt32(int32_t old, Rng &rng) {
  return static_cast<int32_t>(mutateInt(old, rng));
}

/// Edits one element of raw_data, read as the tensor's element type.
void mutateRawData(onnx::TensorProto &tensor, Rng &rng) {
  std::string &raw = *tensor.mutable_raw_data();
  size_t width = tensor.data_type() == onnx::TensorProto::INT64 ||
                         tensor.data_type() == onnx::TensorProto::DOUBLE
                     ? 8
                 : tensor.data_type() == onnx::TensorProto::FLOAT ||
                         tensor.data_type() == onnx::TensorProto::INT32
                     ? 4
                     : 1;
  if (raw.size() < width || coin(rng, 8)) {
    // A truncated or extended buffer.
    raw.resize(coin(rng, 2) && !raw.empty() ? raw.size() - 1 : raw.size() + width);
    return;
  }
  size_t offset = pick(rng, raw.size() / width) * width;
  if (tensor.data_type() == onnx::TensorProto::INT64) {
    int64_t value;
    std::memcpy(&value, raw.data() + offset, 8);
    value = mutateInt(value, rng);
    std::memcpy(raw.data() + offset, &value, 8);
  } else if (tensor.data_type() == onnx::TensorProto::FLOAT) {
    float value;
    std::memcpy(&value, raw.data() + offset, 4);
    value = mutateFloat(value, rng);
    std::memcpy(raw.data() + offset, &value, 4);
  } else {
    raw[offset] = static_cast<char>(mutateInt(raw[offset], rng));
  }
}

void mutateTensor(onnx::TensorProto &tensor, Rng &rng) {
  switch (pick(rng, 4)) {
  case 0:
    mutateList(*tensor.mutable_dims(), rng,
               [&](int64_t dim) { return mutateInt(dim, rng); });
    return;
  case 1: {
    static constexpr int kTypes[] = {
        onnx::TensorProto::FLOAT, onnx::TensorProto::INT64,
        onnx::TensorProto::INT32, onnx::TensorProto::BOOL,
        onnx::TensorProto::DOUBLE, onnx::TensorProto::FLOAT16,
        onnx::TensorProto::STRING, onnx::TensorProto::UNDEFINED};
    tensor.set_data_type(kTypes[pick(rng, std::size(kTypes))]);
    return;
  }
  default:
    if (tensor.has_raw_data())
      mutateRawData(tensor, rng);
    else if (tensor.int64_data_size() || coin(rng, 3))
      mutateList(*tensor.mutable_int64_data(), rng,
                 [&](int64_t v) { return mutateInt(v, rng); });
    else if (tensor.int32_data_size() || coin(rng, 2))
      mutateList(*tensor.mutable_int32_data(), rng,
                 [&](int32_t v) { return mutateInt32(v, rng); });
    else
      mutateList(*tensor.mutable_float_data(), rng,
                 [&](float v) { return mutateFloat(v, rng); });
  }
}

bool mutateAttribute(onnx::GraphProto &graph, Rng &rng) {
  std::vector<onnx::AttributeProto *> attributes;
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attribute : *node.mutable_attribute())
      attributes.push_back(&attribute);
  if (attributes.empty())
    return false;
  onnx::AttributeProto &attribute = *attributes[pick(rng, attributes.size())];
  switch (attribute.type()) {
  case onnx::AttributeProto::INT:
    attribute.set_i(mutateInt(attribute.i(), rng));
    break;
  case onnx::AttributeProto::FLOAT:
    attribute.set_f(mutateFloat(attribute.f(), rng));
    break;
  case onnx::AttributeProto::INTS:
    mutateList(*attribute.mutable_ints(), rng,
               [&](int64_t v) { return mutateInt(v, rng); });
    break;
  case onnx::AttributeProto::FLOATS:
    mutateList(*attribute.mutable_floats(), rng,
               [&](float v) { return mutateFloat(v, rng); });
    break;
  case onnx::AttributeProto::TENSOR:
    mutateTensor(*attribute.mutable_t(), rng);
    break;
  case onnx::AttributeProto::STRING:
    attribute.set_s(coin(rng, 2) ? "" : attribute.s() + attribute.s());
    break;
  default:
    // Another kind, or the attribute's kind changed under its value.
    attribute.set_type(onnx::AttributeProto::INTS);
    break;
  }
  return true;
}

bool mutateDimension(onnx::GraphProto &graph, Rng &rng) {
  std::vector<onnx::TypeProto_Tensor *> tensors;
  for (auto *values : {graph.mutable_input(), graph.mutable_output(),
                       graph.mutable_value_info()})
    for (onnx::ValueInfoProto &info : *values)
      if (info.type().has_tensor_type())
        tensors.push_back(info.mutable_type()->mutable_tensor_type());
  if (tensors.empty())
    return false;
  onnx::TypeProto_Tensor &tensor = *tensors[pick(rng, tensors.size())];
  if (coin(rng, 6)) {
    tensor.set_elem_type(static_cast<int32_t>(pick(rng, 17)));
    return true;
  }
  auto &dims = *tensor.mutable_shape()->mutable_dim();
  if (dims.empty() || coin(rng, 6)) {
    tensor.mutable_shape()->add_dim()->set_dim_value(mutateInt(1, rng));
    return true;
  }
  size_t index = pick(rng, dims.size());
  if (coin(rng, 6)) {
    dims.erase(dims.begin() + index);
  } else if (coin(rng, 4)) {
    dims[index].set_dim_param("N");
  } else {
    int64_t old = dims[index].has_dim_value() ? dims[index].dim_value() : 1;
    dims[index].set_dim_value(mutateInt(old, rng));
  }
  return true;
}

bool mutateConstantValue(onnx::GraphProto &graph, Rng &rng) {
  std::vector<onnx::TensorProto *> tensors;
  for (onnx::TensorProto &tensor : *graph.mutable_initializer())
    tensors.push_back(&tensor);
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attribute : *node.mutable_attribute())
      if (attribute.has_t())
        tensors.push_back(attribute.mutable_t());
  if (tensors.empty())
    return false;
  mutateTensor(*tensors[pick(rng, tensors.size())], rng);
  return true;
}

/// Rewires a node input to another value of the graph (any of them, also
/// one produced later: a cycle), or drops it; or renames an output to an
/// existing name.
bool mutateEdge(onnx::GraphProto &graph, Rng &rng) {
  if (graph.node().empty())
    return false;
  std::vector<std::string> names = {""};
  for (const onnx::ValueInfoProto &input : graph.input())
    names.push_back(input.name());
  for (const onnx::TensorProto &tensor : graph.initializer())
    names.push_back(tensor.name());
  for (const onnx::NodeProto &node : graph.node())
    names.insert(names.end(), node.output().begin(), node.output().end());
  onnx::NodeProto &node = *graph.mutable_node(pick(rng, graph.node_size()));
  const std::string &name = names[pick(rng, names.size())];
  if (node.output_size() && coin(rng, 5)) {
    node.set_output(pick(rng, node.output_size()), name);
  } else if (node.input_size() && !coin(rng, 5)) {
    node.set_input(pick(rng, node.input_size()), name);
  } else if (coin(rng, 2)) {
    node.add_input(name);
  } else if (node.input_size()) {
    node.mutable_input()->RemoveLast();
  }
  return true;
}

bool mutateOpset(onnx::ModelProto &model, Rng &rng) {
  for (onnx::OperatorSetIdProto &opset : *model.mutable_opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      static constexpr int64_t kVersions[] = {1, 6, 7, 9, 11, 12, 13, 17, 18, 21, 99};
      opset.set_version(coin(rng, 2) ? kVersions[pick(rng, std::size(kVersions))]
                                     : mutateInt(opset.version(), rng));
      return true;
    }
  return false;
}
} // namespace

const char *specula::fuzz::getMutationKindName(MutationKind kind) {
  switch (kind) {
  case MutationKind::Attribute:
    return "attribute";
  case MutationKind::Dimension:
    return "dimension";
  case MutationKind::ConstantValue:
    return "constant value";
  case MutationKind::Edge:
    return "edge";
  case MutationKind::Opset:
    return "opset";
  }
  return "?";
}

bool specula::fuzz::parseModel(const std::string &data,
                               onnx::ModelProto &model) {
  if (model.ParseFromString(data) && model.has_graph())
    return true;
  model.Clear();
  try {
    onnx::OnnxParser parser(data.c_str());
    return parser.Parse(model).IsOK() && model.has_graph();
  } catch (...) {
    return false;
  }
}

bool specula::fuzz::mutateModel(onnx::ModelProto &model, MutationKind kind,
                                Rng &rng) {
  onnx::GraphProto &graph = *model.mutable_graph();
  switch (kind) {
  case MutationKind::Attribute:
    return mutateAttribute(graph, rng);
  case MutationKind::Dimension:
    return mutateDimension(graph, rng);
  case MutationKind::ConstantValue:
    return mutateConstantValue(graph, rng);
  case MutationKind::Edge:
    return mutateEdge(graph, rng);
  case MutationKind::Opset:
    return mutateOpset(model, rng);
  }
  return false;
}

std::optional<MutationKind> specula::fuzz::mutateModel(onnx::ModelProto &model,
                                                       Rng &rng) {
  // Opset changes mostly end in an early refusal: rarer than the others.
  static constexpr MutationKind kWeighted[] = {
      MutationKind::Attribute,     MutationKind::Attribute,
      MutationKind::Dimension,     MutationKind::Dimension,
      MutationKind::ConstantValue, MutationKind::ConstantValue,
      MutationKind::ConstantValue, MutationKind::Edge,
      MutationKind::Edge,          MutationKind::Opset};
  size_t first = pick(rng, std::size(kWeighted));
  for (size_t i = 0; i < std::size(kWeighted); ++i) {
    MutationKind kind = kWeighted[(first + i) % std::size(kWeighted)];
    if (mutateModel(model, kind, rng))
      return kind;
  }
  return std::nullopt;
}
