//===- HalfToFloat.h - half-precision models computed in f32 ----*- C++ -*-===//
//
// Exports for GPUs store everything in float16 or bfloat16. Specula's CPU
// kernels compute in f32, and every half value is an f32 value, so such a
// model is imported as its f32 twin; the weights keep their precision where
// it matters, in storage (spec-quantize-weights, specc --weights).
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_LIB_ONNXIMPORT_HALFTOFLOAT_H
#define SPECULA_LIB_ONNXIMPORT_HALFTOFLOAT_H

#include "onnx/onnx_pb.h"

#include <string>

namespace specula::onnx_import {

/// Rewrites `model` so that every float16 and bfloat16 tensor is float32:
/// initializers and tensor attributes (Constant, ConstantOfShape), exactly;
/// the element types of the graph's inputs, outputs and values; and the
/// target type of Cast. Returns the precision the model's weight matrices
/// (its 2-D floating-point initializers) were stored in, by most elements:
/// "f16", "bf16" or "f32".
std::string widenHalfToFloat(onnx::ModelProto &model);

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_HALFTOFLOAT_H
