//===- TensorIO.h - read and write ONNX TensorProto files -------*- C++ -*-===//

#ifndef SPECULA_TENSORIO_H
#define SPECULA_TENSORIO_H

#include "specula/GraphExecutor.h"

namespace specula {

/// Reads a serialized onnx.TensorProto (the ONNX test-data .pb format).
mlir::FailureOr<HostTensor> readTensorProto(llvm::StringRef path,
                                            std::string &error);

/// Writes `tensor` as a serialized onnx.TensorProto named `name`.
mlir::LogicalResult writeTensorProto(const HostTensor &tensor,
                                     llvm::StringRef name,
                                     llvm::StringRef path, std::string &error);

} // namespace specula

#endif // SPECULA_TENSORIO_H
