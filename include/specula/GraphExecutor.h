//===- GraphExecutor.h - compile and run model functions on the CPU -*- C++ -*-//
//
// JIT-compiles a function on tensors (an imported ONNX graph) with the
// spec-graph-to-llvm pipeline and runs it on host tensors. Used to check
// imported graphs numerically (conformance tests, ONNX Runtime comparisons).
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_GRAPHEXECUTOR_H
#define SPECULA_GRAPHEXECUTOR_H

#include "specula/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace specula {

/// A dense, row-major tensor in host memory. Element types are named as in
/// ONNX (onnx::TensorProto::DataType values); booleans take one byte.
struct HostTensor {
  int32_t dataType = 0;
  std::vector<int64_t> shape;
  std::vector<char> data;

  int64_t numElements() const;
};

/// An int64 tensor of `shape` holding `values` (row-major); `{}` with one
/// value makes the 0-D tensor that stands for an index or i64 scalar.
HostTensor makeInt64Tensor(std::vector<int64_t> shape,
                           llvm::ArrayRef<int64_t> values);

/// The first element of an int64 tensor (the value of a scalar result).
int64_t int64Value(const HostTensor &tensor);

/// The byte size of one element of an ONNX data type, 0 if unsupported.
unsigned elementByteWidth(int32_t dataType);

/// Whether two ONNX data types share a representation in compiled code
/// (signed and unsigned integers of one width both map to signless ones).
bool sameElementStorage(int32_t a, int32_t b);

class GraphExecutor {
public:
  ~GraphExecutor();

  /// Lowers `function` in `module` (consumed: it is lowered in place) with
  /// spec-graph-to-llvm and `lowering`'s options (the loops of the CUDA
  /// schedule with gpu-schedule-threads, 16-bit weights with weights, ...)
  /// and JIT-compiles it. Fails with a diagnostic.
  static mlir::FailureOr<std::unique_ptr<GraphExecutor>>
  compile(mlir::ModuleOp module, llvm::StringRef function,
          const GraphToLLVMOptions &lowering = GraphToLLVMOptions());

  /// Runs the function; checks the inputs against its signature. Returns the
  /// results, or fails with `error` set.
  mlir::FailureOr<std::vector<HostTensor>>
  run(llvm::ArrayRef<HostTensor> inputs, std::string &error);

private:
  struct TensorSignature {
    int32_t dataType;
    std::vector<int64_t> shape; // -1 for dynamic sizes
    /// An `index` or `i64` scalar: passed by value, as a 0-D int64 tensor
    /// on the host side.
    bool scalar = false;
  };
  GraphExecutor() = default;

  /// The weights the compiled code reads at spec_weights_base (declared
  /// first: they outlive the code).
  std::shared_ptr<char> weights;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string function;
  std::vector<TensorSignature> inputs, results;
};

} // namespace specula

#endif // SPECULA_GRAPHEXECUTOR_H
