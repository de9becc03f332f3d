//===- TensorProtoData.h - the element bytes of an onnx.TensorProto -*- C++ -*-//
//
// Shared by the importer (initializers, constants) and the executor's tensor
// I/O (test-data .pb files): one reading of ONNX's storage rules.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_LIB_ONNXIMPORT_TENSORPROTODATA_H
#define SPECULA_LIB_ONNXIMPORT_TENSORPROTODATA_H

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace specula::onnx_import {

/// The elements of `tensor` as little-endian bytes, `width` bytes each: its
/// raw_data, or else the typed field ONNX stores its data type in (narrow
/// integers, booleans and 16-bit floats in int32_data). Booleans are one byte
/// per element.
inline std::vector<char> tensorProtoBytes(const onnx::TensorProto &tensor,
                                          unsigned width) {
  if (tensor.has_raw_data())
    return std::vector<char>(tensor.raw_data().begin(),
                             tensor.raw_data().end());
  std::vector<char> bytes;
  auto append = [&](const auto &values) {
    for (auto value : values) {
      uint64_t bits = static_cast<uint64_t>(value);
      for (unsigned i = 0; i < width; ++i)
        bytes.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    }
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    bytes.resize(tensor.float_data_size() * sizeof(float));
    // memcpy's pointers must not be null, also for no bytes (UBSan found an
    // empty float_data).
    if (!bytes.empty())
      std::memcpy(bytes.data(), tensor.float_data().data(), bytes.size());
    break;
  case onnx::TensorProto::DOUBLE:
    bytes.resize(tensor.double_data_size() * sizeof(double));
    if (!bytes.empty())
      std::memcpy(bytes.data(), tensor.double_data().data(), bytes.size());
    break;
  case onnx::TensorProto::INT64:
    append(tensor.int64_data());
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    append(tensor.uint64_data());
    break;
  default:
    append(tensor.int32_data());
    break;
  }
  return bytes;
}

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_TENSORPROTODATA_H
