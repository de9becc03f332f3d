//===- QuantizeWeights.cpp - weight matrices stored in 16 bits ------------===//

#include "passes/Common/Passes.h"
#include "passes/Common/WeightContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/Float16bits.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

#include <cstring>

namespace specula {
#define GEN_PASS_DEF_SPECQUANTIZEWEIGHTS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
struct QuantizeWeightsPass
    : public specula::impl::SpecQuantizeWeightsBase<QuantizeWeightsPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// What the pass converted and kept, for its remark.
struct Tally {
  llvm::DenseSet<Attribute> converted, keptHead, keptSmall;
  uint64_t bytesBefore = 0, bytesAfter = 0;
};
} // namespace

/// True when `value` is returned by its function, directly or through
/// reshapes and casts: the output head's logits.
static bool isReturned(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<func::ReturnOp>(user))
      return true;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
            tensor::ReshapeOp>(user) &&
        isReturned(user->getResult(0)))
      return true;
  }
  return false;
}

/// The f32 data of `attr`, or failure (with an error at `loc`) when it is a
/// resource whose data is missing.
static FailureOr<ArrayRef<float>> floatData(ElementsAttr attr,
                                            std::vector<float> &storage,
                                            Location loc) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      emitError(loc) << "the data of resource '"
                     << resource.getRawHandle().getKey()
                     << "' is missing (elided?); cannot convert the weight";
      return failure();
    }
    ArrayRef<char> bytes = blob->getData();
    return ArrayRef<float>(reinterpret_cast<const float *>(bytes.data()),
                           bytes.size() / sizeof(float));
  }
  storage.assign(attr.getValues<float>().begin(), attr.getValues<float>().end());
  return ArrayRef<float>(storage);
}

/// `attr` (f32) converted to `type`'s 16-bit float, kept as the same kind
/// of attribute (a resource stays a resource).
static FailureOr<ElementsAttr> convert(ElementsAttr attr, FloatType type,
                                       Location loc) {
  std::vector<float> storage;
  FailureOr<ArrayRef<float>> values = floatData(attr, storage, loc);
  if (failed(values))
    return failure();
  std::vector<uint16_t> bits(values->size());
  bool brain = type.isBF16();
  for (auto [out, value] : llvm::zip(bits, *values))
    out = brain ? bf16(value).bits : f16(value).bits;
  auto newType = RankedTensorType::get(attr.getShapedType().getShape(), type);
  ArrayRef<char> bytes(reinterpret_cast<const char *>(bits.data()),
                       bits.size() * sizeof(uint16_t));
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    std::string name = (resource.getRawHandle().getKey() + "_" +
                        (brain ? "bf16" : "f16"))
                           .str();
    return ElementsAttr(DenseResourceElementsAttr::get(
        newType, name,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes,
                                                      alignof(uint64_t))));
  }
  return ElementsAttr(DenseElementsAttr::getFromRawBuffer(newType, bytes));
}

/// Reads operand `index` of `op` (now of 16-bit elements) widened to f32 in
/// its body.
static void widenInBody(linalg::GenericOp op, unsigned index, Value narrow) {
  op->setOperand(index, narrow);
  Block *body = op.getBody();
  BlockArgument argument = body->getArgument(index);
  Type wide = argument.getType();
  argument.setType(cast<ShapedType>(narrow.getType()).getElementType());
  OpBuilder b = OpBuilder::atBlockBegin(body);
  auto widened = arith::ExtFOp::create(b, op.getLoc(), wide, argument);
  argument.replaceAllUsesExcept(widened, widened);
}

void QuantizeWeightsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  FloatType type;
  if (precision == "f16")
    type = Float16Type::get(context);
  else if (precision == "bf16")
    type = BFloat16Type::get(context);
  else {
    emitError(module.getLoc()) << "spec-quantize-weights: unknown precision '"
                       << precision << "' (expected f16 or bf16)";
    return signalPassFailure();
  }

  Tally tally;
  DenseMap<Attribute, ElementsAttr> convertedAttrs;
  DenseMap<Value, Value> narrowConstants;
  SetVector<Operation *> replaced;
  WalkResult walk = module.walk([&](linalg::GenericOp op) -> WalkResult {
    std::optional<ContractionDims> dims = matchWeightContraction(op);
    if (!dims)
      return WalkResult::advance();
    Value weight = op->getOperand(dims->weight);
    auto constant = weight.getDefiningOp<arith::ConstantOp>();
    auto attr = constant ? dyn_cast<ElementsAttr>(constant.getValue())
                         : ElementsAttr();
    if (!attr || !attr.getShapedType().getElementType().isF32())
      return WalkResult::advance();
    if (attr.getNumElements() < minElements) {
      tally.keptSmall.insert(attr);
      return WalkResult::advance();
    }
    if (!outputHead && isReturned(op->getResult(0))) {
      tally.keptHead.insert(attr);
      return WalkResult::advance();
    }
    auto [known, inserted] = convertedAttrs.try_emplace(attr);
    if (inserted) {
      FailureOr<ElementsAttr> narrow = convert(attr, type, constant.getLoc());
      if (failed(narrow))
        return WalkResult::interrupt();
      known->second = *narrow;
      tally.bytesBefore += attr.getNumElements() * 4;
      tally.bytesAfter += attr.getNumElements() * 2;
    }
    tally.converted.insert(attr);
    Value &narrow = narrowConstants[weight];
    if (!narrow) {
      OpBuilder b(constant);
      b.setInsertionPointAfter(constant);
      narrow = arith::ConstantOp::create(b, constant.getLoc(), known->second);
    }
    widenInBody(op, dims->weight, narrow);
    replaced.insert(constant);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  for (Operation *constant : replaced)
    if (constant->use_empty())
      constant->erase();

  auto mib = [](uint64_t bytes) {
    std::string text;
    llvm::raw_string_ostream(text)
        << llvm::format("%.2f", static_cast<double>(bytes) / (1 << 20));
    return text;
  };
  // A constant converted for one contraction is not kept for another.
  auto kept = [&](const llvm::DenseSet<Attribute> &attrs) {
    return llvm::count_if(attrs, [&](Attribute attr) {
      return !tally.converted.contains(attr);
    });
  };
  emitRemark(module.getLoc()) << "spec-quantize-weights: " << tally.converted.size()
                      << " weight matrices to " << precision << " ("
                      << mib(tally.bytesBefore) << " MiB -> "
                      << mib(tally.bytesAfter) << " MiB); kept f32: "
                      << kept(tally.keptHead) << " output head, "
                      << kept(tally.keptSmall) << " below "
                      << minElements.getValue() << " elements";
}
