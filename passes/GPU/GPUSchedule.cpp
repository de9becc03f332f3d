//===- GPUSchedule.cpp - map buffer computations to GPU blocks/threads ----===//

#include "passes/GPU/FuseParallelLoops.h"
#include "passes/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace specula {
#define GEN_PASS_DEF_SPECGPUSCHEDULE
#include "passes/GPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
struct GPUSchedulePass
    : public specula::impl::SpecGPUScheduleBase<GPUSchedulePass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override {
    if (threads < 1 || threads > 1024 || threads % 32)
      return emitError(UnknownLoc::get(context))
             << "threads must be a multiple of 32 in [32, 1024], got "
             << static_cast<int64_t>(threads);
    return success();
  }
  void runOnOperation() override;
};
} // namespace

/// Copies become linalg.copy, so that they too run as kernels.
static void copiesToLinalg(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<memref::CopyOp> copies;
  func.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  for (memref::CopyOp copy : copies) {
    rewriter.setInsertionPoint(copy);
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
  }
}

/// Every linalg op becomes an scf.parallel nest over its parallel dimensions
/// around scf.for loops over its reductions; ops without parallel dimensions
/// get a one-iteration scf.parallel, so that they run on the device too.
static LogicalResult linalgToLoops(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<linalg::LinalgOp> ops;
  func.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  for (linalg::LinalgOp op : ops) {
    if (op.getNumParallelLoops() == 0) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
      auto single = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                            ValueRange{one}, ValueRange{one});
      rewriter.moveOpBefore(op, single.getBody()->getTerminator());
    }
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
      return op->emitError() << "cannot be turned into loops";
    rewriter.eraseOp(op);
  }
  return success();
}

static gpu::ParallelLoopDimMappingAttr mapTo(OpBuilder &b,
                                             gpu::Processor processor) {
  return b.getAttr<gpu::ParallelLoopDimMappingAttr>(
      processor, b.getDimIdentityMap(), b.getDimIdentityMap());
}

/// Tiles the innermost dimension of an outermost loop nest by the threads of
/// a block and maps it: the tiles of the innermost three dimensions to block
/// x, y and z, the threads of a tile to thread x, every other dimension (and
/// every nested parallel loop) to sequential loops in each thread. Each
/// thread computes whole outputs, reductions included, so a value's
/// reduction order never depends on how many rows a forward has.
static LogicalResult mapLoopNest(scf::ParallelOp loop, int64_t threads) {
  unsigned rank = loop.getNumLoops();
  SmallVector<int64_t> sizes(rank, 1);
  sizes.back() = threads;
  // A narrow innermost dimension needs fewer threads (whole warps).
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound().back());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound().back());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep().back());
  if (lower && upper && step && *step > 0) {
    int64_t extent = llvm::divideCeil(*upper - *lower, *step);
    if (extent < threads)
      sizes.back() = std::max<int64_t>(32, llvm::alignTo(extent, 32));
  }
  auto [outer, inner] =
      scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);

  OpBuilder b(outer);
  SmallVector<gpu::ParallelLoopDimMappingAttr> blocks(
      rank, mapTo(b, gpu::Processor::Sequential));
  gpu::Processor blockDims[] = {gpu::Processor::BlockX,
                                gpu::Processor::BlockY,
                                gpu::Processor::BlockZ};
  for (unsigned i = 0; i < std::min(rank, 3u); ++i)
    blocks[rank - 1 - i] = mapTo(b, blockDims[i]);
  SmallVector<gpu::ParallelLoopDimMappingAttr> lanes(
      rank, mapTo(b, gpu::Processor::Sequential));
  lanes.back() = mapTo(b, gpu::Processor::ThreadX);
  if (failed(gpu::setMappingAttr(outer, blocks)) ||
      failed(gpu::setMappingAttr(inner, lanes)))
    return outer.emitError() << "cannot map the loop nest to the GPU";
  WalkResult nested = inner.getBody()->walk([&](scf::ParallelOp loop) {
    SmallVector<gpu::ParallelLoopDimMappingAttr> sequential(
        loop.getNumLoops(), mapTo(b, gpu::Processor::Sequential));
    return failed(gpu::setMappingAttr(loop, sequential))
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return failure(nested.wasInterrupted());
}

void GPUSchedulePass::runOnOperation() {
  func::FuncOp func = getOperation();
  // Refused before anything changes.
  WalkResult tensors = func.walk([](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics())
      return WalkResult::advance();
    op->emitError() << "is not bufferized; run the GPU schedule after "
                       "bufferization";
    return WalkResult::interrupt();
  });
  if (tensors.wasInterrupted())
    return signalPassFailure();
  IRRewriter rewriter(&getContext());
  copiesToLinalg(func, rewriter);
  if (failed(linalgToLoops(func, rewriter)))
    return signalPassFailure();
  if (fuse)
    fuseParallelLoops(func);
  if (merge)
    mergeIndependentLoops(func);
  SmallVector<scf::ParallelOp> outermost;
  func.walk([&](scf::ParallelOp loop) {
    if (!loop->getParentOfType<scf::ParallelOp>())
      outermost.push_back(loop);
  });
  for (scf::ParallelOp loop : outermost)
    if (failed(mapLoopNest(loop, threads)))
      return signalPassFailure();
}
