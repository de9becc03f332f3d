//===- Common.h - building blocks shared by the operator handlers -*- C++ -*-//

#ifndef SPECULA_LIB_ONNXIMPORT_OPS_COMMON_H
#define SPECULA_LIB_ONNXIMPORT_OPS_COMMON_H

#include "lib/ONNXImport/NodeImporter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace specula::onnx_import {

/// Builds the scalar result of an elementwise op from the scalar operands.
using ScalarBody = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// `tensor.empty` of `type`, taking its dynamic sizes from `sources`: the
/// size of result dimension d comes from the first source whose (rank
/// aligned, numpy-style) dimension d is not a broadcast 1.
mlir::Value emptyTensorLike(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::RankedTensorType type,
                            mlir::ValueRange sources);

/// A linalg.generic applying `body` elementwise with numpy broadcasting of
/// `inputs` to `resultType`. Dimensions that are statically 1 in an input
/// broadcast; dynamic dimensions are assumed equal to the result's.
/// The result's dynamic sizes come from the inputs (see emptyTensorLike)
/// unless `dynamicSizes` gives them.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::ValueRange inputs,
                             mlir::RankedTensorType resultType,
                             ScalarBody body,
                             std::optional<mlir::ValueRange> dynamicSizes = {});

/// Element `i` of a 1-D integer tensor (or the value of a 0-D one when `i`
/// is 0), as an index.
mlir::Value extractIndex(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value tensor, int64_t i);

/// Converts a scalar between element types with ONNX Cast semantics
/// (signed integers; bool is 0/1; to bool is `!= 0`).
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value, mlir::Type to);

/// A float or integer constant of `type` (a scalar type).
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);

/// The numpy broadcast of the inputs' shapes: static where every input
/// agrees (or broadcasts a static 1), dynamic otherwise.
llvm::SmallVector<int64_t> broadcastShape(mlir::ValueRange inputs);

/// Checks that `input` (operand `name` of the node) broadcasts to `shape`
/// numpy-style: no larger rank, and every static dim equal to the target's
/// static dim or 1. Emits an error naming the node and operand otherwise
/// (for operators whose ONNX inference does not check it).
mlir::LogicalResult checkBroadcastsTo(NodeImporter &node, mlir::Value input,
                                      llvm::StringRef name,
                                      llvm::ArrayRef<int64_t> shape);

/// Checks that operand `i` (called `name`) has a rank in [minRank, maxRank]
/// before a handler indexes its dims (ONNX's inference does not check every
/// operand's rank); emits an error naming the node and operand otherwise.
mlir::LogicalResult checkOperandRank(NodeImporter &node, unsigned i,
                                     llvm::StringRef name, int64_t minRank,
                                     int64_t maxRank);

/// A shape of `rank` dynamic sizes.
llvm::SmallVector<int64_t> dynamicShape(int64_t rank);

/// Normalizes an ONNX axis (negative counts from the end) against `rank`.
mlir::FailureOr<int64_t> normalizeAxis(NodeImporter &node, int64_t axis,
                                       int64_t rank);

/// A tensor of `shape` (dynamic sizes `sizes`) filled with `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::ArrayRef<int64_t> shape, mlir::ValueRange sizes,
                         mlir::Value value);

/// The size of `dim` of `tensor` as an index value (constant when static).
mlir::Value dimSize(mlir::OpBuilder &b, mlir::Location loc,
                    mlir::Value tensor, int64_t dim);

} // namespace specula::onnx_import

#endif // SPECULA_LIB_ONNXIMPORT_OPS_COMMON_H
