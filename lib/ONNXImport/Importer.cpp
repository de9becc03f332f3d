//===- Importer.cpp - ONNX graph to func.func on tensors ------------------===//

#include "specula/ONNXImport.h"

#include "lib/ONNXImport/HalfToFloat.h"
#include "lib/ONNXImport/ModelContract.h"
#include "lib/ONNXImport/ModelLoader.h"
#include "lib/ONNXImport/NodeImporter.h"
#include "lib/ONNXImport/TensorProtoData.h"

#include "dialects/spec/SpecDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringSet.h"

#include <set>
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

using namespace specula;
using namespace specula::onnx_import;

namespace {
using IORole = std::pair<specula::spec::IOKind, std::optional<int64_t>>;
} // namespace

/// What the decoder-export naming convention (Hugging Face optimum) says an
/// input or output is: the #spec.io the passes find values by.
static std::optional<IORole> ioRoleOf(StringRef name) {
  using specula::spec::IOKind;
  if (name == "input_ids")
    return IORole{IOKind::TokenIds, std::nullopt};
  if (name == "position_ids")
    return IORole{IOKind::PositionIds, std::nullopt};
  if (name == "attention_mask")
    return IORole{IOKind::AttentionMask, std::nullopt};
  if (name == "logits")
    return IORole{IOKind::Logits, std::nullopt};
  if (name == "hidden_states")
    return IORole{IOKind::HiddenStates, std::nullopt};
  if (name == "previous_hidden_states")
    return IORole{IOKind::PreviousHiddenStates, std::nullopt};
  int64_t index;
  // past_key_values.{i}.key|value, present.{i}.key|value
  for (auto [prefix, key, value] :
       {std::make_tuple("past_key_values.", IOKind::PastKey, IOKind::PastValue),
        std::make_tuple("present.", IOKind::PresentKey,
                        IOKind::PresentValue)}) {
    if (!name.starts_with(prefix))
      continue;
    auto [layer, part] = name.drop_front(StringRef(prefix).size()).split('.');
    if (layer.getAsInteger(10, index) || index < 0)
      return std::nullopt;
    if (part == "key")
      return IORole{key, index};
    if (part == "value")
      return IORole{value, index};
    return std::nullopt;
  }
  if (name.consume_front("medusa_logits.") && !name.getAsInteger(10, index) &&
      index >= 1)
    return IORole{IOKind::HeadLogits, index};
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

FailureOr<Type> specula::onnx_import::convertElementType(MLIRContext *context,
                                                         int32_t onnxType) {
  Builder b(context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return b.getI8Type();
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return b.getI16Type();
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return b.getI32Type();
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return b.getI64Type();
  default:
    return failure();
  }
}


/// A dense_resource blob that owns `bytes` (moved, not copied), named after
/// `tensor`.
static ElementsAttr blobOwning(const onnx::TensorProto &tensor,
                              RankedTensorType type, std::string &&bytes) {
  auto *held = new std::string(std::move(bytes));
  AsmResourceBlob blob(
      ArrayRef<char>(held->data(), held->size()), alignof(uint64_t),
      [held](void *, size_t, size_t) { delete held; },
      /*dataIsMutable=*/true);
  std::string blobName = tensor.name().empty() ? "onnx_tensor" : tensor.name();
  return DenseResourceElementsAttr::get(type, blobName, std::move(blob));
}

FailureOr<ElementsAttr> specula::onnx_import::convertTensor(
    const onnx::TensorProto &tensor, RankedTensorType type,
    int64_t maxInlineElements, std::string &error,
    std::string *movableRawData) {
  Type elementType = type.getElementType();
  int64_t count = type.getNumElements();
  // Whole weights go to their blob as they are, 8-byte aligned (a heap
  // string's buffer is).
  if (movableRawData && tensor.has_raw_data() && count > maxInlineElements &&
      !elementType.isInteger(1) &&
      static_cast<int64_t>(movableRawData->size()) ==
          count * (elementType.getIntOrFloatBitWidth() / 8) &&
      reinterpret_cast<uintptr_t>(movableRawData->data()) %
              alignof(uint64_t) ==
          0)
    return blobOwning(tensor, type, std::move(*movableRawData));
  if (elementType.isInteger(1)) {
    // Bytes in ONNX, bits in MLIR's raw buffers: go through bools.
    SmallVector<bool> bits;
    for (char c : tensorProtoBytes(tensor, 1))
      bits.push_back(c != 0);
    if (static_cast<int64_t>(bits.size()) != count) {
      error = "holds " + std::to_string(bits.size()) + " elements, expected " +
              std::to_string(count);
      return failure();
    }
    return ElementsAttr(DenseElementsAttr::get(type, bits));
  }
  unsigned width = elementType.getIntOrFloatBitWidth() / 8;
  std::vector<char> bytes = tensorProtoBytes(tensor, width);
  if (static_cast<int64_t>(bytes.size()) != count * width) {
    error = "holds " + std::to_string(bytes.size()) + " bytes, expected " +
            std::to_string(count * width) + " for " +
            std::to_string(count) + " elements";
    return failure();
  }
  if (count <= maxInlineElements) {
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, bytes, splat)) {
      error = "cannot be represented as " + std::to_string(count) +
              " elements";
      return failure();
    }
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, bytes));
  }
  std::string blobName = tensor.name().empty() ? "onnx_tensor" : tensor.name();
  return ElementsAttr(DenseResourceElementsAttr::get(
      type, blobName,
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t))));
}

//===----------------------------------------------------------------------===//
// Handler registry
//===----------------------------------------------------------------------===//

void OpHandlerRegistry::add(StringRef opType, int minSince, int maxSince,
                            OpHandler handler) {
  handlers[opType].push_back({minSince, maxSince, std::move(handler)});
}

const OpHandler *OpHandlerRegistry::lookup(StringRef opType,
                                           int sinceVersion) const {
  auto it = handlers.find(opType);
  if (it == handlers.end())
    return nullptr;
  for (const Entry &entry : it->second)
    if (entry.minSince <= sinceVersion && sinceVersion <= entry.maxSince)
      return &entry.handler;
  return nullptr;
}

std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>>
OpHandlerRegistry::supported() const {
  std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>> result;
  for (const auto &op : handlers) {
    std::vector<std::pair<int, int>> ranges;
    for (const Entry &entry : op.second)
      ranges.emplace_back(entry.minSince, entry.maxSince);
    llvm::sort(ranges);
    result.emplace_back(op.first().str(), ranges);
  }
  llvm::sort(result);
  return result;
}

const OpHandlerRegistry &specula::onnx_import::getOpHandlers() {
  static const OpHandlerRegistry registry = [] {
    OpHandlerRegistry r;
    registerElementwiseHandlers(r);
    registerMatMulHandlers(r);
    registerShapeHandlers(r);
    registerReductionHandlers(r);
    registerGenerateHandlers(r);
    registerSliceHandlers(r);
    return r;
  }();
  return registry;
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

namespace specula::onnx_import {
class GraphImporter {
public:
  GraphImporter(ModuleOp module, const onnx::ModelProto &model,
                StringRef fileName, const ONNXImportOptions &options)
      : context(module.getContext()), module(module), model(model),
        options(options), builder(context),
        fileLoc(FileLineColLoc::get(context, fileName, 0, 0)),
        fileName(fileName.str()) {}
  /// Lets the import move the initializers' bytes out of `owned` (the
  /// model it imports) into their blobs.
  GraphImporter &movingWeightsOutOf(onnx::ModelProto &owned) {
    weightsOwner = &owned;
    return *this;
  }

  LogicalResult run();
  /// Whether every node's operator version has a handler; an error naming
  /// every one that does not, otherwise.
  LogicalResult checkOperators();

  Location nodeLoc(const onnx::NodeProto &node, int index) {
    return NameLoc::get(StringAttr::get(context, nodeDisplayName(node, index)),
                        fileLoc);
  }

  MLIRContext *context;
  ModuleOp module;
  const onnx::ModelProto &model;
  onnx::ModelProto *weightsOwner = nullptr;
  const ONNXImportOptions &options;
  OpBuilder builder;
  Location fileLoc;
  std::string fileName;
  int opset = 0;
  llvm::StringMap<Value> values;
  llvm::StringMap<const onnx::TypeProto *> valueTypes;

private:
  /// The function's arguments (graph inputs that are not initializers) and
  /// results, as declared.
  struct Signature {
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<const onnx::ValueInfoProto *> args;
  };

  LogicalResult checkOperatorsSupported(SmallVectorImpl<int> &versions);
  FailureOr<Signature> readSignature();
  OwningOpRef<func::FuncOp> createFunction(const Signature &signature);
  LogicalResult importInitializers();
  LogicalResult importNodes(ArrayRef<int> versions);
  FailureOr<SmallVector<Value>> collectResults(ArrayRef<Type> declared);
  FailureOr<RankedTensorType> convertValueType(const onnx::ValueInfoProto &info,
                                               StringRef what);
  void attachModelAttributes(func::FuncOp func);
};
} // namespace specula::onnx_import

FailureOr<RankedTensorType>
GraphImporter::convertValueType(const onnx::ValueInfoProto &info,
                                StringRef what) {
  auto fail = [&](const Twine &why) {
    return emitError(fileLoc) << what << " '" << info.name() << "' " << why;
  };
  if (!info.type().has_tensor_type())
    return fail("is not a tensor (sequences, maps and optionals are not "
                "supported)");
  const auto &tensorType = info.type().tensor_type();
  FailureOr<Type> elementType =
      convertElementType(context, tensorType.elem_type());
  if (failed(elementType))
    return fail("has unsupported element type " +
                elementTypeName(tensorType.elem_type()));
  if (!tensorType.has_shape())
    return fail("has no known rank");
  SmallVector<int64_t> shape;
  for (const auto &dim : tensorType.shape().dim())
    shape.push_back(dim.has_dim_value() ? dim.dim_value()
                                        : ShapedType::kDynamic);
  return RankedTensorType::get(shape, *elementType);
}

LogicalResult
GraphImporter::checkOperatorsSupported(SmallVectorImpl<int> &versions) {
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset == 0)
    return emitError(fileLoc) << "the model does not import the default ONNX "
                                 "operator set";
  // Every unsupported operator at once, with the nodes that use it.
  std::vector<std::pair<std::string, SmallVector<std::string>>> unsupported;
  const OpHandlerRegistry &handlers = getOpHandlers();
  for (auto [index, node] : llvm::enumerate(model.graph().node())) {
    std::string name = nodeDisplayName(node, index);
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    std::optional<int> since =
        domain.empty() ? operatorSinceVersion(node.op_type(), domain, opset)
                       : std::nullopt;
    versions.push_back(since.value_or(0));
    if (since && handlers.lookup(node.op_type(), *since))
      continue;
    std::string key =
        (domain.empty() ? "" : domain + ".") + node.op_type() +
        (since ? " (opset " + std::to_string(opset) + ", schema version " +
                     std::to_string(*since) + ")"
               : domain.empty() ? " (unknown to ONNX at opset " +
                                      std::to_string(opset) + ")"
                                : " (custom domain)");
    auto it = llvm::find_if(unsupported,
                            [&](const auto &entry) { return entry.first == key; });
    if (it == unsupported.end())
      it = unsupported.insert(unsupported.end(), {key, {}});
    it->second.push_back(name);
  }
  if (unsupported.empty())
    return success();
  size_t nodes = 0;
  for (auto &entry : unsupported)
    nodes += entry.second.size();
  InFlightDiagnostic diag = emitError(fileLoc)
                            << unsupported.size()
                            << " unsupported ONNX operator"
                            << (unsupported.size() == 1 ? "" : "s") << " in "
                            << nodes << " node" << (nodes == 1 ? "" : "s")
                            << ": ";
  llvm::interleaveComma(unsupported, diag, [&](const auto &entry) {
    diag << entry.first << " x" << entry.second.size() << " [";
    ArrayRef<std::string> names = entry.second;
    llvm::interleaveComma(names.take_front(3), diag);
    if (names.size() > 3)
      diag << ", ...";
    diag << "]";
  });
  return diag;
}

void GraphImporter::attachModelAttributes(func::FuncOp func) {
  llvm::StringMap<std::string> meta;
  for (const auto &prop : model.metadata_props())
    meta[prop.key()] = prop.value();
  auto intValue = [&](StringRef key) -> std::optional<int64_t> {
    auto it = meta.find(key);
    int64_t value;
    if (it == meta.end() || StringRef(it->second).getAsInteger(10, value))
      return std::nullopt;
    return value;
  };
  auto roleName = meta.find("spec_role");
  if (roleName != meta.end()) {
    if (std::optional<spec::FunctionRole> kind =
            spec::symbolizeFunctionRole(roleName->second)) {
      auto role = spec::RoleAttr::getChecked(
          [&] { return emitWarning(fileLoc) << "metadata spec_role: "; },
          context, *kind, intValue("spec_depth"));
      if (role)
        func->setAttr(spec::SpecDialect::kRoleAttrName, role);
    } else {
      emitWarning(fileLoc) << "metadata spec_role '" << roleName->second
                           << "' is not a Specula role; ignored";
    }
  }
  if (std::optional<int64_t> vocab = intValue("vocab_size")) {
    auto tokenizer = meta.find("tokenizer_sha256");
    auto config = spec::ModelConfigAttr::getChecked(
        [&] { return emitWarning(fileLoc) << "model metadata: "; }, context,
        *vocab, intValue("bos_token_id"), intValue("eos_token_id"),
        intValue("pad_token_id"), intValue("max_position_embeddings"),
        tokenizer == meta.end() ? StringAttr()
                                : StringAttr::get(context, tokenizer->second));
    if (config)
      func->setAttr(spec::SpecDialect::kConfigAttrName, config);
  }
}

FailureOr<GraphImporter::Signature> GraphImporter::readSignature() {
  const onnx::GraphProto &graph = model.graph();
  // Inputs that are initializers are weights, not arguments.
  llvm::StringSet<> initializerNames;
  for (const auto &tensor : graph.initializer())
    initializerNames.insert(tensor.name());
  Signature signature;
  for (const auto &info : graph.input()) {
    if (initializerNames.contains(info.name()))
      continue;
    FailureOr<RankedTensorType> type = convertValueType(info, "input");
    if (failed(type))
      return failure();
    signature.argTypes.push_back(*type);
    signature.args.push_back(&info);
  }
  for (const auto &info : graph.output()) {
    FailureOr<RankedTensorType> type = convertValueType(info, "output");
    if (failed(type))
      return failure();
    signature.resultTypes.push_back(*type);
  }
  return signature;
}

/// The function, detached (so that a failure leaves the module untouched),
/// with its arguments named and their roles in the model contract.
OwningOpRef<func::FuncOp>
GraphImporter::createFunction(const Signature &signature) {
  OwningOpRef<func::FuncOp> func = func::FuncOp::create(
      fileLoc, options.functionName,
      builder.getFunctionType(signature.argTypes, signature.resultTypes));
  Block *entry = func->addEntryBlock();
  builder.setInsertionPointToStart(entry);
  for (auto [i, info] : llvm::enumerate(signature.args)) {
    values[info->name()] = entry->getArgument(i);
    func->setArgAttr(i, "onnx.name", builder.getStringAttr(info->name()));
    if (std::optional<IORole> role = ioRoleOf(info->name()))
      spec::setArgumentIO(*func, i, role->first, role->second);
  }
  for (auto [i, info] : llvm::enumerate(model.graph().output())) {
    func->setResultAttr(i, "onnx.name", builder.getStringAttr(info.name()));
    if (std::optional<IORole> role = ioRoleOf(info.name()))
      spec::setResultIO(*func, i, role->first, role->second);
  }
  return func;
}

LogicalResult GraphImporter::importInitializers() {
  for (auto [index, tensor] : llvm::enumerate(model.graph().initializer())) {
    FailureOr<Type> elementType =
        convertElementType(context, tensor.data_type());
    if (failed(elementType))
      return emitError(fileLoc) << "initializer '" << tensor.name()
                                << "' has unsupported element type "
                                << elementTypeName(tensor.data_type());
    auto type = RankedTensorType::get(
        SmallVector<int64_t>(tensor.dims().begin(), tensor.dims().end()),
        *elementType);
    std::string error;
    // (mutable_raw_data would mark a tensor of typed fields as raw.)
    std::string *movable =
        weightsOwner && tensor.has_raw_data()
            ? weightsOwner->mutable_graph()
                  ->mutable_initializer(static_cast<int>(index))
                  ->mutable_raw_data()
            : nullptr;
    FailureOr<ElementsAttr> value = convertTensor(
        tensor, type, options.maxInlineElements, error, movable);
    if (failed(value))
      return emitError(fileLoc) << "initializer '" << tensor.name() << "' "
                                << error;
    values[tensor.name()] =
        arith::ConstantOp::create(builder, fileLoc, cast<TypedAttr>(*value));
  }
  return success();
}

LogicalResult GraphImporter::importNodes(ArrayRef<int> versions) {
  for (auto [index, node] : llvm::enumerate(model.graph().node())) {
    Location loc = nodeLoc(node, index);
    for (const std::string &input : node.input())
      if (!input.empty() && !values.count(input))
        return emitError(loc) << "node input '" << input
                              << "' is not produced by any earlier node, "
                                 "input or initializer";
    NodeImporter importer(*this, node, versions[index], loc);
    const OpHandler *handler =
        getOpHandlers().lookup(node.op_type(), versions[index]);
    if (failed((*handler)(importer)))
      return failure();
    for (const std::string &output : node.output())
      if (!output.empty() && !values.count(output))
        return importer.emitError()
               << "the handler did not produce output '" << output << "'";
  }
  return success();
}

/// The values the function returns, checked against their declarations.
FailureOr<SmallVector<Value>>
GraphImporter::collectResults(ArrayRef<Type> declared) {
  SmallVector<Value> results;
  for (auto [info, type] : llvm::zip(model.graph().output(), declared)) {
    auto it = values.find(info.name());
    if (it == values.end())
      return emitError(fileLoc) << "graph output '" << info.name()
                                << "' is not produced by any node";
    Value value = it->second;
    // A declared size the graph computes otherwise is an error; one it
    // cannot compute (it depends on the inputs' sizes) is not trusted: the
    // function returns what the graph computes, as ONNX Runtime does. (A
    // declared [2^40, 3] used to make the compiled code allocate and copy
    // 2^40 rows; a declared batch of 2 on a batch of 1, a made-up row.)
    if (!tensor::CastOp::areCastCompatible(value.getType(), type))
      return emitError(fileLoc)
             << "graph output '" << info.name() << "' is declared as "
             << type << " but the graph computes " << value.getType();
    results.push_back(value);
  }
  return results;
}

LogicalResult GraphImporter::checkOperators() {
  SmallVector<int> versions;
  return checkOperatorsSupported(versions);
}

LogicalResult GraphImporter::run() {
  SmallVector<int> versions;
  if (failed(checkOperatorsSupported(versions)))
    return failure();

  // What nodes produce: value_info last, where the loader put the types
  // inference computed for graph outputs (their declarations are only what
  // the function returns).
  const onnx::GraphProto &graph = model.graph();
  for (const auto &info : graph.input())
    valueTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    valueTypes[info.name()] = &info.type();
  for (const auto &info : graph.value_info())
    valueTypes[info.name()] = &info.type();

  FailureOr<Signature> signature = readSignature();
  if (failed(signature))
    return failure();
  OwningOpRef<func::FuncOp> func = createFunction(*signature);
  if (failed(importInitializers()) || failed(importNodes(versions)))
    return failure();
  FailureOr<SmallVector<Value>> results =
      collectResults(signature->resultTypes);
  if (failed(results))
    return failure();
  func->setType(builder.getFunctionType(
      signature->argTypes, llvm::to_vector(ValueRange(*results).getTypes())));
  func::ReturnOp::create(builder, fileLoc, *results);
  attachModelAttributes(*func);
  if (failed(verify(*func)))
    return emitError(fileLoc) << "the imported IR does not verify (an "
                                 "importer bug; please report it with the "
                                 "model)";
  module.push_back(func.release());
  return success();
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

NodeImporter::NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
                           int sinceVersion, Location loc)
    : graph(graph), nodeProto(node), version(sinceVersion), location(loc) {}

OpBuilder &NodeImporter::builder() { return graph.builder; }

Value NodeImporter::operand(unsigned i) const {
  if (i >= static_cast<unsigned>(nodeProto.input_size()) ||
      nodeProto.input(i).empty())
    return nullptr;
  return graph.values.lookup(nodeProto.input(i));
}

FailureOr<RankedTensorType> NodeImporter::resultType(unsigned i,
                                                     ShapeFallback fallback) {
  const std::string &name = nodeProto.output(i);
  auto it = graph.valueTypes.find(name);
  if (it == graph.valueTypes.end() || !it->second->has_tensor_type())
    return emitError() << "shape inference gave no type for output '" << name
                       << "'";
  const onnx::TypeProto::Tensor &tensorType = it->second->tensor_type();
  FailureOr<Type> elementType =
      convertElementType(graph.context, tensorType.elem_type());
  if (failed(elementType))
    return emitError() << "output '" << name << "' has unsupported element type "
                       << elementTypeName(tensorType.elem_type());
  SmallVector<int64_t> shape;
  if (tensorType.has_shape()) {
    for (const auto &dim : tensorType.shape().dim()) {
      // Data propagation carries computed shape values into the inferred
      // type, negative ones too (ConstantOfShape of a shape holding -2).
      if (dim.has_dim_value() && dim.dim_value() < 0)
        return emitError() << "output '" << name << "' would have dimension "
                           << dim.dim_value() << "; dimensions cannot be "
                              "negative";
      shape.push_back(dim.has_dim_value() ? dim.dim_value()
                                          : ShapedType::kDynamic);
    }
    // What the importer knows of the operator's result (its rank, and the
    // static sizes it can tell) must agree with the declared or inferred
    // shape: libonnx's inference keeps a declared shape it cannot check.
    if (fallback) {
      SmallVector<int64_t> known = fallback();
      bool agree = known.size() == shape.size();
      for (size_t d = 0; agree && d < known.size(); ++d)
        agree = ShapedType::isDynamic(known[d]) ||
                ShapedType::isDynamic(shape[d]) || known[d] == shape[d];
      if (!agree)
        return emitError() << "output '" << name << "' is declared as "
                           << RankedTensorType::get(shape, *elementType)
                           << ", but " << nodeProto.op_type() << " gives "
                           << RankedTensorType::get(known, *elementType);
      // libonnx's inference forgets sizes that the importer can tell (a
      // Split by constant sizes of a tensor whose length it lost, a Concat
      // of such parts); torch's exports build shape operands that way, and
      // their static length is what Expand and Reshape need.
      for (size_t d = 0; d < known.size(); ++d)
        if (ShapedType::isDynamic(shape[d]))
          shape[d] = known[d];
    }
  } else if (fallback) {
    shape = fallback();
  } else {
    return emitError() << "shape inference gave no rank for output '" << name
                       << "'";
  }
  return RankedTensorType::get(shape, *elementType);
}

void NodeImporter::setResult(unsigned i, Value value) {
  graph.values[nodeProto.output(i)] = value;
}

DenseElementsAttr NodeImporter::constantOperand(unsigned i) const {
  Value value = operand(i);
  if (!value)
    return nullptr;
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  return constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
}

FailureOr<SmallVector<int64_t>> NodeImporter::constantInts(unsigned i,
                                                           StringRef what) {
  DenseElementsAttr attr = constantOperand(i);
  if (!attr || !attr.getElementType().isInteger())
    return emitError() << what << " (input " << i
                       << ") must be a constant integer tensor";
  SmallVector<int64_t> ints;
  for (const APInt &v : attr.getValues<APInt>())
    ints.push_back(v.getSExtValue());
  return ints;
}

const onnx::AttributeProto *NodeImporter::attribute(StringRef name) const {
  for (const auto &attr : nodeProto.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeImporter::intAttr(StringRef name, int64_t defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->i() : defaultValue;
}

float NodeImporter::floatAttr(StringRef name, float defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->f() : defaultValue;
}

std::optional<SmallVector<int64_t>>
NodeImporter::intsAttr(StringRef name) const {
  const onnx::AttributeProto *attr = attribute(name);
  if (!attr)
    return std::nullopt;
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::string NodeImporter::describe() const {
  return ("node '" + cast<NameLoc>(location).getName().getValue() + "' (" +
          nodeProto.op_type() + ", opset " + Twine(graph.opset) + ")")
      .str();
}

InFlightDiagnostic NodeImporter::emitError() {
  return mlir::emitError(location) << describe() << ": ";
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

LogicalResult specula::importONNX(ModuleOp module, StringRef source,
                                  StringRef sourceName,
                                  const ONNXImportOptions &options,
                                  ONNXImportFacts *facts) {
  MLIRContext *context = module.getContext();
  Location fileLoc = FileLineColLoc::get(context, sourceName, 0, 0);
  onnx::ModelProto model;
  std::string error;
  LoadOptions loadOptions;
  loadOptions.runChecker = options.runChecker;
  loadOptions.runShapeInference = options.runShapeInference;
  loadOptions.beforeInference = [&](const onnx::ModelProto &checked) {
    return succeeded(
        GraphImporter(module, checked, sourceName, options).checkOperators());
  };
  if (!loadModel(source,
                 llvm::sys::path::parent_path(sourceName).str(), loadOptions,
                 model, error))
    return error.empty() ? failure() : emitError(fileLoc) << error;
  if (options.halfAsFloat) {
    std::string stored = onnx_import::widenHalfToFloat(model);
    if (facts)
      facts->weightPrecision = stored;
  }
  onnx_import::addDefaultMetadata(model, options.defaultMetadata);
  if (options.requireContract) {
    ModelContractReport report = onnx_import::checkContract(model);
    if (!report.problems.empty()) {
      InFlightDiagnostic diag = emitError(fileLoc)
                                << "the model does not follow Specula's "
                                   "model contract (docs/model-contract.md; "
                                   "spec-check-model checks a file): ";
      llvm::interleave(report.problems, diag, "; ");
      return diag;
    }
  }
  context->loadDialect<arith::ArithDialect, cf::ControlFlowDialect,
                       func::FuncDialect, linalg::LinalgDialect,
                       math::MathDialect,
                       tensor::TensorDialect, spec::SpecDialect>();
  GraphImporter importer(module, model, sourceName, options);
  return importer.movingWeightsOutOf(model).run();
}

FailureOr<std::vector<std::string>>
specula::findUnsupportedOperators(StringRef source, StringRef sourceName,
                                  std::string &error) {
  onnx::ModelProto model;
  LoadOptions options;
  options.runShapeInference = false;
  if (!loadModel(source, llvm::sys::path::parent_path(sourceName).str(),
                 options, model, error))
    return failure();
  int opset = 0;
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  std::set<std::string> unsupported;
  for (const auto &node : model.graph().node()) {
    bool custom = !node.domain().empty() && node.domain() != "ai.onnx";
    std::optional<int> since =
        custom ? std::nullopt
               : operatorSinceVersion(node.op_type(), "", opset);
    if (!since || !getOpHandlers().lookup(node.op_type(), *since))
      unsupported.insert(custom ? node.domain() + "." + node.op_type()
                                : node.op_type());
  }
  return std::vector<std::string>(unsupported.begin(), unsupported.end());
}

std::vector<std::string> specula::describeSupportedOperators() {
  std::vector<std::string> lines;
  for (const auto &[name, ranges] : getOpHandlers().supported()) {
    std::string line = name + " [";
    for (auto [i, range] : llvm::enumerate(ranges)) {
      if (i)
        line += ", ";
      line += std::to_string(range.first);
      if (range.second != range.first)
        line += "-" + std::to_string(range.second);
    }
    lines.push_back(line + "]");
  }
  return lines;
}

void specula::registerONNXImportDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  func::FuncDialect, linalg::LinalgDialect, math::MathDialect,
                  tensor::TensorDialect, spec::SpecDialect>();
}

void specula::registerONNXImportTranslation() {
  static llvm::cl::opt<std::string> functionName(
      "onnx-function-name", llvm::cl::desc("Name of the imported function"),
      llvm::cl::init("main"));
  static llvm::cl::opt<int64_t> maxInline(
      "onnx-max-inline-elements",
      llvm::cl::desc("Initializers with more elements become dense_resource "
                     "blobs"),
      llvm::cl::init(64));
  static llvm::cl::opt<bool> noChecker(
      "onnx-no-checker", llvm::cl::desc("Skip the ONNX checker"),
      llvm::cl::init(false));
  static TranslateToMLIRRegistration registration(
      "import-onnx", "Import an ONNX model (binary or textual)",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        OwningOpRef<ModuleOp> module =
            ModuleOp::create(FileLineColLoc::get(
                context, buffer->getBufferIdentifier(), 0, 0));
        ONNXImportOptions options;
        options.functionName = functionName;
        options.maxInlineElements = maxInline;
        options.runChecker = !noChecker;
        if (failed(importONNX(*module, buffer->getBuffer(),
                              buffer->getBufferIdentifier(), options)))
          return nullptr;
        return module;
      },
      registerONNXImportDialects);
}
