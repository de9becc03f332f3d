//===- ColumnPanels.cpp - constant weights stored as column panels --------===//

#include "passes/CPU/ColumnPanels.h"
#include "passes/Common/WeightContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cstring>
#include <mutex>

using namespace mlir;
using namespace specula;

namespace {
/// A column tile's read of a constant `[K, N]` weight: `[K, width]` from a
/// static column `offset`, or from the induction variable of a loop that
/// starts at 0 and steps by `width`.
struct ColumnRead {
  tensor::ExtractSliceOp slice;
  int64_t width;
  std::optional<int64_t> offset;
};
} // namespace

/// The bytes of `attr`, when the pass can copy them (not elided, no splat).
static std::optional<ArrayRef<char>> rawBytes(ElementsAttr attr) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    return blob ? std::optional(blob->getData()) : std::nullopt;
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense || dense.isSplat())
    return std::nullopt;
  return dense.getRawData();
}

/// The column tile read `slice` makes, or nullopt.
static std::optional<ColumnRead> columnRead(tensor::ExtractSliceOp slice) {
  RankedTensorType source = slice.getSourceType();
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  if (source.getRank() != 2 || !source.hasStaticShape() ||
      slice.getResultType().getRank() != 2 || strides[0] != 1 ||
      strides[1] != 1 || offsets[0] != 0 || sizes[0] != source.getDimSize(0) ||
      ShapedType::isDynamic(sizes[1]))
    return std::nullopt;
  ColumnRead read{slice, sizes[1], std::nullopt};
  if (!ShapedType::isDynamic(offsets[1])) {
    read.offset = offsets[1];
    return read;
  }
  auto iv = dyn_cast<BlockArgument>(slice.getOffsets().front());
  auto loop =
      iv ? dyn_cast<scf::ForOp>(iv.getOwner()->getParentOp()) : scf::ForOp();
  if (!loop || loop.getInductionVar() != iv)
    return std::nullopt;
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  if (lower != 0 || step != read.width || !upper ||
      *upper > source.getDimSize(1))
    return std::nullopt;
  return read;
}

/// Appends columns [first, first + width) of every row of the row-major
/// `[rows, columns]` matrix `data`.
static void copyColumns(ArrayRef<char> data, int64_t rows, int64_t columns,
                        int64_t elementBytes, int64_t first, int64_t width,
                        std::vector<char> &out) {
  for (int64_t row = 0; row < rows; ++row) {
    const char *begin = data.data() + (row * columns + first) * elementBytes;
    out.insert(out.end(), begin, begin + width * elementBytes);
  }
}

/// `bytes` as a constant of `type` stored like `like`: a resource named
/// after its blob with `suffix`, the one resource for every function that
/// packs the same weight the same way (a model's twins read the same
/// weights, and functions are blocked on several threads), or a dense
/// attribute (uniqued by its contents anyway).
static TypedAttr storeLike(ElementsAttr like, RankedTensorType type,
                           ArrayRef<char> bytes, const llvm::Twine &suffix) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(like);
  if (!resource)
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string name = (resource.getRawHandle().getKey() + "_" + suffix).str();
  auto &manager =
      DenseResourceElementsHandle::getManagerInterface(type.getContext());
  // Reused only with the same bytes: a context may compile several models
  // whose weights have the same names.
  if (auto *entry = manager.getBlobManager().lookup(name)) {
    AsmResourceBlob *blob = entry->getBlob();
    if (blob && blob->getData().size() == bytes.size() &&
        std::memcmp(blob->getData().data(), bytes.data(), bytes.size()) == 0)
      return DenseResourceElementsAttr::get(
          type, DenseResourceElementsHandle(
                    entry, resource.getRawHandle().getDialect()));
  }
  return DenseResourceElementsAttr::get(
      type, name,
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t)));
}

/// Packs `constant` when every use of it is one of `reads` and the loops'
/// tiles share one width; returns whether it did.
static bool packConstant(arith::ConstantOp constant, ArrayRef<ColumnRead> reads,
                         RewriterBase &rewriter) {
  auto attr = dyn_cast<ElementsAttr>(constant.getValue());
  auto type = cast<RankedTensorType>(constant.getType());
  std::optional<ArrayRef<char>> data = attr ? rawBytes(attr) : std::nullopt;
  int64_t bits = type.getElementTypeBitWidth();
  if (!data || (bits != 8 && bits != 16 && bits != 32))
    return false;
  llvm::SmallPtrSet<Operation *, 8> slices;
  std::optional<int64_t> panelWidth;
  for (const ColumnRead &read : reads) {
    slices.insert(read.slice);
    if (!read.offset && panelWidth.value_or(read.width) != read.width)
      return false;
    if (!read.offset)
      panelWidth = read.width;
  }
  if (llvm::any_of(constant->getUsers(),
                   [&](Operation *user) { return !slices.contains(user); }))
    return false;

  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  Type element = type.getElementType();
  Location loc = constant.getLoc();
  rewriter.setInsertionPointAfter(constant);
  Value panels;
  if (panelWidth) {
    int64_t count = columns / *panelWidth;
    std::vector<char> bytes;
    bytes.reserve(count * rows * *panelWidth * bits / 8);
    for (int64_t panel = 0; panel < count; ++panel)
      copyColumns(*data, rows, columns, bits / 8, panel * *panelWidth,
                  *panelWidth, bytes);
    auto panelType = RankedTensorType::get({count, rows, *panelWidth}, element);
    panels = arith::ConstantOp::create(
        rewriter, loc,
        storeLike(attr, panelType, bytes, "panels" + Twine(*panelWidth)));
  }
  for (ColumnRead read : reads) {
    if (read.offset) {
      std::vector<char> bytes;
      copyColumns(*data, rows, columns, bits / 8, *read.offset, read.width,
                  bytes);
      rewriter.setInsertionPointAfter(constant);
      Value tile = arith::ConstantOp::create(
          rewriter, loc,
          storeLike(attr, read.slice.getResultType(), bytes,
                    "columns" + Twine(*read.offset) + "x" + Twine(read.width)));
      rewriter.replaceOp(read.slice, tile);
      continue;
    }
    // Tile p (its first column p x width) reads panel p.
    rewriter.setInsertionPoint(read.slice);
    Location sliceLoc = read.slice.getLoc();
    Value width =
        arith::ConstantIndexOp::create(rewriter, sliceLoc, read.width);
    Value panel = arith::DivUIOp::create(
        rewriter, sliceLoc, read.slice.getOffsets().front(), width);
    SmallVector<OpFoldResult> offsets{panel, rewriter.getIndexAttr(0),
                                      rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(1),
                                    rewriter.getIndexAttr(rows),
                                    rewriter.getIndexAttr(read.width)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        read.slice, read.slice.getResultType(), panels, offsets, sizes,
        strides);
  }
  rewriter.eraseOp(constant);
  return true;
}

bool specula::packColumnPanels(ArrayRef<linalg::LinalgOp> ops,
                               RewriterBase &rewriter) {
  llvm::MapVector<Operation *, SmallVector<ColumnRead>> reads;
  llvm::SmallPtrSet<Operation *, 16> seen;
  for (linalg::LinalgOp op : ops) {
    std::optional<ContractionDims> dims = matchWeightContraction(op);
    if (!dims)
      continue;
    OpOperand &weight = op->getOpOperand(dims->weight);
    AffineMap map = op.getMatchingIndexingMap(&weight);
    // A transposed weight's (`[N, K]`) tiles are contiguous already.
    if (map.getNumResults() != 2 || map.getDimPosition(1) != dims->columns)
      continue;
    auto slice = weight.get().getDefiningOp<tensor::ExtractSliceOp>();
    auto constant = slice ? slice.getSource().getDefiningOp<arith::ConstantOp>()
                          : arith::ConstantOp();
    if (!constant || !seen.insert(slice).second)
      continue;
    // A read that is not a column tile's keeps the old layout (the
    // constant then has a use packConstant does not know).
    if (std::optional<ColumnRead> read = columnRead(slice))
      reads[constant].push_back(*read);
  }
  bool packed = false;
  for (auto &[constant, columnReads] : reads)
    packed |=
        packConstant(cast<arith::ConstantOp>(constant), columnReads, rewriter);
  return packed;
}
