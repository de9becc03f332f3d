//===- TensorIO.cpp - read and write ONNX TensorProto files ---------------===//

#include "specula/TensorIO.h"

#include "lib/ONNXImport/TensorProtoData.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstring>

using namespace mlir;
using namespace specula;

FailureOr<HostTensor> specula::readTensorProto(StringRef path,
                                               std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer) {
    error = "cannot read '" + path.str() + "': " + buffer.getError().message();
    return failure();
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromArray((*buffer)->getBufferStart(),
                            (*buffer)->getBufferSize())) {
    error = "'" + path.str() + "' is not a serialized onnx.TensorProto";
    return failure();
  }
  HostTensor tensor;
  tensor.dataType = proto.data_type();
  tensor.shape.assign(proto.dims().begin(), proto.dims().end());
  unsigned width = elementByteWidth(tensor.dataType);
  if (!width) {
    error = "'" + path.str() + "' has unsupported data type " +
            std::to_string(tensor.dataType);
    return failure();
  }
  tensor.data = onnx_import::tensorProtoBytes(proto, width);
  if (static_cast<int64_t>(tensor.data.size()) !=
      tensor.numElements() * width) {
    error = "'" + path.str() + "' holds " + std::to_string(tensor.data.size()) +
            " bytes of data for " + std::to_string(tensor.numElements()) +
            " elements";
    return failure();
  }
  return tensor;
}

LogicalResult specula::writeTensorProto(const HostTensor &tensor,
                                        StringRef name, StringRef path,
                                        std::string &error) {
  onnx::TensorProto proto;
  proto.set_name(name.str());
  proto.set_data_type(tensor.dataType);
  for (int64_t size : tensor.shape)
    proto.add_dims(size);
  proto.set_raw_data(std::string(tensor.data.begin(), tensor.data.end()));
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  std::string bytes;
  proto.SerializeToString(&bytes);
  file.os() << bytes;
  file.keep();
  return success();
}
