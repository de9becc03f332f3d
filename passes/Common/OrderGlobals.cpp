//===- OrderGlobals.cpp - reproducible names for constant globals ---------===//

#include "passes/Common/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace specula {
#define GEN_PASS_DEF_SPECORDERGLOBALS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
struct OrderGlobalsPass
    : public specula::impl::SpecOrderGlobalsBase<OrderGlobalsPass> {
  void runOnOperation() override;
};
} // namespace

/// The globals this pass renames: private constants.
static bool isRenamed(memref::GlobalOp global) {
  return global && global.getConstant() && global.isPrivate();
}

void OrderGlobalsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);

  // Every global's users, in walk order; only get_global may refer to them.
  llvm::SetVector<memref::GlobalOp> ordered;
  SmallVector<memref::GetGlobalOp> reads;
  WalkResult walk = module.walk([&](Operation *op) {
    if (auto read = dyn_cast<memref::GetGlobalOp>(op)) {
      auto global = symbols.lookup<memref::GlobalOp>(read.getName());
      if (isRenamed(global)) {
        ordered.insert(global);
        reads.push_back(read);
      }
      return WalkResult::advance();
    }
    // Any other reference (in the op's own attributes) would break.
    WalkResult refs = op->getAttrDictionary().walk([&](SymbolRefAttr ref) {
      auto global =
          symbols.lookup<memref::GlobalOp>(ref.getRootReference());
      if (!isRenamed(global))
        return WalkResult::advance();
      op->emitError() << "refers to the constant global @"
                      << global.getSymName()
                      << " other than by memref.get_global; cannot rename it";
      return WalkResult::interrupt();
    });
    return refs.wasInterrupted() ? WalkResult::interrupt()
                                 : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();

  SmallVector<memref::GlobalOp> unused;
  for (auto global : module.getOps<memref::GlobalOp>())
    if (isRenamed(global) && !ordered.contains(global))
      unused.push_back(global);
  llvm::sort(unused, [](memref::GlobalOp a, memref::GlobalOp b) {
    return a.getSymName() < b.getSymName();
  });
  ordered.insert(unused.begin(), unused.end());

  // New names, skipping those of symbols this pass does not rename.
  auto taken = [&](StringAttr name) {
    Operation *other = symbols.lookup(name);
    return other && !isRenamed(dyn_cast<memref::GlobalOp>(other));
  };
  llvm::StringMap<StringAttr> renamed;
  unsigned next = 0;
  for (memref::GlobalOp global : ordered) {
    StringAttr name;
    do
      name = StringAttr::get(&getContext(),
                             "__constant_" + std::to_string(next++));
    while (taken(name));
    renamed[global.getSymName()] = name;
  }
  for (memref::GetGlobalOp read : reads)
    read.setNameAttr(FlatSymbolRefAttr::get(renamed.lookup(read.getName())));
  Block *body = module.getBody();
  Operation *first = &body->front();
  for (memref::GlobalOp global : ordered) {
    global.setSymNameAttr(renamed.lookup(global.getSymName()));
    if (global.getOperation() != first)
      global->moveBefore(first);
    else
      first = first->getNextNode();
  }
}
