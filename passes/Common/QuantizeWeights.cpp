//===- QuantizeWeights.cpp - weight matrices stored in 16 or 8 bits -------===//

#include "passes/Common/Passes.h"
#include "passes/Common/WeightContraction.h"
#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/Float16bits.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace specula {
#define GEN_PASS_DEF_SPECQUANTIZEWEIGHTS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
/// What the pass converted and kept, for its remark.
struct Tally {
  llvm::DenseSet<Attribute> converted, keptHead, keptSmall, keptShape;
  uint64_t bytesBefore = 0, bytesAfter = 0;
};

struct QuantizeWeightsPass
    : public specula::impl::SpecQuantizeWeightsBase<QuantizeWeightsPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  void report(Location loc, const Tally &tally);
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

/// Bytes as a resource when `like` is one (named after it with `suffix`),
/// else as a dense attribute.
static ElementsAttr storeLike(ElementsAttr like, RankedTensorType type,
                              ArrayRef<char> bytes, StringRef suffix) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(like))
    return DenseResourceElementsAttr::get(
        type, (resource.getRawHandle().getKey() + "_" + suffix).str(),
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes,
                                                      alignof(uint64_t)));
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

namespace {
/// A weight matrix as the contraction reads it: 16-bit floats, or int8
/// with one f32 scale per output column.
struct NarrowWeight {
  ElementsAttr values, scales;
};

/// Converts weights to one precision and rewrites their contractions.
class WeightQuantizer {
public:
  WeightQuantizer(Type storage) : storage(storage) {}
  bool isInt8() const { return storage.isInteger(8); }
  unsigned bytesPerWeight() const { return isInt8() ? 1 : 2; }
  /// `attr` (f32, 2-D for int8) in this precision; int8 gives each column
  /// (dimension `columnDim` of `attr`) a scale, its largest magnitude / 127.
  FailureOr<NarrowWeight> narrow(ElementsAttr attr, unsigned columnDim,
                                 Location loc);
  /// `op` reading `weight` instead of its operand `index`, widened in its
  /// body; int8 results are scaled per column after the accumulation.
  void rewrite(linalg::GenericOp op, unsigned index, Value weight,
               Value scales);

private:
  Type storage;
};
} // namespace

FailureOr<NarrowWeight> WeightQuantizer::narrow(ElementsAttr attr,
                                                unsigned columnDim,
                                                Location loc) {
  std::vector<float> storageValues;
  FailureOr<ArrayRef<float>> values = floatData(attr, storageValues, loc);
  if (failed(values))
    return failure();
  ArrayRef<int64_t> shape = attr.getShapedType().getShape();
  auto type = RankedTensorType::get(shape, storage);
  if (!isInt8()) {
    std::vector<uint16_t> bits(values->size());
    bool brain = storage.isBF16();
    for (auto [out, value] : llvm::zip(bits, *values))
      out = brain ? bf16(value).bits : f16(value).bits;
    ArrayRef<char> bytes(reinterpret_cast<const char *>(bits.data()),
                         bits.size() * sizeof(uint16_t));
    return NarrowWeight{storeLike(attr, type, bytes, brain ? "bf16" : "f16"),
                        nullptr};
  }
  // Symmetric per column: q = round(w / s), s = max |w| / 127.
  int64_t columns = shape[columnDim];
  int64_t depth = values->size() / columns;
  auto at = [&](int64_t k, int64_t n) {
    return columnDim == 1 ? k * columns + n : n * depth + k;
  };
  std::vector<float> scales(columns, 0.0f);
  for (int64_t n = 0; n < columns; ++n) {
    for (int64_t k = 0; k < depth; ++k)
      scales[n] = std::max(scales[n], std::fabs((*values)[at(k, n)]));
    scales[n] /= 127.0f;
  }
  std::vector<int8_t> quantized(values->size());
  for (int64_t n = 0; n < columns; ++n)
    for (int64_t k = 0; k < depth; ++k)
      quantized[at(k, n)] = static_cast<int8_t>(
          scales[n] == 0.0f
              ? 0
              : std::clamp(std::nearbyint((*values)[at(k, n)] / scales[n]),
                           -127.0f, 127.0f));
  ArrayRef<char> bytes(reinterpret_cast<const char *>(quantized.data()),
                       quantized.size());
  auto scaleType = RankedTensorType::get({columns}, Float32Type::get(
                                                        storage.getContext()));
  return NarrowWeight{storeLike(attr, type, bytes, "int8"),
                      DenseElementsAttr::get(scaleType,
                                             ArrayRef<float>(scales))};
}

/// out[..., n] *= scales[n], in place after `op`, for every user of its
/// result.
static void scaleColumns(OpBuilder &b, linalg::GenericOp op, Value scales) {
  Value result = op->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  int64_t rank = type.getRank();
  MLIRContext *context = b.getContext();
  AffineMap column = AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context));
  b.setInsertionPointAfter(op);
  auto scaled = linalg::GenericOp::create(
      b, op.getLoc(), TypeRange{type}, ValueRange{scales}, ValueRange{result},
      ArrayRef<AffineMap>{column, b.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::MulFOp::create(nb, l, args[1], args[0])
                                  .getResult()});
      });
  result.replaceAllUsesExcept(scaled.getResult(0), scaled);
}

void WeightQuantizer::rewrite(linalg::GenericOp op, unsigned index,
                              Value weight, Value scales) {
  op->setOperand(index, weight);
  Block *body = op.getBody();
  BlockArgument argument = body->getArgument(index);
  Type wide = argument.getType();
  argument.setType(storage);
  OpBuilder b = OpBuilder::atBlockBegin(body);
  Value widened =
      isInt8() ? Value(arith::SIToFPOp::create(b, op.getLoc(), wide, argument))
               : Value(arith::ExtFOp::create(b, op.getLoc(), wide, argument));
  argument.replaceAllUsesExcept(widened, widened.getDefiningOp());
  if (scales)
    scaleColumns(b, op, scales);
}

/// Whether `op` accumulates into zeros: int8's scale after the sum would
/// scale anything else too.
static bool accumulatesIntoZeros(linalg::GenericOp op) {
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

namespace {
/// One run of the pass: what it converted, its caches, and the rewrite of
/// each contraction.
class QuantizeRun {
public:
  QuantizeRun(Type storage, int64_t minElements, bool outputHead)
      : quantizer(storage), minElements(minElements), outputHead(outputHead) {}
  /// Rewrites `op` if it reads a weight to convert; fails on missing data.
  LogicalResult visit(linalg::GenericOp op);
  /// Erases the f32 constants nothing reads any more.
  void eraseReplaced();
  Tally tally;

private:
  /// The set of kept constants `op`'s weight `attr` belongs to, or null.
  llvm::DenseSet<Attribute> *keptIn(linalg::GenericOp op, ElementsAttr attr,
                                    std::optional<unsigned> columnDim);

  WeightQuantizer quantizer;
  int64_t minElements;
  bool outputHead;
  DenseMap<std::pair<Attribute, unsigned>, NarrowWeight> narrowed;
  DenseMap<std::pair<Value, unsigned>, std::pair<Value, Value>> constants;
  SetVector<Operation *> replaced;
};
} // namespace

llvm::DenseSet<Attribute> *
QuantizeRun::keptIn(linalg::GenericOp op, ElementsAttr attr,
                    std::optional<unsigned> columnDim) {
  if (attr.getNumElements() < minElements)
    return &tally.keptSmall;
  if (!outputHead && isReturned(op->getResult(0)))
    return &tally.keptHead;
  if (quantizer.isInt8() &&
      (attr.getShapedType().getRank() != 2 || !columnDim ||
       !accumulatesIntoZeros(op)))
    return &tally.keptShape;
  return nullptr;
}

LogicalResult QuantizeRun::visit(linalg::GenericOp op) {
  std::optional<ContractionDims> dims = matchWeightContraction(op);
  if (!dims)
    return success();
  Value weight = op->getOperand(dims->weight);
  auto constant = weight.getDefiningOp<arith::ConstantOp>();
  auto attr = constant ? dyn_cast<ElementsAttr>(constant.getValue())
                       : ElementsAttr();
  if (!attr || !attr.getShapedType().getElementType().isF32())
    return success();
  AffineMap map = op.getMatchingIndexingMap(&op->getOpOperand(dims->weight));
  std::optional<unsigned> columnDim = map.getResultPosition(
      getAffineDimExpr(dims->columns, op.getContext()));
  if (llvm::DenseSet<Attribute> *kept = keptIn(op, attr, columnDim)) {
    kept->insert(attr);
    return success();
  }
  unsigned axis = columnDim.value_or(0);
  auto [known, inserted] = narrowed.try_emplace({attr, axis});
  if (inserted) {
    FailureOr<NarrowWeight> narrow =
        quantizer.narrow(attr, axis, constant.getLoc());
    if (failed(narrow))
      return failure();
    known->second = *narrow;
    tally.bytesBefore += attr.getNumElements() * 4;
    tally.bytesAfter += attr.getNumElements() * quantizer.bytesPerWeight();
  }
  tally.converted.insert(attr);
  auto &[values, scales] = constants[{weight, axis}];
  if (!values) {
    OpBuilder b(constant);
    b.setInsertionPointAfter(constant);
    values =
        arith::ConstantOp::create(b, constant.getLoc(), known->second.values);
    if (known->second.scales)
      scales = arith::ConstantOp::create(b, constant.getLoc(),
                                         known->second.scales);
  }
  quantizer.rewrite(op, dims->weight, values, scales);
  replaced.insert(constant);
  return success();
}

void QuantizeRun::eraseReplaced() {
  for (Operation *constant : replaced)
    if (constant->use_empty())
      constant->erase();
}

void QuantizeWeightsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  Type storage;
  if (precision == "f16")
    storage = Float16Type::get(context);
  else if (precision == "bf16")
    storage = BFloat16Type::get(context);
  else if (precision == "int8")
    storage = IntegerType::get(context, 8);
  else {
    emitError(module.getLoc()) << "spec-quantize-weights: unknown precision '"
                               << precision << "' (expected f16, bf16 or int8)";
    return signalPassFailure();
  }
  llvm::SmallDenseSet<spec::FunctionRole> selected;
  for (const std::string &role : roles) {
    std::optional<spec::FunctionRole> kind = spec::symbolizeFunctionRole(role);
    if (!kind) {
      emitError(module.getLoc())
          << "spec-quantize-weights: unknown role '" << role
          << "' (expected target, draft, medusa_head or mtp_module)";
      return signalPassFailure();
    }
    selected.insert(*kind);
  }
  auto isSelected = [&](func::FuncOp function) {
    auto role = function->getAttrOfType<spec::RoleAttr>(
        spec::SpecDialect::kRoleAttrName);
    return selected.empty() || (role && selected.contains(role.getKind()));
  };
  QuantizeRun run(storage, minElements, outputHead);
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    if (!isSelected(function))
      continue;
    WalkResult walk = function.walk([&](linalg::GenericOp op) {
      return failed(run.visit(op)) ? WalkResult::interrupt()
                                   : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
  }
  run.eraseReplaced();
  report(module.getLoc(), run.tally);
}

/// The remark: what was converted and what was kept.
void QuantizeWeightsPass::report(Location loc, const Tally &tally) {
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
  InFlightDiagnostic remark = emitRemark(loc);
  remark << "spec-quantize-weights: " << tally.converted.size()
         << " weight matrices to " << precision << " ("
         << mib(tally.bytesBefore) << " MiB -> " << mib(tally.bytesAfter)
         << " MiB); kept f32: " << kept(tally.keptHead) << " output head, "
         << kept(tally.keptSmall) << " below " << minElements.getValue()
         << " elements";
  if (precision == "int8")
    remark << ", " << kept(tally.keptShape)
           << " not a 2-D matrix summed into zeros";
  if (!roles.empty())
    remark << " (functions of role " << llvm::join(roles, ", ") << ")";
}
