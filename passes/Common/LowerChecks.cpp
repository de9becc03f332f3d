//===- LowerChecks.cpp - failed run-time checks reported, not fatal -------===//

#include "passes/Common/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace specula {
#define GEN_PASS_DEF_SPECLOWERCHECKS
#include "passes/Common/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// What the runtime provides (runtime/src/Runtime.cpp; GraphExecutor for
/// JIT-compiled graphs): `void specrt_check(bool ok, const char *message)`.
static constexpr llvm::StringLiteral kCheckFunction = "specrt_check";

namespace {
struct LowerChecksPass
    : public specula::impl::SpecLowerChecksBase<LowerChecksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> checks;
    WalkResult walk = module.walk([&](cf::AssertOp check) {
      if (check->getParentOfType<gpu::GPUModuleOp>()) {
        check.emitOpError("is a run-time check inside a GPU kernel, which "
                          "cannot report to the host");
        return WalkResult::interrupt();
      }
      checks.push_back(check);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (checks.empty())
      return;

    SymbolTable symbols(module);
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    auto check = symbols.lookup<func::FuncOp>(kCheckFunction);
    if (!check) {
      check = func::FuncOp::create(
          b, module.getLoc(), kCheckFunction,
          b.getFunctionType({b.getI1Type(), ptr}, {}));
      check.setPrivate();
      symbols.insert(check);
    }
    // One NUL-terminated global per distinct message.
    llvm::StringMap<LLVM::GlobalOp> messages;
    for (cf::AssertOp assertOp : checks) {
      std::string text = (assertOp.getMsg() + Twine('\0')).str();
      LLVM::GlobalOp &global = messages[text];
      if (!global) {
        b.setInsertionPointToStart(module.getBody());
        auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
        global = LLVM::GlobalOp::create(
            b, assertOp.getLoc(), type, /*isConstant=*/true,
            LLVM::Linkage::Internal, "spec_check_message",
            b.getStringAttr(text));
        symbols.insert(global);
      }
      b.setInsertionPoint(assertOp);
      Value message = LLVM::AddressOfOp::create(b, assertOp.getLoc(), global);
      func::CallOp::create(b, assertOp.getLoc(), check,
                           ValueRange{assertOp.getArg(), message});
      assertOp.erase();
    }
  }
};
} // namespace
