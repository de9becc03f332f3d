//===- ModelContract.h - what Specula asks of a model file ------*- C++ -*-===//

#ifndef SPECULA_LIB_ONNXIMPORT_MODELCONTRACT_H
#define SPECULA_LIB_ONNXIMPORT_MODELCONTRACT_H

#include <map>
#include "specula/ONNXImport.h"

#include "onnx/onnx_pb.h"

namespace specula::onnx_import {

/// Checks a loaded model against the model contract.
ModelContractReport checkContract(const onnx::ModelProto &model);

/// Adds the entries of `defaults` whose keys `model`'s metadata_props lacks.
void addDefaultMetadata(onnx::ModelProto &model,
                        const std::map<std::string, std::string> &defaults);

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_MODELCONTRACT_H
