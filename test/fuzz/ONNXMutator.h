//===- ONNXMutator.h - structure-aware mutations of ONNX models -*- C++ -*-===//
//
// Byte mutations of a protobuf mostly break its framing, so a byte fuzzer
// rarely reaches the importer with a valid model whose attribute or constant
// is out of range. These mutations edit a parsed model instead: attributes,
// declared dimensions, constant values, edges between nodes and opset
// versions, the classes of input that crashed or stalled the importer (a
// Transpose perm holding -1, a Reshape to 2.6e18 elements). The ONNX fuzzer's
// custom mutator uses them, and a unit test imports a bounded number of
// mutants of the seed corpus in every build.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_TEST_FUZZ_ONNXMUTATOR_H
#define SPECULA_TEST_FUZZ_ONNXMUTATOR_H

#include "onnx/onnx_pb.h"

#include <optional>
#include <random>
#include <string>

namespace specula::fuzz {

/// What one structural mutation changed.
enum class MutationKind {
  Attribute,     // a node attribute's value (int, float, list, tensor)
  Dimension,     // a declared input, output or value_info dimension
  ConstantValue, // an element or a dimension of an initializer or Constant
  Edge,          // a node input rewired to another value, or dropped
  Opset,         // the default domain's opset version
};
inline constexpr int kNumMutationKinds = 5;

const char *getMutationKindName(MutationKind kind);

/// Parses `data` as a binary model or, failing that, as textual ONNX.
bool parseModel(const std::string &data, onnx::ModelProto &model);

/// Applies one mutation of `kind` chosen with `rng`; false when the model
/// has nothing of that kind to mutate.
bool mutateModel(onnx::ModelProto &model, MutationKind kind,
                 std::mt19937_64 &rng);

/// Applies one mutation of a kind chosen with `rng` (retrying other kinds
/// when the model has nothing of one); what it did, if anything.
std::optional<MutationKind> mutateModel(onnx::ModelProto &model,
                                        std::mt19937_64 &rng);

} // namespace specula::fuzz

#endif // SPECULA_TEST_FUZZ_ONNXMUTATOR_H
