//===- FuseParallelLoops.cpp - one kernel for adjacent loop nests ---------===//

#include "passes/GPU/FuseParallelLoops.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace specula;

namespace {
/// A read or write of a buffer by a loop's body.
struct Access {
  Value memref; // the view accessed
  Value root;   // the buffer it is a view of
  bool write;
  /// For memref.load and memref.store; other accesses may touch any element.
  std::optional<SmallVector<Value>> indices;
};

/// A loop bound: a constant, or dimension `dim` of `value` (-1: the value).
struct Extent {
  std::optional<int64_t> constant;
  Value value;
  int64_t dim = -1;
  bool operator==(const Extent &other) const {
    if (constant || other.constant)
      return constant == other.constant;
    return value == other.value && dim == other.dim;
  }
};
} // namespace

static Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// Whether two buffers (not views) may share memory.
static bool mayAlias(Value a, Value b) {
  if (a == b)
    return true;
  auto fresh = [](Value v) {
    return v.getDefiningOp<memref::AllocOp>() ||
           v.getDefiningOp<memref::AllocaOp>();
  };
  if (fresh(a) || fresh(b))
    return false;
  auto globalA = a.getDefiningOp<memref::GetGlobalOp>();
  auto globalB = b.getDefiningOp<memref::GetGlobalOp>();
  if (globalA && globalB)
    return globalA.getName() == globalB.getName();
  return true;
}

/// The value that dynamic dimension `index` of `memref` was made with: an
/// allocation's size, a view's size, a reshape's shape (stored once into a
/// fresh buffer); null if none is known.
static Value sizeOfDim(Value memref, int64_t index) {
  auto type = cast<MemRefType>(memref.getType());
  Operation *def = memref.getDefiningOp();
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def))
    return alloc.getDynamicSizes()[type.getDynamicDimIndex(index)];
  if (auto subview = dyn_cast_or_null<memref::SubViewOp>(def)) {
    if (!subview.getDroppedDims().none())
      return nullptr;
    OpFoldResult size = subview.getMixedSizes()[index];
    return dyn_cast<Value>(size);
  }
  if (auto castOp = dyn_cast_or_null<memref::CastOp>(def)) {
    auto source = cast<MemRefType>(castOp.getSource().getType());
    return source.isDynamicDim(index) ? sizeOfDim(castOp.getSource(), index)
                                      : nullptr;
  }
  if (auto reshape = dyn_cast_or_null<memref::ReshapeOp>(def)) {
    Value shape = reshape.getShape();
    if (!shape.getDefiningOp<memref::AllocOp>() ||
        !cast<MemRefType>(shape.getType()).getElementType().isIndex())
      return nullptr;
    Value stored;
    for (Operation *user : shape.getUsers()) {
      auto store = dyn_cast<memref::StoreOp>(user);
      if (!store) {
        if (isa<memref::ReshapeOp, memref::DeallocOp>(user))
          continue;
        return nullptr;
      }
      std::optional<int64_t> at = getConstantIntValue(store.getIndices()[0]);
      if (!at)
        return nullptr;
      if (*at != index)
        continue;
      if (stored)
        return nullptr;
      stored = store.getValueToStore();
    }
    return stored;
  }
  return nullptr;
}

/// A bound through the dimensions that buffers were made with.
static Extent extentOf(Value v) {
  Extent extent;
  while (true) {
    if (std::optional<int64_t> constant = getConstantIntValue(v)) {
      extent.constant = *constant;
      return extent;
    }
    auto dim = v.getDefiningOp<memref::DimOp>();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index)
      break;
    auto type = dyn_cast<MemRefType>(dim.getSource().getType());
    if (!type || *index < 0 || *index >= type.getRank())
      break;
    if (!type.isDynamicDim(*index)) {
      extent.constant = type.getDimSize(*index);
      return extent;
    }
    if (Value size = sizeOfDim(dim.getSource(), *index)) {
      v = size;
      continue;
    }
    extent.value = dim.getSource();
    extent.dim = *index;
    return extent;
  }
  extent.value = v;
  return extent;
}

static bool sameIterationSpace(scf::ParallelOp a, scf::ParallelOp b) {
  if (a.getNumLoops() != b.getNumLoops())
    return false;
  auto same = [](ValueRange x, ValueRange y) {
    return llvm::all_of(llvm::zip(x, y), [](auto pair) {
      return extentOf(std::get<0>(pair)) == extentOf(std::get<1>(pair));
    });
  };
  return same(a.getLowerBound(), b.getLowerBound()) &&
         same(a.getUpperBound(), b.getUpperBound()) &&
         same(a.getStep(), b.getStep());
}

/// Whether `loop` runs one iteration (its static bounds say so).
static bool isSingleIteration(scf::ParallelOp loop) {
  for (auto [lower, upper, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lower),
                           u = getConstantIntValue(upper),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0 || *u - *l > *s || *u <= *l)
      return false;
  }
  return true;
}

/// The buffer accesses of `loop`'s body; failure where an effect is not a
/// read or write of a known buffer (or the body nests a parallel loop).
static LogicalResult collectAccesses(scf::ParallelOp loop,
                                     SmallVectorImpl<Access> &accesses) {
  WalkResult walk = loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      accesses.push_back({load.getMemRef(), rootOf(load.getMemRef()), false,
                          SmallVector<Value>(load.getIndices())});
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      accesses.push_back({store.getMemRef(), rootOf(store.getMemRef()), true,
                          SmallVector<Value>(store.getIndices())});
      return WalkResult::advance();
    }
    if (isa<scf::ParallelOp>(op))
      return WalkResult::interrupt();
    // Nested ops are visited on their own.
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return isMemoryEffectFree(op) ? WalkResult::advance()
                                    : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (MemoryEffects::EffectInstance &instance : instances) {
      Value value = instance.getValue();
      bool read = isa<MemoryEffects::Read>(instance.getEffect());
      bool write = isa<MemoryEffects::Write>(instance.getEffect());
      if (!value || !isa<BaseMemRefType>(value.getType()) || (!read && !write))
        return WalkResult::interrupt();
      accesses.push_back({value, rootOf(value), write, std::nullopt});
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// `index` without the identity affine.apply ops linalg's loops wrap
/// their variables in.
static Value withoutIdentity(Value index) {
  while (auto apply = index.getDefiningOp<affine::AffineApplyOp>()) {
    AffineMap map = apply.getAffineMap();
    if (map.getNumResults() != 1 || map.getNumInputs() != 1 ||
        map.getResult(0) != getAffineDimExpr(0, map.getContext()))
      break;
    index = apply.getMapOperands().front();
  }
  return index;
}

/// `index` if it is a constant (linalg's loops index a dimension an indexing
/// map makes constant with an affine.apply of no operands).
static std::optional<int64_t> constantIndex(Value index) {
  if (auto apply = index.getDefiningOp<affine::AffineApplyOp>();
      apply && apply.getAffineMap().isSingleConstant())
    return apply.getAffineMap().getSingleConstantResult();
  return getConstantIntValue(index);
}

/// Whether index `x` of the first loop is index `y` of the second: the same
/// value once the first loop's variables are the second's, or the same
/// affine map of such values.
static bool sameIndex(Value x, Value y, IRMapping &firstToSecond) {
  x = withoutIdentity(x);
  y = withoutIdentity(y);
  if (firstToSecond.lookupOrDefault(x) == y)
    return true;
  std::optional<int64_t> constantX = constantIndex(x);
  if (constantX && constantX == constantIndex(y))
    return true;
  auto applyX = x.getDefiningOp<affine::AffineApplyOp>();
  auto applyY = y.getDefiningOp<affine::AffineApplyOp>();
  return applyX && applyY && applyX.getAffineMap() == applyY.getAffineMap() &&
         llvm::all_of(
             llvm::zip(applyX.getMapOperands(), applyY.getMapOperands()),
             [&](auto pair) {
               return sameIndex(std::get<0>(pair), std::get<1>(pair),
                                firstToSecond);
             });
}

/// Whether `a` (by the first loop) and `b` (by the second) touch the same
/// element in the same iteration and no other: the same view, the same
/// indices once the first loop's variables are the second's, and each of
/// the second loop's variables an index.
static bool sameElementOnly(const Access &a, const Access &b,
                            IRMapping &firstToSecond, ValueRange ivs) {
  if (a.memref != b.memref || !a.indices || !b.indices ||
      a.indices->size() != b.indices->size())
    return false;
  for (auto [x, y] : llvm::zip(*a.indices, *b.indices))
    if (!sameIndex(x, y, firstToSecond))
      return false;
  return llvm::all_of(ivs, [&](Value iv) {
    return llvm::any_of(
        *b.indices, [&](Value index) { return withoutIdentity(index) == iv; });
  });
}

/// Whether views `a` and `b` are subviews of one buffer whose index ranges
/// do not overlap in some dimension (static offsets and sizes, unit
/// strides): the two halves of a rotary embedding's output in the cache.
static bool disjointViews(Value a, Value b) {
  auto viewA = a.getDefiningOp<memref::SubViewOp>();
  auto viewB = b.getDefiningOp<memref::SubViewOp>();
  if (!viewA || !viewB || viewA.getSource() != viewB.getSource())
    return false;
  for (auto [offsetA, sizeA, strideA, offsetB, sizeB, strideB] :
       llvm::zip(viewA.getMixedOffsets(), viewA.getMixedSizes(),
                 viewA.getMixedStrides(), viewB.getMixedOffsets(),
                 viewB.getMixedSizes(), viewB.getMixedStrides())) {
    std::optional<int64_t> oA = getConstantIntValue(offsetA),
                           sA = getConstantIntValue(sizeA),
                           oB = getConstantIntValue(offsetB),
                           sB = getConstantIntValue(sizeB);
    if (oA && sA && oB && sB && isConstantIntValue(strideA, 1) &&
        isConstantIntValue(strideB, 1) &&
        (*oA + *sA <= *oB || *oB + *sB <= *oA))
      return true;
  }
  return false;
}

/// Fuses `first` into `second` (the first's body before the second's) if
/// that is legal.
static bool fuseInto(scf::ParallelOp first, scf::ParallelOp second) {
  if (first.getNumResults() || second.getNumResults() ||
      !sameIterationSpace(first, second))
    return false;
  SmallVector<Access> firstAccesses, secondAccesses;
  if (failed(collectAccesses(first, firstAccesses)) ||
      failed(collectAccesses(second, secondAccesses)))
    return false;
  IRMapping firstToSecond;
  firstToSecond.map(first.getInductionVars(), second.getInductionVars());
  // One iteration: it runs the first body before the second anyway.
  if (!isSingleIteration(second)) {
    for (const Access &a : firstAccesses)
      for (const Access &b : secondAccesses)
        if ((a.write || b.write) && mayAlias(a.root, b.root) &&
            !sameElementOnly(a, b, firstToSecond, second.getInductionVars()) &&
            !disjointViews(a.memref, b.memref))
          return false;
  }
  for (auto [from, to] :
       llvm::zip(first.getInductionVars(), second.getInductionVars()))
    from.replaceAllUsesWith(to);
  Block *body = second.getBody();
  body->getOperations().splice(body->begin(), first.getBody()->getOperations(),
                               first.getBody()->begin(),
                               first.getBody()->getTerminator()->getIterator());
  first.erase();
  return true;
}

/// Whether `loop` may move past `op` (to fuse with a loop after it): `op`
/// allocates, or touches only buffers that cannot alias the ones `loop`
/// writes, and writes none that `loop` reads (host code setting up shapes
/// between two kernels).
static bool canMovePast(Operation &op, scf::ParallelOp loop) {
  if (op.getNumRegions())
    return false;
  if (isMemoryEffectFree(&op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  SmallVector<Access> accesses;
  bool collected = false;
  for (MemoryEffects::EffectInstance &instance : instances) {
    if (isa<MemoryEffects::Allocate>(instance.getEffect()))
      continue;
    Value value = instance.getValue();
    if (!value || !isa<BaseMemRefType>(value.getType()))
      return false;
    if (!collected && failed(collectAccesses(loop, accesses)))
      return false;
    collected = true;
    bool write = !isa<MemoryEffects::Read>(instance.getEffect());
    for (const Access &access : accesses)
      if ((write || access.write) && mayAlias(rootOf(value), access.root))
        return false;
  }
  return true;
}

bool specula::mayShareMemory(Value a, Value b) {
  return mayAlias(rootOf(a), rootOf(b));
}

/// `loop` without its dimensions of one iteration (each variable its lower
/// bound), when others remain: a [rows, 1] fill's nest and the nest of the
/// reduction it initializes (over rows, its output indexed [row, 0]) are
/// then the same iteration space. (scf.parallel's canonicalization does
/// this too, but inlines a loop left without dimensions, which would move a
/// kernel's body to the host.)
static scf::ParallelOp withoutUnitDims(scf::ParallelOp loop) {
  SmallVector<unsigned> kept;
  for (unsigned i = 0; i < loop.getNumLoops(); ++i) {
    std::optional<int64_t> l = getConstantIntValue(loop.getLowerBound()[i]),
                           u = getConstantIntValue(loop.getUpperBound()[i]),
                           s = getConstantIntValue(loop.getStep()[i]);
    if (!l || !u || !s || *s <= 0 || *u - *l != 1)
      kept.push_back(i);
  }
  if (kept.empty() || kept.size() == loop.getNumLoops() || loop.getNumResults())
    return loop;
  OpBuilder b(loop);
  auto pick = [&](ValueRange values) {
    return llvm::to_vector(
        llvm::map_range(kept, [&](unsigned i) { return values[i]; }));
  };
  auto narrow =
      scf::ParallelOp::create(b, loop.getLoc(), pick(loop.getLowerBound()),
                              pick(loop.getUpperBound()), pick(loop.getStep()));
  narrow->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  Block *body = narrow.getBody();
  narrow.getBody()->getTerminator()->erase();
  SmallVector<Value> ivs(loop.getNumLoops());
  for (auto [i, index] : llvm::enumerate(kept))
    ivs[index] = narrow.getInductionVars()[i];
  for (unsigned i = 0; i < loop.getNumLoops(); ++i)
    if (!ivs[i])
      ivs[i] = loop.getLowerBound()[i];
  body->getOperations().splice(body->end(), loop.getBody()->getOperations());
  for (auto [old, now] : llvm::zip(loop.getInductionVars(), ivs))
    old.replaceAllUsesWith(now);
  loop.erase();
  return narrow;
}

/// The blocks whose loops are kernels: those outside parallel loops.
static SmallVector<Block *> kernelBlocks(Operation *root) {
  SmallVector<Block *> blocks;
  root->walk([&](Block *block) {
    if (!block->getParentOp()->getParentOfType<scf::ParallelOp>() &&
        !isa<scf::ParallelOp>(block->getParentOp()))
      blocks.push_back(block);
  });
  return blocks;
}

unsigned specula::fuseParallelLoops(Operation *root) {
  unsigned fused = 0;
  for (Block *block : kernelBlocks(root)) {
    scf::ParallelOp previous;
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        loop = withoutUnitDims(loop);
        if (previous && fuseInto(previous, loop))
          ++fused;
        previous = loop;
      } else if (previous && !canMovePast(op, previous)) {
        previous = nullptr;
      }
    }
  }
  return fused;
}

/// Whether loops with accesses `a` and `b` may run at once: neither writes a
/// buffer that may alias one the other touches, but for disjoint subviews.
static bool independent(ArrayRef<Access> a, ArrayRef<Access> b) {
  for (const Access &x : a)
    for (const Access &y : b)
      if ((x.write || y.write) && mayAlias(x.root, y.root) &&
          !disjointViews(x.memref, y.memref))
        return false;
  return true;
}

/// The iterations of `loop`'s dimension `i`.
static Value tripCount(OpBuilder &b, Location loc, scf::ParallelOp loop,
                       unsigned i) {
  Value lower = loop.getLowerBound()[i], upper = loop.getUpperBound()[i],
        step = loop.getStep()[i];
  if (isConstantIntValue(lower, 0) && isConstantIntValue(step, 1))
    return upper;
  Value span = arith::SubIOp::create(b, loc, upper, lower);
  Value count = arith::CeilDivSIOp::create(b, loc, span, step);
  return arith::MaxSIOp::create(b, loc, count,
                                arith::ConstantIndexOp::create(b, loc, 0));
}

/// One loop, where the last of `loops` was, running each of them: over the
/// sum of their iteration counts, an iteration in the `k`th range runs the
/// `k`th body with its variables delinearized from the offset in the range.
static void mergeLoops(ArrayRef<scf::ParallelOp> loops) {
  OpBuilder b(loops.back());
  SmallVector<Location> locations;
  for (scf::ParallelOp loop : loops)
    locations.push_back(loop.getLoc());
  Location loc = b.getFusedLoc(locations);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<SmallVector<Value>> counts;
  SmallVector<Value> starts, ends;
  Value end = zero;
  for (scf::ParallelOp loop : loops) {
    SmallVector<Value> &count = counts.emplace_back();
    Value total = one;
    for (unsigned i = 0; i < loop.getNumLoops(); ++i) {
      count.push_back(tripCount(b, loc, loop, i));
      total = i ? arith::MulIOp::create(b, loc, total, count.back()).getResult()
                : count.back();
    }
    starts.push_back(end);
    end = end == zero ? total : arith::AddIOp::create(b, loc, end, total);
    ends.push_back(end);
  }
  auto merged = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{end}, ValueRange{one});
  Value index = merged.getInductionVars()[0];
  b.setInsertionPoint(merged.getBody()->getTerminator());
  for (size_t k = 0; k < loops.size(); ++k) {
    scf::ParallelOp loop = loops[k];
    Operation *before = b.getInsertionBlock()->getTerminator();
    if (k + 1 < loops.size()) {
      Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            index, ends[k]);
      auto branch = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/true);
      before = branch.thenBlock()->getTerminator();
      b.setInsertionPoint(branch.elseBlock()->getTerminator());
    }
    OpBuilder local(before);
    Value offset =
        starts[k] == zero
            ? index
            : arith::SubIOp::create(local, loc, index, starts[k]).getResult();
    // Row-major: the last dimension varies fastest, as the threads of a
    // block did over it before.
    for (int64_t i = loop.getNumLoops() - 1; i >= 0; --i) {
      Value position =
          i ? arith::RemUIOp::create(local, loc, offset, counts[k][i])
                  .getResult()
            : offset;
      if (i)
        offset = arith::DivUIOp::create(local, loc, offset, counts[k][i]);
      Value iv = position;
      if (!isConstantIntValue(loop.getStep()[i], 1))
        iv = arith::MulIOp::create(local, loc, iv, loop.getStep()[i]);
      if (!isConstantIntValue(loop.getLowerBound()[i], 0))
        iv = arith::AddIOp::create(local, loc, iv, loop.getLowerBound()[i]);
      loop.getInductionVars()[i].replaceAllUsesWith(iv);
    }
    Block *body = loop.getBody();
    before->getBlock()->getOperations().splice(
        before->getIterator(), body->getOperations(), body->begin(),
        body->getTerminator()->getIterator());
    loop.erase();
  }
}

unsigned specula::mergeIndependentLoops(Operation *root) {
  unsigned merged = 0;
  for (Block *block : kernelBlocks(root)) {
    SmallVector<scf::ParallelOp> chain;
    SmallVector<SmallVector<Access>> chainAccesses;
    auto close = [&] {
      if (chain.size() > 1) {
        mergeLoops(chain);
        merged += chain.size() - 1;
      }
      chain.clear();
      chainAccesses.clear();
    };
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      auto loop = dyn_cast<scf::ParallelOp>(op);
      if (!loop) {
        if (!llvm::all_of(chain, [&](scf::ParallelOp member) {
              return canMovePast(op, member);
            }))
          close();
        continue;
      }
      SmallVector<Access> accesses;
      if (loop.getNumResults() || failed(collectAccesses(loop, accesses))) {
        close();
        continue;
      }
      if (!llvm::all_of(chainAccesses, [&](ArrayRef<Access> other) {
            return independent(accesses, other);
          }))
        close();
      chain.push_back(loop);
      chainAccesses.push_back(std::move(accesses));
    }
    close();
  }
  return merged;
}
