//===- ModelLoader.h - parse, check and shape-infer ONNX models -*- C++ -*-===//
//
// The only part of the importer that calls into libonnx, which reports errors
// with C++ exceptions; it is compiled with -fexceptions and turns every
// exception into an error string, so the rest of Specula (built without
// exceptions, like LLVM) never sees one.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_LIB_ONNXIMPORT_MODELLOADER_H
#define SPECULA_LIB_ONNXIMPORT_MODELLOADER_H

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace specula::onnx_import {

struct LoadOptions {
  /// Run onnx::checker::check_model before importing.
  bool runChecker = true;
  /// Run ONNX shape inference so that every value has a type.
  bool runShapeInference = true;
  /// Called on the parsed and checked model before shape inference runs;
  /// false stops the load (with `error` left empty: the callback reported
  /// why). libonnx's inference functions of operator versions the importer
  /// does not support may trust what they read (Gemm-6 indexes a 1-D
  /// operand's second dimension), so those are refused first.
  std::function<bool(const onnx::ModelProto &)> beforeInference;
};

/// Parses `contents` (binary protobuf, or the textual syntax of
/// onnx/defs/parser.h when it starts with '<' or a comment), loads external
/// data relative to `modelDir`, and runs the checker and shape inference.
/// On failure returns false and sets `error` to one message without the file
/// name (the caller adds it).
/// (Parsed where it lies: a model's bytes are not copied first.)
bool loadModel(llvm::StringRef contents, const std::string &modelDir,
               const LoadOptions &options, onnx::ModelProto &model,
               std::string &error);

/// How diagnostics name a node: its name, or "<op_type>#<index>" when it
/// has none.
std::string nodeDisplayName(const onnx::NodeProto &node, int index);

/// An ONNX element type's name ("FLOAT"), or its number when not a type.
std::string elementTypeName(int32_t onnxType);

/// The opset version in which the operator `opType` of `domain`, as seen by
/// a model importing `opsetVersion` of that domain, was last changed; none if
/// ONNX does not know the operator.
std::optional<int> operatorSinceVersion(const std::string &opType,
                                        const std::string &domain,
                                        int opsetVersion);

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_MODELLOADER_H
