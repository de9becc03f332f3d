//===- ModelLoader.cpp - parse, check and shape-infer ONNX models ---------===//
//
// Compiled with -fexceptions: libonnx throws on invalid models.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ModelLoader.h"
#include "lib/ONNXImport/TensorProtoData.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace specula::onnx_import;

std::string specula::onnx_import::nodeDisplayName(const onnx::NodeProto &node,
                                                  int index) {
  return node.name().empty() ? node.op_type() + "#" + std::to_string(index)
                             : node.name();
}

std::string specula::onnx_import::elementTypeName(int32_t onnxType) {
  return onnx::TensorProto::DataType_IsValid(onnxType)
             ? onnx::TensorProto::DataType_Name(
                   static_cast<onnx::TensorProto::DataType>(onnxType))
             : "type " + std::to_string(onnxType);
}

static bool looksTextual(llvm::StringRef contents) {
  for (char c : contents) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r')
      continue;
    return c == '<' || c == '#';
  }
  return false;
}

/// Replaces external data references by the bytes they point to. The
/// file must lie in the model's directory, as ONNX requires (a model is
/// untrusted input: '../../etc/shadow', an absolute path or a symbolic link
/// out of the directory is refused), and be a regular file (not a device
/// that reads without end).
static bool loadExternalData(onnx::TensorProto &tensor,
                             const std::string &modelDir, std::string &error) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return true;
  std::string where = "initializer '" + tensor.name() + "'";
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    llvm::StringRef value = entry.value();
    int64_t *number = entry.key() == "offset"   ? &offset
                      : entry.key() == "length" ? &length
                                                : nullptr;
    if (entry.key() == "location")
      location = entry.value();
    else if (number && (value.getAsInteger(10, *number) || *number < 0)) {
      error = where + ": external data " + entry.key() + " '" +
              entry.value() + "' is not a non-negative integer";
      return false;
    }
  }
  if (location.empty()) {
    error = where + " has external data without a location";
    return false;
  }
  namespace fs = llvm::sys::fs;
  namespace path = llvm::sys::path;
  bool escapes = path::is_absolute(location) ||
                 location.find('\0') != std::string::npos;
  for (llvm::StringRef part :
       llvm::make_range(path::begin(location), path::end(location)))
    escapes |= part == "..";
  if (escapes) {
    error = where + ": external data location '" + location +
            "' must be a path inside the model's directory";
    return false;
  }
  std::string dir = modelDir.empty() ? "." : modelDir;
  std::string file = dir + "/" + location;
  llvm::SmallString<256> realDir, realFile;
  if (fs::real_path(file, realFile)) {
    error = where + ": cannot open external data file '" + file + "'";
    return false;
  }
  if (!fs::real_path(dir, realDir) && !realDir.ends_with("/"))
    realDir += "/";
  if (realDir.empty() || !llvm::StringRef(realFile).starts_with(realDir)) {
    error = where + ": external data file '" + file + "' resolves to '" +
            std::string(realFile) + "', outside the model's directory";
    return false;
  }
  fs::file_status status;
  if (fs::status(realFile, status) || !fs::is_regular_file(status)) {
    error = where + ": external data '" + file + "' is not a regular file";
    return false;
  }
  int64_t size = static_cast<int64_t>(status.getSize());
  if (length < 0)
    length = offset <= size ? size - offset : 0;
  if (offset > size || length > size - offset) {
    error = where + ": external data file '" + file + "' holds " +
            std::to_string(size) + " bytes, fewer than offset " +
            std::to_string(offset) + " + length " + std::to_string(length);
    return false;
  }
  std::ifstream stream(std::string(realFile), std::ios::binary);
  std::string bytes(length, '\0');
  if (!stream.seekg(offset) || !stream.read(bytes.data(), length)) {
    error = where + ": cannot read external data file '" + file + "'";
    return false;
  }
  tensor.set_raw_data(std::move(bytes));
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return true;
}

namespace {
/// Checks what libonnx and the importer would trust in a graph before
/// either reads it: every tensor stored in it (initializers, tensor
/// attributes of its nodes, subgraphs included) holds as many elements as
/// its dims say (libonnx reads past the end otherwise), declared dims, and
/// single assignment (a node output that redefines a graph input, an
/// initializer or another node's output gets two types).
static std::string typeCaseName(const onnx::TypeProto &type) {
  switch (type.value_case()) {
  case onnx::TypeProto::kSparseTensorType:
    return "a sparse tensor";
  case onnx::TypeProto::kSequenceType:
    return "a sequence";
  case onnx::TypeProto::kMapType:
    return "a map";
  case onnx::TypeProto::kOptionalType:
    return "an optional";
  case onnx::TypeProto::VALUE_NOT_SET:
    return "of no type";
  default:
    return "of ONNX type case " + std::to_string(type.value_case());
  }
}

/// Elements times bytes per element stays far below 2^63.
static constexpr uint64_t kMaxElements = uint64_t(1) << 48;

/// a * b, or kMaxElements + 1 when that is more.
uint64_t saturatingProduct(uint64_t a, uint64_t b) {
  return b && a > (kMaxElements + 1) / b ? kMaxElements + 1 : a * b;
}

/// The operand of a node that libonnx's inference reads as a shape, one
/// dimension per element (ConstantOfShape's, Reshape's and Expand's), or -1.
int shapeOperand(const onnx::NodeProto &node) {
  if (!node.domain().empty())
    return -1;
  int operand = node.op_type() == "ConstantOfShape" ? 0
                : node.op_type() == "Reshape" || node.op_type() == "Expand"
                    ? 1
                    : -1;
  return node.input_size() > operand ? operand : -1;
}

/// Whether `values` holds each of 0 .. size - 1 once.
bool isPermutation(const google::protobuf::RepeatedField<int64_t> &values) {
  std::vector<bool> seen(values.size(), false);
  for (int64_t value : values) {
    if (value < 0 || value >= values.size() || seen[value])
      return false;
    seen[value] = true;
  }
  return true;
}

std::string joinIntegers(const google::protobuf::RepeatedField<int64_t> &values) {
  std::string out;
  for (int64_t value : values)
    out += (out.empty() ? "" : ", ") + std::to_string(value);
  return out;
}

class GraphValidator {
public:
  explicit GraphValidator(std::string &error) : error(error) {}

  bool check(const onnx::GraphProto &graph) {
    // libonnx's inference reads a value's tensor type without checking that
    // it has one (a LayerNormalization of a sparse input crashed it); the
    // importer reads dense tensors only.
    for (const auto &[kind, values] :
         {std::make_pair("graph input", &graph.input()),
          std::make_pair("value_info", &graph.value_info()),
          std::make_pair("graph output", &graph.output())})
      for (const onnx::ValueInfoProto &value : *values)
        if (value.has_type() && !value.type().has_tensor_type()) {
          error = std::string(kind) + " '" + value.name() + "' is " +
                  typeCaseName(value.type()) +
                  "; only dense tensors are supported";
          return false;
        }
    for (const auto *values : {&graph.input(), &graph.output(),
                               &graph.value_info()})
      for (const onnx::ValueInfoProto &value : *values)
        if (!declared(value))
          return false;
    for (const onnx::TensorProto &tensor : graph.initializer())
      if (!check(tensor, "initializer '" + tensor.name() + "'"))
        return false;
    // A name declared twice (a graph output that is a graph input, or has a
    // value_info too) must be declared alike: libonnx's inference takes the
    // last declaration for every use.
    std::map<std::string, std::pair<std::string, std::pair<int32_t, int>>>
        declarations;
    auto declare = [&](const std::string &name, const std::string &where,
                       int32_t elementType, int rank) {
      auto [it, inserted] = declarations.try_emplace(
          name, where, std::make_pair(elementType, rank));
      auto [firstType, firstRank] = it->second.second;
      // An undefined element type or a missing shape declares nothing.
      if (inserted ||
          ((firstType == elementType || !firstType || !elementType) &&
           (firstRank == rank || firstRank < 0 || rank < 0)))
        return true;
      auto describe = [](const std::string &kind, std::pair<int32_t, int> t) {
        return kind + " (" + elementTypeName(t.first) +
               (t.second < 0 ? "" : ", rank " + std::to_string(t.second)) + ")";
      };
      error = "'" + name + "' is declared as " +
              describe(it->second.first, it->second.second) + " and as " +
              describe(where, {elementType, rank});
      return false;
    };
    for (const auto &[kind, values] :
         {std::make_pair("a graph input", &graph.input()),
          std::make_pair("a value_info", &graph.value_info()),
          std::make_pair("a graph output", &graph.output())})
      for (const onnx::ValueInfoProto &value : *values) {
        if (!value.type().has_tensor_type())
          continue;
        const auto &type = value.type().tensor_type();
        if (!declare(value.name(), kind, type.elem_type(),
                     type.has_shape() ? type.shape().dim_size() : -1))
          return false;
      }
    for (const onnx::TensorProto &tensor : graph.initializer())
      if (!declare(tensor.name(), "an initializer", tensor.data_type(),
                   tensor.dims_size()))
        return false;

    if (!checkShapeOperands(graph))
      return false;

    std::set<std::string> defined;
    for (const auto &input : graph.input())
      defined.insert(input.name());
    for (const auto &tensor : graph.initializer())
      defined.insert(tensor.name());
    for (int index = 0; index < graph.node_size(); ++index)
      for (const std::string &output : graph.node(index).output())
        if (!output.empty() && !defined.insert(output).second) {
          const onnx::NodeProto &node = graph.node(index);
          error = "node '" + nodeDisplayName(node, index) + "' (" +
                  node.op_type() + ") defines '" + output +
                  "', which is already defined (ONNX graphs assign each "
                  "value once)";
          return false;
        }
    if (graph.sparse_initializer_size()) {
      error = "sparse initializers are not supported ('" +
              graph.sparse_initializer(0).values().name() + "')";
      return false;
    }
    for (int index = 0; index < graph.node_size(); ++index) {
      const onnx::NodeProto &node = graph.node(index);
      for (const onnx::AttributeProto &attribute : node.attribute()) {
        std::string where = "attribute '" + attribute.name() + "' of node '" +
                            nodeDisplayName(node, index) + "' (" +
                            node.op_type() + ")";
        if (attribute.has_t() && !check(attribute.t(), where))
          return false;
        for (const onnx::TensorProto &tensor : attribute.tensors())
          if (!check(tensor, where))
            return false;
        if (attribute.has_sparse_tensor() ||
            attribute.sparse_tensors_size()) {
          error = where + ": sparse tensors are not supported";
          return false;
        }
        if (node.op_type() == "Transpose" && node.domain().empty() &&
            attribute.name() == "perm" && !isPermutation(attribute.ints())) {
          // libonnx's inference indexes the input's dims with it.
          error = where + ": [" + joinIntegers(attribute.ints()) +
                  "] is not a permutation of 0.." +
                  std::to_string(attribute.ints_size() - 1);
          return false;
        }
        if (attribute.has_g() && !check(attribute.g()))
          return false;
        for (const onnx::GraphProto &subgraph : attribute.graphs())
          if (!check(subgraph))
            return false;
      }
    }
    return true;
  }

private:
  /// libonnx's inference gives Reshape, Expand and ConstantOfShape as many
  /// dimensions as their shape operand has elements, allocating one per
  /// dimension, before anything checks them. A shape operand's element count
  /// is bounded here from what the file states (declarations, stored
  /// tensors) through the ops that carry it (same-size ops, Slice, Concat's
  /// sum, broadcasting's product); one that can exceed kMaxRank is refused.
  bool checkShapeOperands(const onnx::GraphProto &graph) {
    constexpr uint64_t kMaxRank = 64;
    if (!checkConstantShapes(graph))
      return false;
    ShapeOperandBounds bounds(graph);
    for (int index = 0; index < graph.node_size(); ++index) {
      const onnx::NodeProto &node = graph.node(index);
      int operand = shapeOperand(node);
      if (operand < 0)
        continue;
      const std::string &name = node.input(operand);
      std::optional<ElementBound> bound = bounds.of(name, 0);
      if (!bound || bound->elements <= kMaxRank)
        continue;
      std::string elements = std::to_string(bound->elements) + " elements";
      error = "node '" + nodeDisplayName(node, index) + "' (" +
              node.op_type() + "): its shape '" + name + "' " +
              (bound->source == name
                   ? "is declared with " + elements
                   : "can have " + elements + " (from '" + bound->source +
                         "', declared with " +
                         std::to_string(bound->sourceElements) + ")") +
              ", a rank above " + std::to_string(kMaxRank);
      return false;
    }
    return true;
  }

  /// libonnx's inference gives Reshape, Expand and ConstantOfShape the
  /// dimensions a constant shape operand states, without checking them
  /// against the input (a Reshape to [2.6e18] then made a later node's
  /// inference add 2.6e18 dimensions, for minutes). A constant shape whose
  /// sizes multiply to more than kMaxElements is refused.
  bool checkConstantShapes(const onnx::GraphProto &graph) {
    std::map<std::string, const onnx::TensorProto *> constants;
    for (const onnx::TensorProto &tensor : graph.initializer())
      constants[tensor.name()] = &tensor;
    for (const onnx::NodeProto &node : graph.node())
      if (node.op_type() == "Constant" && node.output_size() == 1)
        for (const onnx::AttributeProto &attribute : node.attribute())
          if (attribute.name() == "value" && attribute.has_t())
            constants[node.output(0)] = &attribute.t();
    for (int index = 0; index < graph.node_size(); ++index) {
      const onnx::NodeProto &node = graph.node(index);
      int operand = shapeOperand(node);
      if (operand < 0)
        continue;
      auto constant = constants.find(node.input(operand));
      if (constant == constants.end() ||
          constant->second->data_type() != onnx::TensorProto::INT64)
        continue;
      std::vector<char> bytes = tensorProtoBytes(*constant->second, 8);
      uint64_t elements = 1;
      for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
        int64_t size;
        std::memcpy(&size, bytes.data() + i, 8);
        if (size > 0) // -1 and 0 take their size from the input
          elements = saturatingProduct(elements, uint64_t(size));
      }
      if (elements <= kMaxElements)
        continue;
      error = "node '" + nodeDisplayName(node, index) + "' (" +
              node.op_type() + "): its shape '" + node.input(operand) +
              "' asks for more than 2^48 elements";
      return false;
    }
    return true;
  }

  /// An upper bound on a value's element count, and the declaration or
  /// stored tensor it comes from.
  struct ElementBound {
    uint64_t elements;
    std::string source;
    uint64_t sourceElements;
  };
  class ShapeOperandBounds {
  public:
    explicit ShapeOperandBounds(const onnx::GraphProto &graph) {
      for (const auto *values : {&graph.input(), &graph.value_info()})
        for (const onnx::ValueInfoProto &value : *values)
          if (std::optional<uint64_t> count = staticCount(value))
            stated[value.name()] = *count;
      for (const onnx::TensorProto &tensor : graph.initializer())
        stated[tensor.name()] = count(tensor.dims());
      for (const onnx::NodeProto &node : graph.node())
        for (const std::string &output : node.output())
          producers[output] = &node;
    }

    std::optional<ElementBound> of(const std::string &name, int depth) {
      if (auto known = memo.find(name); known != memo.end())
        return known->second;
      std::optional<ElementBound> bound = compute(name, depth);
      memo[name] = bound;
      return bound;
    }

  private:
    static uint64_t count(const google::protobuf::RepeatedField<int64_t> &dims) {
      uint64_t elements = 1;
      for (int64_t dim : dims)
        elements = saturatingProduct(elements, dim < 0 ? 0 : uint64_t(dim));
      return elements;
    }
    static std::optional<uint64_t> staticCount(const onnx::ValueInfoProto &v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
        return std::nullopt;
      uint64_t elements = 1;
      for (const auto &dim : v.type().tensor_type().shape().dim()) {
        if (!dim.has_dim_value())
          return std::nullopt;
        elements = saturatingProduct(
            elements, dim.dim_value() < 0 ? 0 : uint64_t(dim.dim_value()));
      }
      return elements;
    }

    std::optional<ElementBound> compute(const std::string &name, int depth) {
      if (auto value = stated.find(name); value != stated.end())
        return ElementBound{value->second, name, value->second};
      auto producer = producers.find(name);
      if (producer == producers.end() || depth > 64)
        return std::nullopt;
      const onnx::NodeProto &node = *producer->second;
      if (!node.domain().empty() || node.input_size() == 0)
        return std::nullopt;
      static const std::set<std::string> kSameSize = {
          "Identity", "Cast",  "Neg",     "Abs",       "Ceil",
          "Floor",    "Relu",  "Sign",    "Not",       "Squeeze",
          "Unsqueeze", "Flatten", "Slice", "Reciprocal"};
      static const std::set<std::string> kBroadcasting = {
          "Add",   "Sub",     "Mul",  "Div",  "Max", "Min", "Mod",
          "Pow",   "Where",   "Equal", "Less", "Greater", "And", "Or"};
      bool sum = node.op_type() == "Concat";
      if (kSameSize.count(node.op_type()))
        return of(node.input(0), depth + 1);
      if (!sum && !kBroadcasting.count(node.op_type()))
        return std::nullopt;
      std::optional<ElementBound> total;
      for (const std::string &input : node.input()) {
        std::optional<ElementBound> bound = of(input, depth + 1);
        if (!bound)
          return std::nullopt;
        if (!total) {
          total = bound;
          continue;
        }
        uint64_t elements =
            sum ? std::min(total->elements + bound->elements, kMaxElements + 1)
                : saturatingProduct(total->elements, bound->elements);
        if (bound->sourceElements > total->sourceElements)
          total = bound;
        total->elements = elements;
      }
      return total;
    }

    std::map<std::string, uint64_t> stated;
    std::map<std::string, const onnx::NodeProto *> producers;
    std::map<std::string, std::optional<ElementBound>> memo;
  };

  /// A declared shape's dims are sizes: not negative (-1 is not "unknown"
  /// in ONNX; a dim_param or no value is).
  bool declared(const onnx::ValueInfoProto &value) {
    if (!value.type().has_tensor_type() ||
        !value.type().tensor_type().has_shape())
      return true;
    const auto &dims = value.type().tensor_type().shape().dim();
    uint64_t count = 1;
    for (int i = 0; i < dims.size(); ++i) {
      if (!dims[i].has_dim_value())
        continue;
      if (dims[i].dim_value() < 0) {
        error = "'" + value.name() + "' is declared with dimension " +
                std::to_string(i) + " of size " +
                std::to_string(dims[i].dim_value()) +
                " (sizes are not negative; leave a dim unknown with a "
                "dim_param)";
        return false;
      }
      // As for stored tensors: no tensor this large can be fed, and
      // libonnx's inference takes the length of a shape operand for a rank
      // (an Expand by a declared 5.5e17-element shape allocated without
      // bound).
      uint64_t dim = static_cast<uint64_t>(dims[i].dim_value());
      if (dim > kMaxElements) {
        error = "'" + value.name() + "' is declared with dimension " +
                std::to_string(i) + " of size " + std::to_string(dim) +
                ", above 2^48";
        return false;
      }
      count = dim && count > kMaxElements / dim ? kMaxElements + 1
                                                : count * dim;
    }
    if (count > kMaxElements) {
      error = "'" + value.name() + "' is declared with more than 2^48 "
              "elements";
      return false;
    }
    return true;
  }

  /// The element count the dims give, and that the data holds it.
  bool check(const onnx::TensorProto &tensor, const std::string &where) {
    using T = onnx::TensorProto;
    int32_t type = tensor.data_type();
    if (!T::DataType_IsValid(type) || type == T::UNDEFINED) {
      error = where + " has data type " + std::to_string(type) +
              ", which is not an ONNX tensor type";
      return false;
    }
    uint64_t count = 1;
    for (int64_t dim : tensor.dims()) {
      if (dim < 0) {
        error = where + " has a negative dimension (" + std::to_string(dim) +
                ")";
        return false;
      }
      // Even beside a zero dim (no elements, nothing to overflow in their
      // count): inference adds and multiplies dims (a Concat of two
      // 2^62-long axes made a negative size).
      if (static_cast<uint64_t>(dim) > kMaxElements) {
        error = where + " has a dimension of " + std::to_string(dim) +
                ", above 2^48";
        return false;
      }
      if (dim != 0 && count > kMaxElements / static_cast<uint64_t>(dim)) {
        error = where + " has more than 2^48 elements";
        return false;
      }
      count *= static_cast<uint64_t>(dim);
    }
    if (tensor.data_location() == T::EXTERNAL) {
      error = where + " has external data, which only initializers may have";
      return false;
    }
    uint64_t width = 0;    // bytes per element in raw_data
    uint64_t typed = 0;    // values in the typed field
    uint64_t perElement = 1;
    switch (type) {
    case T::FLOAT: width = 4; typed = tensor.float_data_size(); break;
    case T::COMPLEX64:
      width = 8; typed = tensor.float_data_size(); perElement = 2; break;
    case T::DOUBLE: width = 8; typed = tensor.double_data_size(); break;
    case T::COMPLEX128:
      width = 16; typed = tensor.double_data_size(); perElement = 2; break;
    case T::INT64: width = 8; typed = tensor.int64_data_size(); break;
    case T::UINT32: width = 4; typed = tensor.uint64_data_size(); break;
    case T::UINT64: width = 8; typed = tensor.uint64_data_size(); break;
    case T::STRING: typed = tensor.string_data_size(); break;
    case T::INT32: width = 4; typed = tensor.int32_data_size(); break;
    case T::INT16: case T::UINT16: case T::FLOAT16: case T::BFLOAT16:
      width = 2; typed = tensor.int32_data_size(); break;
    default: // INT8, UINT8, BOOL
      width = 1; typed = tensor.int32_data_size(); break;
    }
    if (tensor.has_raw_data() && type != T::STRING) {
      uint64_t bytes = tensor.raw_data().size();
      if (bytes != count * width) {
        error = where + " holds " + std::to_string(bytes) +
                " bytes of raw data; its dims say " + std::to_string(count) +
                " elements of " + std::to_string(width) + " bytes";
        return false;
      }
      return true;
    }
    if (typed != count * perElement) {
      error = where + " holds " + std::to_string(typed) +
              " values; its dims say " + std::to_string(count) + " elements";
      return false;
    }
    return true;
  }

  std::string &error;
};

/// Declared shapes of computed values are claims, not facts: libonnx's
/// inference keeps a declared size where it computes a symbolic one, so an
/// output declared [2^40, 3] of a Relu on [n, 3] became a Relu over 2^40
/// rows, run past the data (and [2, 3] on a batch of 1, a made-up row).
/// The sizes of graph outputs and value_info are forgotten (ranks kept)
/// before inference, so that nodes get the sizes their inputs give them.
/// Returns the outputs' declared types, by output index.
std::map<int, onnx::TypeProto> forgetDeclaredSizes(onnx::GraphProto &graph) {
  std::set<std::string> given;
  for (const auto &input : graph.input())
    given.insert(input.name());
  for (const auto &tensor : graph.initializer())
    given.insert(tensor.name());
  auto forget = [](onnx::ValueInfoProto &value) {
    if (!value.type().has_tensor_type() ||
        !value.type().tensor_type().has_shape())
      return false;
    bool any = false;
    auto *shape = value.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto &dim : *shape->mutable_dim())
      if (dim.has_dim_value()) {
        dim.clear_dim_value();
        any = true;
      }
    return any;
  };
  std::map<int, onnx::TypeProto> declared;
  for (int i = 0; i < graph.output_size(); ++i) {
    onnx::ValueInfoProto &output = *graph.mutable_output(i);
    onnx::TypeProto type = output.type();
    if (!given.count(output.name()) && forget(output))
      declared[i] = type;
  }
  for (auto &value : *graph.mutable_value_info())
    if (!given.count(value.name()))
      forget(value);
  return declared;
}

/// After inference: the outputs' computed types go into value_info, where
/// the importer reads what nodes produce, and the outputs get their
/// declarations back, which the function's results keep (the importer casts
/// to them, and refuses a computed size that contradicts one).
void restoreDeclaredOutputs(onnx::GraphProto &graph,
                            const std::map<int, onnx::TypeProto> &declared) {
  for (const auto &[index, type] : declared) {
    *graph.add_value_info() = graph.output(index);
    *graph.mutable_output(index)->mutable_type() = type;
  }
}

/// The rank of every value libonnx's inference (or the graph) gives a rank.
std::map<std::string, int64_t> knownRanks(const onnx::GraphProto &graph) {
  std::map<std::string, int64_t> ranks;
  auto add = [&](const onnx::ValueInfoProto &value) {
    if (value.type().has_tensor_type() &&
        value.type().tensor_type().has_shape())
      ranks[value.name()] = value.type().tensor_type().shape().dim_size();
  };
  for (const auto &value : graph.input())
    add(value);
  for (const auto &value : graph.value_info())
    add(value);
  for (const auto &value : graph.output())
    add(value);
  for (const auto &tensor : graph.initializer())
    ranks[tensor.name()] = tensor.dims_size();
  return ranks;
}

/// libonnx's inference of LayerNormalization with its Mean and InvStdDev
/// outputs indexes the input's dims with an unchecked axis (with one output
/// it checks). The ranks come from an inference of a copy whose
/// LayerNormalization nodes have one output.
bool checkLayerNormAxes(const onnx::ModelProto &model, std::string &error) {
  auto hasStatistics = [](const onnx::NodeProto &node) {
    return node.op_type() == "LayerNormalization" && node.domain().empty() &&
           node.output_size() > 1;
  };
  const auto &nodes = model.graph().node();
  if (std::none_of(nodes.begin(), nodes.end(), hasStatistics))
    return true;
  onnx::ModelProto copy = model;
  for (auto &node : *copy.mutable_graph()->mutable_node())
    if (hasStatistics(node))
      while (node.output_size() > 1)
        node.mutable_output()->RemoveLast();
  try {
    onnx::ShapeInferenceOptions options{/*check_type=*/false,
                                        /*error_mode=*/0,
                                        /*enable_data_propagation=*/false};
    onnx::shape_inference::InferShapes(
        copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &) {
    // Only the ranks are wanted here; errors are reported by the real run.
  }
  std::map<std::string, int64_t> ranks = knownRanks(copy.graph());
  for (int index = 0; index < nodes.size(); ++index) {
    const onnx::NodeProto &node = nodes[index];
    if (!hasStatistics(node) || node.input_size() == 0)
      continue;
    auto rank = ranks.find(node.input(0));
    if (rank == ranks.end())
      continue;
    int64_t axis = -1;
    for (const auto &attribute : node.attribute())
      if (attribute.name() == "axis")
        axis = attribute.i();
    if (axis < -rank->second || axis >= rank->second) {
      error = "node '" + nodeDisplayName(node, index) +
              "' (LayerNormalization): axis " +
              std::to_string(axis) + " is out of range for its input '" +
              node.input(0) + "' of rank " + std::to_string(rank->second);
      return false;
    }
  }
  return true;
}
/// Checks that the inputs a node's schema binds to one type parameter (the
/// "T" of Concat(T...)) have one element type. libonnx's own check lets
/// some mismatches through (Concat of int64 and int32 shape pieces), and
/// operator importers rely on it.
bool checkTypeParameters(const onnx::ModelProto &model, std::string &error) {
  std::map<std::string, int32_t> elementTypes;
  auto add = [&](const onnx::ValueInfoProto &value) {
    if (value.type().has_tensor_type())
      elementTypes[value.name()] = value.type().tensor_type().elem_type();
  };
  const onnx::GraphProto &graph = model.graph();
  for (const auto *values : {&graph.input(), &graph.value_info(),
                             &graph.output()})
    for (const auto &value : *values)
      add(value);
  for (const auto &tensor : graph.initializer())
    elementTypes[tensor.name()] = tensor.data_type();
  for (const auto &node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      for (const auto &attribute : node.attribute())
        if (attribute.has_t())
          elementTypes[node.output(0)] = attribute.t().data_type();
  std::map<std::string, int> opsets;
  for (const auto &opset : model.opset_import())
    opsets[opset.domain()] = static_cast<int>(opset.version());
  for (int index = 0; index < graph.node_size(); ++index) {
    const onnx::NodeProto &node = graph.node(index);
    auto opset = opsets.find(node.domain());
    const onnx::OpSchema *schema =
        opset == opsets.end()
            ? nullptr
            : onnx::OpSchemaRegistry::Schema(node.op_type(), opset->second,
                                             node.domain());
    if (!schema || schema->inputs().empty())
      continue;
    std::map<std::string, std::pair<int, int32_t>> bound;
    for (int i = 0; i < node.input_size(); ++i) {
      const auto &formals = schema->inputs();
      const auto &formal = formals[std::min<size_t>(i, formals.size() - 1)];
      auto type = elementTypes.find(node.input(i));
      if (node.input(i).empty() || type == elementTypes.end())
        continue;
      auto [it, inserted] =
          bound.try_emplace(formal.GetTypeStr(), i, type->second);
      if (inserted || it->second.second == type->second ||
          (i >= static_cast<int>(formals.size()) &&
           !formal.GetIsHomogeneous()))
        continue;
      error = "node '" + nodeDisplayName(node, index) + "' (" +
              node.op_type() + "): inputs " +
              std::to_string(it->second.first) + " ('" +
              node.input(it->second.first) + "', " +
              elementTypeName(it->second.second) + ") and " +
              std::to_string(i) + " ('" + node.input(i) + "', " +
              elementTypeName(type->second) + ") must have the same type (" +
              formal.GetTypeStr() + ")";
      return false;
    }
  }
  return true;
}

/// A model that imports a newer opset of the ONNX domain than libonnx
/// knows would be read with older operators' meanings (ONNX Runtime
/// refuses it too).
bool checkOpsetVersions(const onnx::ModelProto &model, std::string &error) {
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto &opset : model.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    auto range = ranges.find(domain);
    if (range == ranges.end() || opset.version() <= range->second.second)
      continue;
    error = "the model imports opset " + std::to_string(opset.version()) +
            " of the " + (domain.empty() ? "ONNX" : "'" + domain + "'") +
            " domain; the newest this importer supports is " +
            std::to_string(range->second.second) +
            " (export with an older opset, e.g. torch.onnx.export(..., "
            "opset_version=" + std::to_string(range->second.second) + "))";
    return false;
  }
  return true;
}
} // namespace

bool specula::onnx_import::loadModel(llvm::StringRef contents,
                                     const std::string &modelDir,
                                     const LoadOptions &options,
                                     onnx::ModelProto &model,
                                     std::string &error) {
  try {
    if (looksTextual(contents)) {
      std::string text = contents.str();
      onnx::OnnxParser parser(text.c_str());
      auto status = parser.Parse(model);
      if (!status.IsOK()) {
        error = "invalid textual ONNX: " + status.ErrorMessage();
        return false;
      }
    } else if (contents.size() > static_cast<size_t>(INT_MAX) ||
               !model.ParseFromArray(contents.data(),
                                     static_cast<int>(contents.size()))) {
      error = "not a valid ONNX protobuf (truncated or corrupt file?)";
      return false;
    }
    if (!model.has_graph()) {
      error = "the model has no graph";
      return false;
    }
    if (!checkOpsetVersions(model, error))
      return false;
    for (auto &tensor : *model.mutable_graph()->mutable_initializer())
      if (!loadExternalData(tensor, modelDir, error))
        return false;
    // libonnx trusts what it reads: check the tensors and the attributes
    // its inference indexes with before any of it runs.
    if (!GraphValidator(error).check(model.graph()))
      return false;
    if (options.runChecker)
      onnx::checker::check_model(model);
    if (options.beforeInference && !options.beforeInference(model))
      return false;
    if (options.runShapeInference) {
      if (!checkLayerNormAxes(model, error))
        return false;
      std::map<int, onnx::TypeProto> declaredOutputs =
          forgetDeclaredSizes(*model.mutable_graph());
      // Data propagation dereferences the types of a node's inputs without
      // checking them, which are missing after an earlier node's inference
      // failed (a Shape of such a value crashes). So inference runs first
      // without it, on a copy, and reports any failure; only a model that
      // infers cleanly gets the run with data propagation.
      onnx::ModelProto copy = model;
      onnx::shape_inference::InferShapes(
          copy, onnx::OpSchemaRegistry::Instance(),
          onnx::ShapeInferenceOptions{/*check_type=*/true, /*error_mode=*/1,
                                      /*enable_data_propagation=*/false});
      onnx::shape_inference::InferShapes(
          model, onnx::OpSchemaRegistry::Instance(),
          onnx::ShapeInferenceOptions{/*check_type=*/true, /*error_mode=*/1,
                                      /*enable_data_propagation=*/true});
      if (!checkTypeParameters(model, error))
        return false;
      restoreDeclaredOutputs(*model.mutable_graph(), declaredOutputs);
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
