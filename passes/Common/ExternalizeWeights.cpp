//===- ExternalizeWeights.cpp - large constants into a mapped file --------===//

#include "passes/Common/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/ToolOutputFile.h"

namespace specula {
#define GEN_PASS_DEF_SPECEXTERNALIZEWEIGHTS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// The symbol the runtime sets to the address of the mapped weights file.
static constexpr llvm::StringLiteral kWeightsBase = "spec_weights_base";

namespace {
struct ExternalizeWeightsPass
    : public specula::impl::SpecExternalizeWeightsBase<ExternalizeWeightsPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// A constant moved into the weights file.
struct Weight {
  LLVM::GlobalOp global;
  ArrayRef<char> data;
  uint64_t offset = 0;
};
} // namespace

/// The bytes of a global's dense initializer as laid out in memory, or
/// nullopt when it has none worth moving (splats unless `splats`, other
/// attrs). Splats and booleans (a byte each in memory) are expanded into
/// `storage`. Fails on a resource whose data is missing.
static FailureOr<std::optional<ArrayRef<char>>>
initializerBytes(LLVM::GlobalOp global, bool splats,
                 std::vector<std::vector<char>> &storage) {
  Attribute value = global.getValueOrNull();
  auto elements = dyn_cast_or_null<ShapedType>(
      isa_and_nonnull<ElementsAttr>(value)
          ? cast<ElementsAttr>(value).getShapedType()
          : Type());
  if (!elements || !elements.getElementType().isIntOrIndexOrFloat())
    return std::optional<ArrayRef<char>>();
  // index elements are stored, and laid out by the LLVM lowering, as i64.
  unsigned bits = elements.getElementType().isIndex()
                      ? 64
                      : elements.getElementTypeBitWidth();
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (bits == 1 && dense && (splats || !dense.isSplat())) {
    std::vector<char> &bytes = storage.emplace_back();
    for (bool element : dense.getValues<bool>())
      bytes.push_back(element);
    return std::optional<ArrayRef<char>>(bytes);
  }
  if (bits % 8 != 0)
    return std::optional<ArrayRef<char>>();
  ArrayRef<char> data;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return global.emitError()
             << "the data of resource '" << resource.getRawHandle().getKey()
             << "' is missing (elided?); cannot write it to the weights file";
    data = blob->getData();
  } else if (dense && dense.isSplat()) {
    if (!splats)
      return std::optional<ArrayRef<char>>();
    ArrayRef<char> element = dense.getRawData();
    std::vector<char> &bytes = storage.emplace_back();
    for (int64_t i = 0, e = elements.getNumElements(); i < e; ++i)
      bytes.insert(bytes.end(), element.begin(), element.end());
    data = bytes;
  } else if (dense) {
    data = dense.getRawData();
  } else {
    return std::optional<ArrayRef<char>>();
  }
  int64_t expected = elements.getNumElements() * (bits / 8);
  if (static_cast<int64_t>(data.size()) != expected)
    return global.emitError() << "initializer holds " << data.size()
                              << " bytes, its type " << expected;
  return std::optional<ArrayRef<char>>(data);
}

/// Writes the weights at their offsets into `path`; fails with a diagnostic.
static LogicalResult writeWeightsFile(ModuleOp module, StringRef path,
                                      ArrayRef<Weight> weights,
                                      std::unique_ptr<llvm::ToolOutputFile> &file) {
  std::string error;
  file = openOutputFile(path, &error);
  if (!file)
    return module.emitError() << "cannot write the weights file: " << error;
  uint64_t written = 0;
  for (const Weight &weight : weights) {
    file->os().write_zeros(weight.offset - written);
    file->os().write(weight.data.data(), weight.data.size());
    written = weight.offset + weight.data.size();
  }
  file->os().flush();
  if (file->os().has_error()) {
    InFlightDiagnostic diag = module.emitError()
                              << "cannot write the weights file '" << path
                              << "': " << file->os().error().message();
    file->os().clear_error();
    return diag;
  }
  return success();
}

/// Makes every host-side address of a moved global an address computed from
/// the weights base, `@spec_weights_base` (created here).
static void redirectAddresses(ModuleOp module, ArrayRef<Weight> weights) {
  MLIRContext *context = module.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i8 = IntegerType::get(context, 8);
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto base = LLVM::GlobalOp::create(b, module.getLoc(), ptrType,
                                     /*isConstant=*/false,
                                     LLVM::Linkage::External, kWeightsBase,
                                     Attribute(), /*alignment=*/8);
  b.setInsertionPointToStart(&base.getInitializerRegion().emplaceBlock());
  LLVM::ReturnOp::create(
      b, module.getLoc(),
      LLVM::ZeroOp::create(b, module.getLoc(), ptrType).getResult());

  llvm::DenseMap<StringAttr, uint64_t> offsets;
  for (Weight weight : weights)
    offsets[weight.global.getSymNameAttr()] = weight.offset;
  module.walk([&](LLVM::AddressOfOp address) {
    auto it = offsets.find(address.getGlobalNameAttr().getAttr());
    // Device code (gpu.module) has symbols of its own.
    if (it == offsets.end() ||
        address->getParentWithTrait<OpTrait::SymbolTable>() != module)
      return;
    OpBuilder b(address);
    Location loc = address.getLoc();
    Value basePtr = LLVM::AddressOfOp::create(b, loc, base);
    auto load = LLVM::LoadOp::create(b, loc, ptrType, basePtr, /*alignment=*/8,
                                     /*isVolatile=*/false,
                                     /*isNonTemporal=*/false,
                                     /*isInvariant=*/true);
    // A constant GEP index is stored in kGEPConstantBitWidth (29) signed
    // bits and silently truncated beyond: offsets from 256 MiB on need a
    // value.
    constexpr uint64_t kMaxConstantIndex =
        (uint64_t(1) << (LLVM::kGEPConstantBitWidth - 1)) - 1;
    LLVM::GEPArg offset =
        it->second <= kMaxConstantIndex
            ? LLVM::GEPArg(static_cast<int32_t>(it->second))
            : LLVM::GEPArg(LLVM::ConstantOp::create(
                  b, loc, b.getI64Type(),
                  b.getI64IntegerAttr(static_cast<int64_t>(it->second))));
    Value weight = LLVM::GEPOp::create(b, loc, ptrType, i8, load,
                                       ArrayRef<LLVM::GEPArg>{offset},
                                       LLVM::GEPNoWrapFlags::inbounds);
    address.replaceAllUsesWith(weight);
    address.erase();
  });
}

void ExternalizeWeightsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (path.empty()) {
    module.emitError() << "spec-externalize-weights needs path=<weights file>";
    return signalPassFailure();
  }
  if (module.lookupSymbol(kWeightsBase)) {
    module.emitError() << "the module already defines @" << kWeightsBase
                       << " (weights externalized twice?)";
    return signalPassFailure();
  }

  // The constants to move, at 64-byte aligned offsets (or their own larger
  // alignment).
  SmallVector<Weight> weights;
  std::vector<std::vector<char>> expanded;
  uint64_t size = 0;
  for (auto global : module.getOps<LLVM::GlobalOp>()) {
    if (!global.getConstant())
      continue;
    FailureOr<std::optional<ArrayRef<char>>> bytes =
        initializerBytes(global, splats, expanded);
    if (failed(bytes))
      return signalPassFailure();
    if (!*bytes || static_cast<int64_t>((*bytes)->size()) < minBytes)
      continue;
    uint64_t alignment =
        std::max<uint64_t>(64, global.getAlignment().value_or(0));
    size = llvm::alignTo(size, alignment);
    weights.push_back({global, **bytes, size});
    size += (*bytes)->size();
  }

  std::unique_ptr<llvm::ToolOutputFile> file;
  if (failed(writeWeightsFile(module, path, weights, file)))
    return signalPassFailure();
  redirectAddresses(module, weights);
  for (Weight &weight : weights)
    weight.global.erase();
  file->keep();
}
