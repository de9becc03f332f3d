//===- ModelContract.h - what Specula asks of a model file ------*- C++ -*-===//

#ifndef SPECULA_LIB_ONNXIMPORT_MODELCONTRACT_H
#define SPECULA_LIB_ONNXIMPORT_MODELCONTRACT_H

#include "specula/ONNXImport.h"

#include "onnx/onnx_pb.h"

namespace specula::onnx_import {

/// Checks a loaded model against the model contract.
ModelContractReport checkContract(const onnx::ModelProto &model);

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_MODELCONTRACT_H
