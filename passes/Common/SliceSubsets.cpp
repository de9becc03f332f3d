//===- SliceSubsets.cpp - subset models of tensor slices with a fast path ===//
//
// One-shot bufferization decides whether an insert_slice may write in place
// by asking whether it writes the subset an earlier extract_slice of the same
// tensor read (`SubsetOpInterface::operatesOnEquivalentSubset`). MLIR 22's
// tensor models answer through `ValueBoundsConstraintSet::areEquivalentSlices`,
// which builds a Presburger constraint set for every dynamic offset even when
// both ops name the same SSA values. Blocked contractions make thousands of
// such pairs (tile loops extract and insert at the loop's induction
// variables), and the queries took most of one-shot bufferization's time.
// These models are upstream's with a syntactic test first: identical offsets,
// sizes and strides are equivalent (and not disjoint) without a query.
//
//===----------------------------------------------------------------------===//

#include "passes/Common/SliceSubsets.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SubsetOpInterface.h"

using namespace mlir;

namespace {

/// Whether `op` and `candidate` are slices with the same offsets, sizes and
/// strides, as SSA values or constants.
bool haveSameSliceParameters(Operation *op, SubsetOpInterface candidate) {
  auto slice = cast<OffsetSizeAndStrideOpInterface>(op);
  auto other = dyn_cast<OffsetSizeAndStrideOpInterface>(candidate.getOperation());
  return other && other.getMixedOffsets().size() ==
                      slice.getMixedOffsets().size() &&
         sameOffsetsSizesAndStrides(slice, other, isEqualConstantIntOrValue);
}

template <typename ModelT, typename OpTy>
struct SliceSubsetModel
    : public SubsetOpInterface::ExternalModel<ModelT, OpTy> {
  FailureOr<HyperrectangularSlice>
  getAccessedHyperrectangularSlice(Operation *op) const {
    return HyperrectangularSlice(cast<OffsetSizeAndStrideOpInterface>(op));
  }

  bool operatesOnEquivalentSubset(
      Operation *op, SubsetOpInterface candidate,
      function_ref<bool(Value, Value)> equivalenceFn) const {
    if (haveSameSliceParameters(op, candidate))
      return equivalenceFn(cast<SubsetOpInterface>(op).getTensorContainer(),
                           candidate.getTensorContainer());
    return detail::defaultOperatesOnEquivalentSubset(op, candidate,
                                                     equivalenceFn);
  }

  bool operatesOnDisjointSubset(
      Operation *op, SubsetOpInterface candidate,
      function_ref<bool(Value, Value)> equivalenceFn) const {
    // The same slice overlaps itself (an empty one is disjoint, but saying
    // it is not only costs a copy).
    if (haveSameSliceParameters(op, candidate))
      return false;
    return detail::defaultOperatesOnDisjointSubset(op, candidate,
                                                   equivalenceFn);
  }
};

struct ExtractSliceSubset
    : public SliceSubsetModel<ExtractSliceSubset, tensor::ExtractSliceOp> {};
struct InsertSliceSubset
    : public SliceSubsetModel<InsertSliceSubset, tensor::InsertSliceOp> {};

struct ExtractSliceExtraction
    : public SubsetExtractionOpInterface::ExternalModel<
          ExtractSliceExtraction, tensor::ExtractSliceOp> {
  OpOperand &getSourceOperand(Operation *op) const {
    return cast<tensor::ExtractSliceOp>(op).getSourceMutable();
  }
};

struct InsertSliceInsertion
    : public SubsetInsertionOpInterface::ExternalModel<InsertSliceInsertion,
                                                       tensor::InsertSliceOp> {
  OpOperand &getSourceOperand(Operation *op) const {
    return cast<tensor::InsertSliceOp>(op).getSourceMutable();
  }

  OpOperand &getDestinationOperand(Operation *op) const {
    return cast<tensor::InsertSliceOp>(op).getDestMutable();
  }

  Value buildSubsetExtraction(Operation *op, OpBuilder &builder,
                              Location loc) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    return tensor::ExtractSliceOp::create(
        builder, loc, insert.getSourceType(), insert.getDest(),
        insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
  }

  SmallVector<Value> getValuesNeededToBuildSubsetExtraction(Operation *op) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    SmallVector<Value> needed(insert.getOffsets());
    llvm::append_range(needed, insert.getSizes());
    llvm::append_range(needed, insert.getStrides());
    needed.push_back(insert.getDest());
    return needed;
  }
};

} // namespace

void specula::registerSliceSubsetModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<ExtractSliceSubset,
                                            ExtractSliceExtraction>(*context);
    tensor::InsertSliceOp::attachInterface<InsertSliceSubset,
                                           InsertSliceInsertion>(*context);
  });
}
