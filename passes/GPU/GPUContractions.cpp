//===- GPUContractions.cpp - GPU loops for weight contractions ------------===//
//
// Rewrites contractions whose rows share an operand into scf.parallel nests
// in which a thread loads each (vector of) weight once for a tile of rows and
// computes a slice of the reduction; spec-gpu-schedule maps the nests.
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/FuseParallelLoops.h"
#include "passes/GPU/Passes.h"
#include "passes/Common/WeightContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

namespace specula {
#define GEN_PASS_DEF_SPECGPUCONTRACTIONS
#include "passes/GPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
struct Schedule;

struct GPUContractionsPass
    : public specula::impl::SpecGPUContractionsBase<GPUContractionsPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override {
    auto fail = [&](StringRef what) {
      return emitError(UnknownLoc::get(context))
             << "spec-gpu-contractions: " << what;
    };
    if (rows < 1 || rows > 16 || !llvm::isPowerOf2_64(rows))
      return fail("rows must be a power of two in [1, 16], got ")
             << static_cast<int64_t>(rows);
    if (vectorWidth != 1 && vectorWidth != 2 && vectorWidth != 4)
      return fail("vector-width must be 1, 2 or 4, got ")
             << static_cast<int64_t>(vectorWidth);
    if (sliceDepth < 1)
      return fail("slice-depth must be at least 1, got ")
             << static_cast<int64_t>(sliceDepth);
    if (splitMinBytes < 0)
      return fail("split-min-bytes must not be negative, got ")
             << static_cast<int64_t>(splitMinBytes);
    return success();
  }
  void runOnOperation() override;

private:
  /// How `op` is computed, if it is a weight contraction this pass takes.
  std::optional<Schedule> scheduleFor(linalg::LinalgOp op);
};

/// How one contraction is computed.
struct Schedule {
  ContractionDims dims;
  int64_t width;  // columns per thread
  bool aligned;   // `w`'s column vectors are `width`-element aligned
  int64_t slices; // reduction slices (1: not split)
  int64_t depth;  // reduction steps per slice (when split)
  SmallVector<int64_t> rowTiles; // tile sizes, largest first, ending in 1
};
} // namespace

/// Whether `op`'s body is `out + a * w` on f32 (either operand order).
static bool isMultiplyAdd(linalg::LinalgOp op) {
  Block &body = op->getRegion(0).front();
  if (!llvm::all_of(body.getArgumentTypes(),
                    [](Type type) { return type.isF32(); }))
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues().front().getDefiningOp<arith::AddFOp>();
  if (!add || body.getOperations().size() != 3)
    return false;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value in0 = body.getArgument(0), in1 = body.getArgument(1);
  return (mul.getLhs() == in0 && mul.getRhs() == in1) ||
         (mul.getLhs() == in1 && mul.getRhs() == in0);
}

/// Whether `memref` starts at an address aligned to `bytes`: a global or an
/// allocation with at least that alignment, seen through ops that keep the
/// base address.
static bool hasAlignedBase(Value memref, uint64_t bytes) {
  while (Operation *def = memref.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return alloc.getAlignment().value_or(0) >= bytes;
    if (auto get = dyn_cast<memref::GetGlobalOp>(def)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      return global && global.getAlignment().value_or(0) >= bytes;
    }
    if (isa<memref::ReshapeOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::CastOp>(def)) {
      memref = def->getOperand(0);
      continue;
    }
    return false;
  }
  return false;
}

/// Whether `memref`'s innermost dimension is contiguous and every other
/// stride and the offset are static multiples of `width` elements.
static bool hasAlignedRows(MemRefType type, int64_t width) {
  if (type.getLayout().isIdentity())
    return type.getRank() <= 1 || (!type.isDynamicDim(type.getRank() - 1) &&
                                   type.getShape().back() % width == 0);
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() != 1 || ShapedType::isDynamic(offset) || offset % width)
    return false;
  for (int64_t stride : ArrayRef(strides).drop_back())
    if (ShapedType::isDynamic(stride) || stride % width)
      return false;
  return true;
}

/// The row tiles of a thread's rows: `rows`, then for the rows left over 6
/// (when smaller than `rows`) and the powers of two below `rows`.
static SmallVector<int64_t> rowTileSizes(int64_t rows) {
  SmallVector<int64_t> tiles{rows};
  for (int64_t t = rows / 2; t >= 1; t /= 2) {
    if (t < 6 && tiles.back() > 6 && rows > 6)
      tiles.push_back(6);
    tiles.push_back(t);
  }
  return tiles;
}

/// Whether a contraction may move past `op`: it touches no memory, or only
/// allocates.
static bool touchesNoMemory(Operation *op) {
  if (op->getNumRegions())
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return isMemoryEffectFree(op) ||
         (effects && effects.onlyHasEffect<MemoryEffects::Allocate>());
}

/// The linalg.fill that initializes `op`'s output, if it writes that very
/// buffer just before `op` with only ops that touch no memory (or allocate)
/// in between: `op` then starts from the fill's value, and the fill is a
/// kernel launch saved.
static linalg::FillOp initializingFill(linalg::LinalgOp op) {
  Value init = op.getDpsInitOperand(0)->get();
  Operation *prior = op->getPrevNode();
  while (prior && touchesNoMemory(prior))
    prior = prior->getPrevNode();
  auto fill = dyn_cast_or_null<linalg::FillOp>(prior);
  return fill && fill.hasPureBufferSemantics() && fill.getOutputs()[0] == init
             ? fill
             : nullptr;
}

/// Indices through `map` (of dimensions and constants) for the loop values
/// `loops` (unset ones are never read).
static SmallVector<Value> mapIndices(ImplicitLocOpBuilder &b, AffineMap map,
                                     ArrayRef<Value> loops) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      indices.push_back(loops[dim.getPosition()]);
    else
      indices.push_back(b.create<arith::ConstantIndexOp>(
          cast<AffineConstantExpr>(expr).getValue()));
  }
  return indices;
}

/// `op`'s value at the element whose loop values are `element`: an
/// elementwise generic's body on its operands loaded there (or, for the
/// operand numbers in `given`, the values given with them).
static Value computeElement(ImplicitLocOpBuilder &b, linalg::GenericOp op,
                            ArrayRef<Value> element,
                            ArrayRef<std::pair<unsigned, Value>> given = {}) {
  Block *body = op.getBody();
  auto load = [&](OpOperand *operand) -> Value {
    return b.create<memref::LoadOp>(
        operand->get(),
        mapIndices(b, op.getMatchingIndexingMap(operand), element));
  };
  IRMapping mapping;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument argument = body->getArgument(operand.getOperandNumber());
    auto it = llvm::find_if(given, [&](const auto &pair) {
      return pair.first == operand.getOperandNumber();
    });
    if (it != given.end())
      mapping.map(argument, it->second);
    else if (!argument.use_empty())
      mapping.map(argument, load(&operand));
  }
  for (Operation &bodyOp : body->without_terminator())
    b.clone(bodyOp, mapping);
  return mapping.lookupOrDefault(
      cast<linalg::YieldOp>(body->getTerminator()).getValues().front());
}

/// Whether `op` is elementwise over its one output: all loops parallel, the
/// output's dimensions, identity output map, inputs read at dimensions or
/// constants, no linalg.index.
static bool isElementwise(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != op.getNumParallelLoops() ||
      op.getNumLoops() !=
          cast<MemRefType>(op.getDpsInitOperand(0)->get().getType())
              .getRank() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity() ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    return llvm::all_of(op.getMatchingIndexingMap(input).getResults(),
                        [](AffineExpr expr) {
                          return isa<AffineDimExpr, AffineConstantExpr>(expr);
                        });
  });
}

namespace {
/// An elementwise op that reads a contraction's output element by element
/// right after it: the contraction's threads apply it to their accumulators.
struct Epilogue {
  linalg::GenericOp op;
  unsigned outputInput; // the input that is the contraction's output
  bool storeOutput;     // whether the contraction's own values are read later
};
} // namespace

/// The epilogue of `op` (not split): the next op that touches memory, if it
/// is an elementwise generic over `op`'s output space that reads the output
/// once, at the same element, and whose writes no thread of `op` could read.
static std::optional<Epilogue> epilogueOf(linalg::LinalgOp op) {
  Value out = op.getDpsInitOperand(0)->get();
  Operation *next = op->getNextNode();
  while (next && touchesNoMemory(next))
    next = next->getNextNode();
  auto consumer = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!consumer || !isElementwise(consumer) ||
      consumer.getNumLoops() != cast<MemRefType>(out.getType()).getRank())
    return std::nullopt;
  Value result = consumer.getDpsInitOperand(0)->get();
  std::optional<unsigned> outputInput;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(input);
    if (input->get() == out && map.isIdentity() && !outputInput) {
      outputInput = input->getOperandNumber();
      continue;
    }
    if (mayShareMemory(input->get(), out) ||
        mayShareMemory(input->get(), result))
      return std::nullopt;
  }
  if (!outputInput)
    return std::nullopt;
  // A thread writes its results while others still read `a` and `w`.
  for (OpOperand *input : op.getDpsInputOperands())
    if (mayShareMemory(input->get(), result))
      return std::nullopt;
  if (result != out && mayShareMemory(result, out))
    return std::nullopt;
  bool storeOutput =
      result != out && (!out.getDefiningOp<memref::AllocOp>() ||
                        llvm::any_of(out.getUsers(), [&](Operation *user) {
                          return user != op && user != consumer &&
                                 !isa<memref::DeallocOp>(user);
                        }));
  return Epilogue{consumer, *outputInput, storeOutput};
}

namespace {
/// Builds the loops of one contraction in place of `op`.
class ContractionBuilder {
public:
  ContractionBuilder(linalg::LinalgOp op, const Schedule &schedule,
                     linalg::GenericOp prologue, linalg::LinalgOp partner)
      : op(op), s(schedule), b(op.getLoc(), op), prologue(prologue),
        partner(partner) {}

  void build();

private:
  /// Indices into `operand` (an input or the init) for the loop values
  /// `loops` (one per loop of the op; unset ones are never read).
  SmallVector<Value> indices(OpOperand *operand, ArrayRef<Value> loops) {
    return mapIndices(b, op.getMatchingIndexingMap(operand), loops);
  }

  VectorType vectorType() { return VectorType::get({s.width}, b.getF32Type()); }

  /// `t` rows from `firstRow`, columns from `column`, reduction [k0, k1):
  /// accumulators from `init` (or zero), results into `result` at `slice`
  /// (partial sums) or into the output.
  void emitTile(int64_t t, Value firstRow, ArrayRef<Value> outer, Value column,
                Value k0, Value k1, Value slice);
  /// Stores the `t` rows' accumulators `loop` computed (with a partner, its
  /// rows after them) at `outputAt(i)`: into the slice's partials, or the
  /// outputs and the epilogue.
  void storeTile(int64_t t, scf::ForOp loop,
                 function_ref<SmallVector<Value>(int64_t)> outputAt,
                 Value slice);

  /// The epilogue's op on the `s.width` outputs whose first one's indices
  /// are `at`, their values in `accumulator` (and `op`'s, for a partner's
  /// epilogue, in `first`).
  void emitEpilogue(Value accumulator, ArrayRef<Value> at, Value first = {});

  void takeFillsAndEpilogue();
  void emitThread(ArrayRef<Value> outer, Value tile, Value thread,
                  Value groups, Value rowCount, Value depthSize);
  void emitSliceSums(Value output);
  void eraseReplaced(Value output);

  Value index(int64_t value) { return b.create<arith::ConstantIndexOp>(value); }

  linalg::LinalgOp op;
  const Schedule &s;
  ImplicitLocOpBuilder b;
  Value partials; // the split reduction's partial sums, [slices, out...]
  Value filled;   // every output's initial value, if a fill set it
  std::optional<Epilogue> epilogue;
  linalg::GenericOp prologue; // computes the rows input, if set
  // A contraction computed by the same threads, whose epilogue reads `op`'s
  // output (the epilogue is then its).
  linalg::LinalgOp partner;
  Value partnerFilled;     // the partner's initial value, if a fill set it
  unsigned firstInput = 0; // the epilogue's input that is `op`'s output
  bool storeFirst = true;  // whether `op`'s products are read elsewhere
};
} // namespace

void ContractionBuilder::emitTile(int64_t t, Value firstRow,
                                  ArrayRef<Value> outer, Value column, Value k0,
                                  Value k1, Value slice) {
  const ContractionDims &d = s.dims;
  OpOperand *rowsInput = op.getDpsInputOperand(1 - d.weight);
  OpOperand *init = op.getDpsInitOperand(0);
  // The contractions computed: `op` and its partner, with the same maps.
  SmallVector<linalg::LinalgOp, 2> products{op};
  SmallVector<Value, 2> initial{filled};
  if (partner) {
    products.push_back(partner);
    initial.push_back(partnerFilled);
  }
  SmallVector<Value> loops(op.getNumLoops());
  for (auto [loop, value] : llvm::zip(d.outer, outer))
    loops[loop] = value;
  loops[d.columns] = column;

  VectorType type = vectorType();
  // The output element (row i) a tile's accumulator i stands for.
  auto outputAt = [&](int64_t i) {
    loops[d.rows] = b.create<arith::AddIOp>(firstRow, index(i));
    return indices(init, loops);
  };
  // Accumulator j * t + i: product j, row i.
  SmallVector<Value> accumulators;
  Value zero = b.create<arith::ConstantOp>(
      type, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
  for (auto [product, start] : llvm::zip(products, initial)) {
    Value first = start && !slice
                      ? b.create<vector::BroadcastOp>(type, start).getResult()
                      : zero;
    for (int64_t i = 0; i < t; ++i)
      accumulators.push_back(
          slice || start
              ? first
              : b.create<vector::LoadOp>(
                     type, product.getDpsInitOperand(0)->get(), outputAt(i))
                    .getResult());
  }

  auto loop = b.create<scf::ForOp>(k0, k1, index(1), accumulators);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    loops[d.depth] = loop.getInductionVar();
    loops[d.rows] = firstRow;
    SmallVector<Value, 2> weights;
    for (linalg::LinalgOp product : products) {
      // The partner's maps are `op`'s.
      auto load = b.create<vector::LoadOp>(
          type, product.getDpsInputs()[d.weight],
          indices(op.getDpsInputOperand(d.weight), loops));
      if (s.aligned)
        load.setAlignment(static_cast<uint64_t>(s.width * 4));
      weights.push_back(load);
    }
    SmallVector<Value> next(accumulators.size());
    for (int64_t i = 0; i < t; ++i) {
      loops[d.rows] = b.create<arith::AddIOp>(firstRow, index(i));
      // The prologue's loops are the rows input's dimensions.
      SmallVector<Value> at = indices(rowsInput, loops);
      Value a =
          prologue ? computeElement(b, prologue, at)
                   : b.create<memref::LoadOp>(rowsInput->get(), at).getResult();
      Value broadcast = b.create<vector::BroadcastOp>(type, a);
      for (auto [j, weight] : llvm::enumerate(weights))
        next[j * t + i] = b.create<vector::FMAOp>(
            broadcast, weight, loop.getRegionIterArgs()[j * t + i]);
    }
    b.create<scf::YieldOp>(next);
  }
  storeTile(t, loop, outputAt, slice);
}

void ContractionBuilder::storeTile(
    int64_t t, scf::ForOp loop,
    function_ref<SmallVector<Value>(int64_t)> outputAt, Value slice) {
  OpOperand *init = op.getDpsInitOperand(0);
  for (int64_t i = 0; i < t; ++i) {
    SmallVector<Value> at = outputAt(i);
    if (slice) {
      at.insert(at.begin(), slice);
      b.create<vector::StoreOp>(loop.getResult(i), partials, at);
      continue;
    }
    if (partner) {
      Value first = loop.getResult(i), second = loop.getResult(t + i);
      if (storeFirst)
        b.create<vector::StoreOp>(first, init->get(), at);
      if (epilogue->storeOutput)
        b.create<vector::StoreOp>(second, partner.getDpsInits()[0], at);
      emitEpilogue(second, at, first);
      continue;
    }
    if (!epilogue || epilogue->storeOutput)
      b.create<vector::StoreOp>(loop.getResult(i), init->get(), at);
    if (epilogue)
      emitEpilogue(loop.getResult(i), at);
  }
}

void ContractionBuilder::emitEpilogue(Value accumulator, ArrayRef<Value> at,
                                      Value first) {
  linalg::GenericOp consumer = epilogue->op;
  Value result = consumer.getDpsInitOperand(0)->get();
  for (int64_t lane = 0; lane < s.width; ++lane) {
    // The consumer's loops are the output's dimensions (identity maps).
    SmallVector<Value> element(at);
    if (lane)
      element.back() = b.create<arith::AddIOp>(at.back(), index(lane));
    SmallVector<std::pair<unsigned, Value>, 2> given{
        {epilogue->outputInput,
         b.create<vector::ExtractOp>(accumulator, ArrayRef<int64_t>{lane})}};
    if (first)
      given.emplace_back(firstInput, b.create<vector::ExtractOp>(
                                         first, ArrayRef<int64_t>{lane}));
    Value value = computeElement(b, consumer, element, given);
    b.create<memref::StoreOp>(value, result, element);
  }
}

/// Takes the fills that initialize the outputs (their values become the
/// accumulators' initial ones) and finds the epilogue: the partner's, or
/// `op`'s own when the reduction is not split.
void ContractionBuilder::takeFillsAndEpilogue() {
  Value output = op.getDpsInitOperand(0)->get();
  if (linalg::FillOp fill = initializingFill(op)) {
    filled = fill.getInputs()[0];
    fill->erase();
  }
  if (partner) {
    if (linalg::FillOp fill = initializingFill(partner)) {
      partnerFilled = fill.getInputs()[0];
      fill->erase();
    }
    epilogue = epilogueOf(partner);
    for (OpOperand *input : epilogue->op.getDpsInputOperands())
      if (input->get() == output)
        firstInput = input->getOperandNumber();
    storeFirst = !output.getDefiningOp<memref::AllocOp>() ||
                 llvm::any_of(output.getUsers(), [&](Operation *user) {
                   return user != op && user != epilogue->op &&
                          !isa<memref::DeallocOp>(user);
                 });
  } else if (s.slices == 1) {
    epilogue = epilogueOf(op);
  }
}

/// One thread's work: outer loop values `outer`, row tile `tile`, and
/// `thread` = slice x column group; tiles of decreasing sizes while rows
/// are left, then single rows.
void ContractionBuilder::emitThread(ArrayRef<Value> outer, Value tile,
                                    Value thread, Value groups, Value rowCount,
                                    Value depthSize) {
  int64_t rowsPerTile = s.rowTiles.front();
  Value group = thread, slice, k0 = index(0), k1 = depthSize;
  if (s.slices > 1) {
    slice = b.create<arith::DivUIOp>(thread, groups);
    group = b.create<arith::RemUIOp>(thread, groups);
    k0 = b.create<arith::MulIOp>(slice, index(s.depth));
    k1 = b.create<arith::MinUIOp>(b.create<arith::AddIOp>(k0, index(s.depth)),
                                  depthSize);
  }
  Value column = b.create<arith::MulIOp>(group, index(s.width));
  Value first = b.create<arith::MulIOp>(tile, index(rowsPerTile));
  Value end = b.create<arith::MinUIOp>(
      b.create<arith::AddIOp>(first, index(rowsPerTile)), rowCount);
  for (int64_t t : s.rowTiles) {
    if (t == 1) {
      auto single = b.create<scf::ForOp>(first, end, index(1));
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(single.getBody());
      emitTile(1, single.getInductionVar(), outer, column, k0, k1, slice);
      break;
    }
    Value left = b.create<arith::SubIOp>(end, first);
    Value fits =
        b.create<arith::CmpIOp>(arith::CmpIPredicate::uge, left, index(t));
    auto branch = b.create<scf::IfOp>(fits, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(branch.thenBlock());
      emitTile(t, first, outer, column, k0, k1, slice);
    }
    first = b.create<arith::SelectOp>(
        fits, b.create<arith::AddIOp>(first, index(t)), first);
  }
}

/// A split reduction's outputs: each its initial value plus its partial
/// sums, in slice order.
void ContractionBuilder::emitSliceSums(Value output) {
  auto outputType = cast<MemRefType>(output.getType());
  SmallVector<Value> sizes;
  for (int64_t i = 0, e = outputType.getRank(); i < e; ++i)
    sizes.push_back(b.create<memref::DimOp>(output, i));
  SmallVector<Value> zeros(sizes.size(), index(0)), ones(sizes.size(), index(1));
  b.create<scf::ParallelOp>(
      zeros, sizes, ones, [&](OpBuilder &nested, Location loc, ValueRange ivs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value sum =
            filled ? filled : b.create<memref::LoadOp>(output, ivs).getResult();
        auto sumLoop = b.create<scf::ForOp>(index(0), index(s.slices), index(1),
                                            ValueRange{sum});
        {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToStart(sumLoop.getBody());
          SmallVector<Value> at{sumLoop.getInductionVar()};
          llvm::append_range(at, ivs);
          Value partial = b.create<memref::LoadOp>(partials, at);
          b.create<scf::YieldOp>(ValueRange{
              b.create<arith::AddFOp>(sumLoop.getRegionIterArgs()[0], partial)});
        }
        b.create<memref::StoreOp>(sumLoop.getResult(0), output, ivs);
      });
  b.create<memref::DeallocOp>(partials);
}

/// Erases the ops the loops replace, and the buffers of products never
/// stored.
void ContractionBuilder::eraseReplaced(Value output) {
  Value second = partner ? partner.getDpsInits()[0] : Value();
  if (epilogue)
    epilogue->op->erase();
  if (partner)
    partner->erase();
  op->erase();
  auto eraseIfUnused = [](Value buffer) {
    if (!buffer.getDefiningOp<memref::AllocOp>() ||
        !llvm::all_of(buffer.getUsers(), [](Operation *user) {
          return isa<memref::DeallocOp>(user);
        }))
      return;
    for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
      user->erase();
    buffer.getDefiningOp()->erase();
  };
  if (epilogue && !epilogue->storeOutput)
    eraseIfUnused(partner ? second : output);
  if (partner && !storeFirst)
    eraseIfUnused(output);
}

void ContractionBuilder::build() {
  const ContractionDims &d = s.dims;
  Value output = op.getDpsInitOperand(0)->get();
  auto outputType = cast<MemRefType>(output.getType());
  SmallVector<Range> ranges = op.createLoopRanges(b, b.getLoc());
  auto size = [&](unsigned loop) {
    return getValueOrCreateConstantIndexOp(b, b.getLoc(), ranges[loop].size);
  };
  takeFillsAndEpilogue();
  // Where the consumer was: the ops in between (allocations, views) may
  // define its operands.
  if (epilogue)
    b.setInsertionPoint(epilogue->op);
  Value rowCount = size(d.rows);
  Value depthSize = size(d.depth);
  // Column groups (a dynamic column count has groups of one column).
  Value groups =
      s.width == 1
          ? size(d.columns)
          : index(*getConstantIntValue(ranges[d.columns].size) / s.width);
  if (s.slices > 1) {
    SmallVector<int64_t> shape{s.slices};
    llvm::append_range(shape, outputType.getShape());
    SmallVector<Value> dynamic;
    for (int64_t i = 0, e = outputType.getRank(); i < e; ++i)
      if (outputType.isDynamicDim(i))
        dynamic.push_back(b.create<memref::DimOp>(output, i));
    partials = b.create<memref::AllocOp>(MemRefType::get(shape, b.getF32Type()),
                                         dynamic, b.getI64IntegerAttr(64));
  }

  // Threads: outer loops x row tiles x (slices x column groups).
  SmallVector<Value> lower, upper, steps;
  for (unsigned loop : d.outer)
    upper.push_back(size(loop));
  upper.push_back(
      b.create<arith::CeilDivUIOp>(rowCount, index(s.rowTiles.front())));
  upper.push_back(b.create<arith::MulIOp>(index(s.slices), groups));
  lower.assign(upper.size(), index(0));
  steps.assign(upper.size(), index(1));
  b.create<scf::ParallelOp>(
      lower, upper, steps, [&](OpBuilder &nested, Location loc, ValueRange ivs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        emitThread(SmallVector<Value>(ivs.drop_back(2)), ivs[ivs.size() - 2],
                   ivs.back(), groups, rowCount, depthSize);
      });
  if (s.slices > 1)
    emitSliceSums(output);
  eraseReplaced(output);
}

/// The contraction right after `op` (but for an initializing fill and ops
/// that touch no memory) that `op`'s threads may compute too, in the same
/// loop over the reduction: the same schedule, indexing maps, loop sizes and
/// rows input, an epilogue that reads `op`'s output at the same element
/// (SwiGLU's `silu(gate) * up` after the gate and up projections), `op`
/// without an epilogue of its own, and no buffer one of them writes touched
/// by the other. Null if there is none.
static linalg::LinalgOp
partnerOf(linalg::LinalgOp op, const Schedule &s,
          const DenseMap<Operation *, const Schedule *> &scheduleOf) {
  if (s.slices != 1 || epilogueOf(op))
    return {};
  Operation *next = op->getNextNode();
  while (next && (touchesNoMemory(next) || isa<linalg::FillOp>(next)))
    next = next->getNextNode();
  auto partner = dyn_cast_or_null<linalg::LinalgOp>(next);
  auto found = scheduleOf.find(partner);
  if (!partner || found == scheduleOf.end())
    return {};
  const Schedule &t = *found->second;
  const ContractionDims &d = s.dims, &e = t.dims;
  if (t.slices != 1 || t.width != s.width || t.aligned != s.aligned ||
      t.rowTiles != s.rowTiles || d.outer != e.outer || d.rows != e.rows ||
      d.columns != e.columns || d.depth != e.depth || d.weight != e.weight ||
      op.getIndexingMapsArray() != partner.getIndexingMapsArray() ||
      op.getStaticLoopRanges() != partner.getStaticLoopRanges() ||
      op.getDpsInputs()[1 - d.weight] != partner.getDpsInputs()[1 - d.weight])
    return {};
  // The fills passed over initialize the partner's output.
  linalg::FillOp fill = initializingFill(partner);
  for (Operation *between = op->getNextNode(); between != next;
       between = between->getNextNode())
    if (isa<linalg::FillOp>(between) && between != fill)
      return {};
  std::optional<Epilogue> epilogue = epilogueOf(partner);
  Value out = op.getDpsInits()[0];
  // The epilogue reads `op`'s output once, at the same element: from the
  // same thread's registers.
  if (!epilogue)
    return {};
  SmallVector<OpOperand *> outReads;
  for (OpOperand *input : epilogue->op.getDpsInputOperands())
    if (mayShareMemory(input->get(), out))
      outReads.push_back(input);
  if (outReads.size() != 1 || outReads.front()->get() != out ||
      !epilogue->op.getMatchingIndexingMap(outReads.front()).isIdentity())
    return {};
  SmallVector<Value> partnerWrites{partner.getDpsInits()[0],
                                   epilogue->op.getDpsInits()[0]};
  for (Value written : partnerWrites)
    if (mayShareMemory(written, out) ||
        llvm::any_of(op.getDpsInputs(), [&](Value input) {
          return mayShareMemory(written, input);
        }))
      return {};
  if (llvm::any_of(partner.getDpsInputs(),
                   [&](Value input) { return mayShareMemory(out, input); }))
    return {};
  return partner;
}

/// Whether `op` may be computed again wherever its output is read: an
/// elementwise generic that never reads its output's old value, whose inputs
/// share no memory with its output (but for the output itself at the same
/// element: an op in place) and whose body is at most four arith ops (each
/// thread that reads an element computes it: no math functions).
static bool isRecomputable(linalg::GenericOp op) {
  if (!isElementwise(op))
    return false;
  Block *body = op.getBody();
  if (!body->getArguments().back().use_empty() ||
      body->getOperations().size() > 5 ||
      !llvm::all_of(body->without_terminator(), [](Operation &bodyOp) {
        return isa<arith::ArithDialect>(bodyOp.getDialect());
      }))
    return false;
  Value out = op.getDpsInitOperand(0)->get();
  return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    return !mayShareMemory(input->get(), out) ||
           (input->get() == out &&
            op.getMatchingIndexingMap(input).isIdentity());
  });
}

/// Whether `op` writes every element of `buffer` without reading it.
static bool overwrites(linalg::LinalgOp op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation()))
    return fill.getOutputs()[0] == buffer;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  return generic && isElementwise(generic) &&
         generic.getDpsInitOperand(0)->get() == buffer &&
         generic.getBody()->getArguments().back().use_empty() &&
         llvm::none_of(generic.getDpsInputOperands(), [&](OpOperand *input) {
           return mayShareMemory(input->get(), buffer);
         });
}

/// The contractions that may compute recomputable `producer` where they read
/// its output as their rows input (`rowsInputOf` names each contraction's),
/// instead of `producer` writing it: every read of that output, from
/// `producer` to where it is overwritten, freed or its block ends (a fresh
/// allocation's), is such a contraction's, and nothing before the last one
/// writes `producer`'s inputs or the output. Empty where there are none or
/// something else may read the output.
static SmallVector<Operation *>
prologueReaders(linalg::GenericOp producer,
                const DenseMap<Operation *, unsigned> &rowsInputOf) {
  Value out = producer.getDpsInitOperand(0)->get();
  SmallVector<Value> inputs = producer.getDpsInputs();
  auto touchesInputs = [&](Value buffer) {
    return llvm::any_of(
        inputs, [&](Value input) { return mayShareMemory(buffer, input); });
  };
  auto memrefs = [](Operation *op) {
    return llvm::make_filter_range(op->getOperands(), [](Value operand) {
      return isa<MemRefType>(operand.getType());
    });
  };
  SmallVector<Operation *> readers;
  bool inputsKept = true;
  for (Operation *op = producer->getNextNode(); op; op = op->getNextNode()) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      if (mayShareMemory(dealloc.getMemref(), out))
        return readers;
      inputsKept &= !touchesInputs(dealloc.getMemref());
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || !linalgOp.hasPureBufferSemantics()) {
      // Views, sizes and allocations; a terminator must not pass the output
      // on; anything else must stay away from both buffers.
      if (op->hasTrait<OpTrait::IsTerminator>() &&
          llvm::any_of(memrefs(op), [&](Value buffer) {
            return mayShareMemory(buffer, out);
          }))
        return {};
      if (touchesNoMemory(op))
        continue;
      if (op->getNumRegions() || isa<CallOpInterface>(op) ||
          llvm::any_of(memrefs(op), [&](Value buffer) {
            return mayShareMemory(buffer, out) || touchesInputs(buffer);
          }))
        return {};
      continue;
    }
    bool readsOut = llvm::any_of(linalgOp.getDpsInputs(), [&](Value buffer) {
      return mayShareMemory(buffer, out);
    });
    bool writesOut = llvm::any_of(linalgOp.getDpsInits(), [&](Value buffer) {
      return mayShareMemory(buffer, out);
    });
    bool writesInputs = llvm::any_of(linalgOp.getDpsInits(), touchesInputs);
    auto rows = rowsInputOf.find(op);
    if (rows != rowsInputOf.end() && op->getOperand(rows->second) == out &&
        !writesOut) {
      // Its threads write while others still read the inputs.
      if (!inputsKept || writesInputs ||
          llvm::any_of(linalgOp.getDpsInputOperands(), [&](OpOperand *input) {
            return input->getOperandNumber() != rows->second &&
                   mayShareMemory(input->get(), out);
          }))
        return {};
      readers.push_back(op);
      continue;
    }
    if (readsOut)
      return {};
    if (writesOut)
      return overwrites(linalgOp, out) ? readers : SmallVector<Operation *>{};
    inputsKept &= !writesInputs;
  }
  auto alloc = out.getDefiningOp<memref::AllocOp>();
  if (alloc && alloc->getBlock() == producer->getBlock())
    return readers;
  return {};
}

std::optional<Schedule>
GPUContractionsPass::scheduleFor(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || !isMultiplyAdd(op))
    return std::nullopt;
  std::optional<ContractionDims> dims = matchWeightContraction(op);
  if (!dims)
    return std::nullopt;
  Value weight = op.getDpsInputOperand(dims->weight)->get();
  auto weightType = cast<MemRefType>(weight.getType());
  auto outputType =
      cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  int64_t columns = bounds[dims->columns];
  // Groups of columns are vectors when `n` is `w`'s and the output's
  // innermost, contiguous dimension, of a static size they divide.
  AffineMap w =
      op.getMatchingIndexingMap(op.getDpsInputOperand(dims->weight));
  bool vectors = w.getNumResults() > 0 &&
                 w.getResults().back() ==
                     getAffineDimExpr(dims->columns, op.getContext()) &&
                 hasAlignedRows(weightType, 1) &&
                 hasAlignedRows(outputType, 1);
  Schedule schedule;
  schedule.dims = *dims;
  schedule.width = 1;
  for (int64_t width = vectorWidth; width > 1; width /= 2)
    if (vectors && !ShapedType::isDynamic(columns) && columns % width == 0) {
      schedule.width = width;
      break;
    }
  schedule.aligned = schedule.width > 1 &&
                     hasAlignedRows(weightType, schedule.width) &&
                     hasAlignedBase(weight, schedule.width * 4);
  int64_t depth = bounds[dims->depth];
  schedule.slices = 1;
  schedule.depth = depth;
  if (weightType.hasStaticShape() && !ShapedType::isDynamic(depth) &&
      depth > sliceDepth &&
      weightType.getNumElements() * 4 >= splitMinBytes) {
    schedule.slices = llvm::divideCeil(depth, sliceDepth);
    schedule.depth = sliceDepth;
  }
  schedule.rowTiles = rowTileSizes(rows);
  return schedule;
}

void GPUContractionsPass::runOnOperation() {
  SmallVector<std::pair<linalg::LinalgOp, Schedule>> work;
  getOperation().walk([&](linalg::LinalgOp op) {
    if (std::optional<Schedule> schedule = scheduleFor(op))
      work.emplace_back(op, *schedule);
  });

  // Prologues: elementwise producers of contractions' rows inputs (a
  // normalization's scaling) that the contractions compute as they read.
  DenseMap<Operation *, linalg::GenericOp> prologueOf;
  SmallVector<linalg::GenericOp> producers;
  if (prologues) {
    DenseMap<Operation *, unsigned> rowsInputOf;
    DenseSet<Operation *> epilogues;
    for (auto &[op, schedule] : work) {
      rowsInputOf[op] =
          op.getDpsInputOperand(1 - schedule.dims.weight)->getOperandNumber();
      if (schedule.slices == 1)
        if (std::optional<Epilogue> epilogue = epilogueOf(op))
          epilogues.insert(epilogue->op);
    }
    getOperation().walk([&](linalg::GenericOp producer) {
      if (epilogues.contains(producer) || !isRecomputable(producer))
        return;
      SmallVector<Operation *> readers = prologueReaders(producer, rowsInputOf);
      if (readers.empty())
        return;
      for (Operation *reader : readers)
        prologueOf[reader] = producer;
      producers.push_back(producer);
    });
  }
  // Partners: contractions computed by the threads of the one before.
  DenseMap<Operation *, const Schedule *> scheduleOf;
  for (auto &[op, schedule] : work)
    scheduleOf[op] = &schedule;
  DenseMap<Operation *, linalg::LinalgOp> pairedWith;
  DenseSet<Operation *> partners;
  if (pairs)
    for (auto &[op, schedule] : work)
      if (!partners.contains(op))
        if (linalg::LinalgOp partner = partnerOf(op, schedule, scheduleOf)) {
          pairedWith[op] = partner;
          partners.insert(partner);
        }
  for (auto &[op, schedule] : work)
    if (!partners.contains(op))
      ContractionBuilder(op, schedule, prologueOf.lookup(op),
                         pairedWith.lookup(op))
          .build();
  for (linalg::GenericOp producer : producers)
    producer->erase();
}
