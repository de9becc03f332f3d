//===- GPUAsyncLaunches.cpp - synchronize only where the host reads -------===//

#include "passes/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace specula {
#define GEN_PASS_DEF_SPECGPUASYNCLAUNCHES
#include "passes/GPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
struct GPUAsyncLaunchesPass
    : public specula::impl::SpecGPUAsyncLaunchesBase<GPUAsyncLaunchesPass> {
  void runOnOperation() override;
};

/// The launches of one block since its last synchronization: the token of
/// the last one and the buffers (their roots) they may touch.
struct Pending {
  Value token;
  llvm::SmallPtrSet<Value, 16> roots;
  bool touchesArguments = false;
};
} // namespace

/// The buffer a memref value is a view of: its allocation, global, block
/// argument or the result of a call.
static Value rootOf(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      memref = view.getViewSource();
    else if (auto reshape = dyn_cast<memref::ReshapeOp>(def))
      memref = reshape.getSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      memref = cast.getSource();
    else if (auto transpose = dyn_cast<memref::TransposeOp>(def))
      memref = transpose.getIn();
    else
      break;
  }
  return memref;
}

/// Whether the host op `op` may touch memory a pending kernel touches, so
/// that the stream must be synchronized before it.
static bool needsSynchronization(Operation *op, const Pending &pending) {
  if (op->getNumRegions() || op->hasTrait<OpTrait::IsTerminator>() ||
      isa<CallOpInterface>(op))
    return true;
  // An allocation aliases only views of itself and the block arguments it
  // was passed as, which belong to blocks inside the one that allocated it:
  // allocated in this block, no argument a pending kernel touches is it. A
  // block argument (or a value from a call) may alias anything.
  auto touches = [&](Value memref) {
    Value root = rootOf(memref);
    if (pending.roots.contains(root))
      return true;
    Operation *def = root.getDefiningOp();
    if (isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(def))
      return pending.touchesArguments && def->getBlock() != op->getBlock();
    if (isa_and_nonnull<memref::GetGlobalOp>(def))
      return false; // constants: kernels only read them
    return !pending.roots.empty();
  };
  // memref.reshape reads its shape operand on the host.
  if (auto reshape = dyn_cast<memref::ReshapeOp>(op))
    return touches(reshape.getShape());
  auto effecting = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effecting)
    return !isMemoryEffectFree(op);
  SmallVector<MemoryEffects::EffectInstance> effects;
  effecting.getEffects(effects);
  for (const MemoryEffects::EffectInstance &effect : effects) {
    // Allocation is host bookkeeping; freed blocks are reused only after
    // the next synchronization (the runtime defers them).
    if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(effect.getEffect()))
      continue;
    Value value = effect.getValue();
    if (!value || !isa<BaseMemRefType>(value.getType()) || touches(value))
      return true;
  }
  return false;
}

static void synchronize(OpBuilder &b, Location loc, Pending &pending) {
  gpu::WaitOp::create(b, loc, Type(), ValueRange{pending.token});
  pending = Pending();
}

/// Chains the launches of `block` on one stream and synchronizes it before
/// the first host op that may touch what they touch.
static LogicalResult chainLaunches(Block &block) {
  Pending pending;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        if (failed(chainLaunches(nested)))
          return failure();
    OpBuilder b(&op);
    auto launch = dyn_cast<gpu::LaunchFuncOp>(&op);
    if (!launch) {
      if (pending.token && needsSynchronization(&op, pending))
        synchronize(b, op.getLoc(), pending);
      continue;
    }
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
      return launch.emitError()
             << "is asynchronous already; spec-gpu-async-launches chains "
                "synchronous launches";
    auto tokenType = b.getType<gpu::AsyncTokenType>();
    if (!pending.token)
      pending.token =
          gpu::WaitOp::create(b, op.getLoc(), tokenType, ValueRange{})
              .getAsyncToken();
    std::optional<gpu::KernelDim3> cluster;
    if (launch.hasClusterSize())
      cluster = launch.getClusterSizeOperandValues();
    auto chained = gpu::LaunchFuncOp::create(
        b, op.getLoc(), launch.getKernel(), launch.getGridSizeOperandValues(),
        launch.getBlockSizeOperandValues(),
        launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
        tokenType, ValueRange{pending.token}, cluster);
    pending.token = chained.getAsyncToken();
    for (Value operand : launch.getKernelOperands())
      if (isa<BaseMemRefType>(operand.getType())) {
        Value root = rootOf(operand);
        pending.roots.insert(root);
        pending.touchesArguments |= isa<BlockArgument>(root);
      }
    launch.erase();
  }
  if (pending.token) {
    // A block without a terminator (none in host code) ends synchronized.
    OpBuilder b = OpBuilder::atBlockEnd(&block);
    synchronize(b, block.getParentOp()->getLoc(), pending);
  }
  return success();
}

void GPUAsyncLaunchesPass::runOnOperation() {
  for (Block &block : getOperation().getBody())
    if (failed(chainLaunches(block)))
      return signalPassFailure();
}
