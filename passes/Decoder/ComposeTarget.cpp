//===- ComposeTarget.cpp - a decoder over the target alone ----------------===//

#include "passes/Decoder/Composition.h"
#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace specula {
#define GEN_PASS_DEF_SPECCOMPOSETARGET
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
struct ComposeTargetPass
    : public specula::impl::SpecComposeTargetBase<ComposeTargetPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The rule the options ask for, checked once.
  VerificationRuleAttrInterface rule;
};
} // namespace

LogicalResult ComposeTargetPass::initialize(MLIRContext *context) {
  FailureOr<VerificationRuleAttrInterface> checked = getVerificationRule(
      context, [&] { return emitError(UnknownLoc::get(context)); }, sampling,
      temperature, topK, topP);
  if (failed(checked))
    return failure();
  rule = *checked;
  return success();
}

void ComposeTargetPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<func::FuncOp> target =
      findRoleFunction(module, targetName, FunctionRole::Target);
  if (failed(target) ||
      failed(createDecoder(module, decoderName, target->getSymName(),
                           NoProposerAttr::get(&getContext()), rule)))
    signalPassFailure();
}
