//===- ParallelizeColumns.cpp - column tiles on several threads -----------===//

#include "passes/CPU/Passes.h"

#include "dialects/spec/SpecDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace specula {
#define GEN_PASS_DEF_SPECPARALLELIZECOLUMNS
#include "passes/CPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

/// The static trip count of `loop`, if it has one.
static std::optional<int64_t> staticTripCount(scf::ForOp loop) {
  std::optional<APInt> count = loop.getStaticTripCount();
  if (!count)
    return std::nullopt;
  return count->getSExtValue();
}

/// Multiply-adds per row that the tiles in `loop` do, or nothing when a
/// loop inside has no static trip count (a reduction over the cached
/// positions, whose length is known only at run time). A forward's rows go
/// through one of several row tiles (8, 6, 4, 2, 1 rows, each with its own
/// contractions), so a row does the work of one of them: contractions are
/// summed per innermost row-tile loop, and the largest sum counts.
static std::optional<int64_t> workPerRow(scf::ForOp loop) {
  llvm::SmallDenseMap<Operation *, int64_t> workByRowTile;
  bool known = true;
  loop.getBody()->walk([&](vector::ContractionOp contract) {
    if (!known)
      return;
    // The rhs is the tile of the shared operand: depth x columns.
    int64_t work = contract.getRhsType().getNumElements();
    Operation *rowTile = nullptr;
    for (Operation *parent = contract->getParentOp(); parent != loop;
         parent = parent->getParentOp())
      if (auto inner = dyn_cast<scf::ForOp>(parent)) {
        // Row tiles repeat the work per row; they do not add to it.
        if (inner->hasAttr(SpecDialect::kRowTilesAttrName)) {
          if (!rowTile)
            rowTile = inner;
          continue;
        }
        std::optional<int64_t> trips = staticTripCount(inner);
        if (!trips) {
          known = false;
          return;
        }
        work *= *trips;
      }
    workByRowTile[rowTile] += work;
  });
  std::optional<int64_t> trips = staticTripCount(loop);
  if (!known || !trips)
    return std::nullopt;
  int64_t perIteration = 0;
  for (auto [rowTile, work] : workByRowTile)
    perIteration = std::max(perIteration, work);
  return perIteration * *trips;
}

/// Whether every iteration of `loop` may run on another thread: nothing in
/// it allocates (the runtime's allocator is per thread of the caller) or
/// calls out.
static bool isThreadSafe(scf::ForOp loop) {
  WalkResult walk = loop.getBody()->walk([](Operation *op) {
    if (isa<CallOpInterface>(op) || hasEffect<MemoryEffects::Allocate>(op) ||
        hasEffect<MemoryEffects::Free>(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// `loop` as an scf.parallel over the same iterations.
static void toParallel(scf::ForOp loop, RewriterBase &rewriter) {
  rewriter.setInsertionPoint(loop);
  auto parallel = scf::ParallelOp::create(
      rewriter, loop.getLoc(), ValueRange{loop.getLowerBound()},
      ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
  Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, parallel.getBody()->getTerminator(),
                             parallel.getInductionVars());
  rewriter.eraseOp(loop);
}

namespace {
struct ParallelizeColumnsPass
    : public specula::impl::SpecParallelizeColumnsBase<ParallelizeColumnsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (minWork < 0)
      return emitError(UnknownLoc::get(context))
             << "spec-parallelize-columns: min-work must not be negative, got "
             << static_cast<int64_t>(minWork);
    return success();
  }

  void runOnOperation() override {
    SmallVector<scf::ForOp> marked;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(SpecDialect::kColumnTilesAttrName))
        marked.push_back(loop);
    });
    for (scf::ForOp loop : marked)
      if (loop.getNumRegionIterArgs() != 0) {
        loop.emitOpError("carries values across column tiles; run "
                         "spec-parallelize-columns after bufferization");
        return signalPassFailure();
      }
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : marked) {
      loop->removeAttr(SpecDialect::kColumnTilesAttrName);
      std::optional<int64_t> work = workPerRow(loop);
      std::optional<int64_t> trips = staticTripCount(loop);
      if (work && *work >= minWork && trips && *trips >= 2 &&
          isThreadSafe(loop))
        toParallel(loop, rewriter);
    }
  }
};
} // namespace
