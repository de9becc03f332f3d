//===- NodeImporter.h - what an ONNX operator handler sees ------*- C++ -*-===//
//
// Each ONNX operator is imported by a handler registered for the operator's
// type and the schema versions (since_version) it implements, in the style of
// torch-mlir's ONNX lowering. A handler reads its node through NodeImporter
// and builds upstream ops on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_LIB_ONNXIMPORT_NODEIMPORTER_H
#define SPECULA_LIB_ONNXIMPORT_NODEIMPORTER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <functional>

namespace specula::onnx_import {

class GraphImporter;

/// The view of one ONNX node that an operator handler gets.
class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
               int sinceVersion, mlir::Location loc);

  const onnx::NodeProto &node() const { return nodeProto; }
  /// The since_version of the operator schema the node follows.
  int sinceVersion() const { return version; }
  mlir::OpBuilder &builder();
  mlir::Location loc() const { return location; }

  /// Operand `i`, or a null value when the optional input is absent.
  mlir::Value operand(unsigned i) const;
  unsigned numOperands() const { return nodeProto.input_size(); }
  unsigned numResults() const { return nodeProto.output_size(); }

  /// Computes a result shape (dynamic sizes allowed) when ONNX shape
  /// inference gave only an element type, as it does for Slice or Reshape
  /// with bounds computed in the graph.
  using ShapeFallback = llvm::function_ref<llvm::SmallVector<int64_t>()>;

  /// The type shape inference gave result `i`, its shape from `fallback`
  /// when inference has none; fails with a diagnostic when neither knows.
  mlir::FailureOr<mlir::RankedTensorType>
  resultType(unsigned i, ShapeFallback fallback = nullptr);
  /// Binds result `i` of the node to `value`.
  void setResult(unsigned i, mlir::Value value);

  /// The constant elements of operand `i` when it is an initializer or a
  /// Constant (shape operands usually are); null otherwise.
  mlir::DenseElementsAttr constantOperand(unsigned i) const;
  /// The integers of a constant operand, or failure with a diagnostic.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(unsigned i,
                                                           llvm::StringRef what);

  const onnx::AttributeProto *attribute(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue) const;
  float floatAttr(llvm::StringRef name, float defaultValue) const;
  std::optional<llvm::SmallVector<int64_t>>
  intsAttr(llvm::StringRef name) const;

  /// How messages name the node: "node 'NAME' (OP, opset N)".
  std::string describe() const;
  /// An error at the node, prefixed with describe().
  mlir::InFlightDiagnostic emitError();

private:
  GraphImporter &graph;
  const onnx::NodeProto &nodeProto;
  int version;
  mlir::Location location;
};

using OpHandler = std::function<mlir::LogicalResult(NodeImporter &)>;

/// Handlers keyed by operator type and schema since_version.
class OpHandlerRegistry {
public:
  struct Entry {
    int minSince, maxSince;
    OpHandler handler;
  };
  /// Registers `handler` for `opType` whose schema since_version lies in
  /// [minSince, maxSince]: the versions whose semantics it implements.
  void add(llvm::StringRef opType, int minSince, int maxSince,
           OpHandler handler);
  const OpHandler *lookup(llvm::StringRef opType, int sinceVersion) const;
  /// Every operator with its version ranges, sorted by name.
  std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>>
  supported() const;

private:
  llvm::StringMap<std::vector<Entry>> handlers;
};

/// The registry with every handler, built once.
const OpHandlerRegistry &getOpHandlers();

// One per file under ops/.
void registerElementwiseHandlers(OpHandlerRegistry &registry);
void registerMatMulHandlers(OpHandlerRegistry &registry);
void registerShapeHandlers(OpHandlerRegistry &registry);
void registerReductionHandlers(OpHandlerRegistry &registry);
void registerGenerateHandlers(OpHandlerRegistry &registry);
void registerSliceHandlers(OpHandlerRegistry &registry);

/// Converts an ONNX element type; fails for types Specula does not handle.
mlir::FailureOr<mlir::Type> convertElementType(mlir::MLIRContext *context,
                                               int32_t onnxType);

/// The elements of `tensor` as an attribute of `type`: inline dense elements
/// up to `maxInlineElements`, a dense_resource blob above. Fails with
/// `error` set on malformed data. With `movableRawData` (the tensor's own
/// raw_data, which the caller gives up), a blob takes its bytes instead of
/// a copy of them: a model's weights are then held once, not twice.
mlir::FailureOr<mlir::ElementsAttr>
convertTensor(const onnx::TensorProto &tensor, mlir::RankedTensorType type,
              int64_t maxInlineElements, std::string &error,
              std::string *movableRawData = nullptr);

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_NODEIMPORTER_H
