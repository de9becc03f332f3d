//===- HalfToFloat.cpp - half-precision models computed in f32 ------------===//

#include "lib/ONNXImport/HalfToFloat.h"
#include "lib/ONNXImport/TensorProtoData.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/MathExtras.h"

#include <array>
#include <cstring>
#include <map>

using namespace specula::onnx_import;

namespace {
using T = onnx::TensorProto;

bool isHalf(int32_t type) {
  return type == T::FLOAT16 || type == T::BFLOAT16;
}

/// Every float16 bit pattern's float value, converted once by APFloat.
const std::array<float, 65536> &float16Values() {
  static const std::array<float, 65536> table = [] {
    std::array<float, 65536> values;
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      llvm::APFloat half(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
      bool lost = false;
      half.convert(llvm::APFloat::IEEEsingle(),
                   llvm::APFloat::rmNearestTiesToEven, &lost);
      values[bits] = half.convertToFloat();
    }
    return values;
  }();
  return table;
}

/// `tensor` (float16 or bfloat16) as float32, in raw_data.
void widenTensor(T &tensor) {
  std::vector<char> bytes = tensorProtoBytes(tensor, 2);
  std::string raw(bytes.size() * 2, '\0');
  const std::array<float, 65536> &halves = float16Values();
  bool bfloat = tensor.data_type() == T::BFLOAT16;
  for (size_t i = 0; i < bytes.size() / 2; ++i) {
    uint16_t bits = static_cast<uint8_t>(bytes[2 * i]) |
                    static_cast<uint16_t>(static_cast<uint8_t>(bytes[2 * i + 1]))
                        << 8;
    float value;
    if (bfloat) {
      // A bfloat16 is the upper half of a float32.
      uint32_t wide = static_cast<uint32_t>(bits) << 16;
      std::memcpy(&value, &wide, sizeof value);
    } else {
      value = halves[bits];
    }
    std::memcpy(raw.data() + 4 * i, &value, sizeof value);
  }
  tensor.clear_int32_data();
  tensor.set_data_type(T::FLOAT);
  tensor.set_raw_data(std::move(raw));
}

void widenType(onnx::TypeProto &type) {
  if (type.has_tensor_type() && isHalf(type.tensor_type().elem_type()))
    type.mutable_tensor_type()->set_elem_type(T::FLOAT);
}
} // namespace

std::string specula::onnx_import::widenHalfToFloat(onnx::ModelProto &model) {
  onnx::GraphProto &graph = *model.mutable_graph();
  // Elements of the weight matrices by stored type.
  std::map<int32_t, int64_t> matrixElements;
  for (T &tensor : *graph.mutable_initializer()) {
    int64_t elements = 0;
    if (tensor.dims_size() == 2 && tensor.dims(0) >= 0 && tensor.dims(1) >= 0 &&
        !llvm::MulOverflow(tensor.dims(0), tensor.dims(1), elements))
      matrixElements[tensor.data_type()] += elements;
    if (isHalf(tensor.data_type()))
      widenTensor(tensor);
  }
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_t() && isHalf(attr.t().data_type()))
        widenTensor(*attr.mutable_t());
      if (node.op_type() == "Cast" && attr.name() == "to" && isHalf(attr.i()))
        attr.set_i(T::FLOAT);
    }
  for (auto *values : {graph.mutable_input(), graph.mutable_output(),
                       graph.mutable_value_info()})
    for (onnx::ValueInfoProto &value : *values)
      widenType(*value.mutable_type());
  int64_t f16 = matrixElements[T::FLOAT16], bf16 = matrixElements[T::BFLOAT16],
          f32 = matrixElements[T::FLOAT];
  if (f16 > bf16 && f16 > f32)
    return "f16";
  if (bf16 > f32)
    return "bf16";
  return "f32";
}
