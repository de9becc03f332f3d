//===- ComposeHeads.cpp - a decoder over Medusa heads or MTP modules ------===//

#include "passes/Decoder/Composition.h"
#include "passes/Decoder/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace specula {
#define GEN_PASS_DEF_SPECCOMPOSEHEADS
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
struct ComposeHeadsPass
    : public specula::impl::SpecComposeHeadsBase<ComposeHeadsPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The rule and tree the options ask for, checked once (no tree: null).
  VerificationRuleAttrInterface rule;
  TreeAttr tree;

  FailureOr<SmallVector<std::string>> findHeads(ModuleOp module);
};
} // namespace

LogicalResult ComposeHeadsPass::initialize(MLIRContext *context) {
  auto emit = [&] { return emitError(UnknownLoc::get(context)); };
  if (depth < 0)
    return emit() << "spec-compose-heads: depth must not be negative, got "
                  << static_cast<int64_t>(depth);
  FailureOr<VerificationRuleAttrInterface> checked =
      getVerificationRule(context, emit, sampling, temperature, topK, topP);
  if (failed(checked))
    return failure();
  rule = *checked;
  tree = {};
  if (!treeParents.empty() || !treeRanks.empty()) {
    tree = TreeAttr::getChecked(
        [&] { return emit() << "spec-compose-heads: "; }, context,
        ArrayRef<int64_t>(treeParents), ArrayRef<int64_t>(treeRanks));
    if (!tree)
      return failure();
  }
  return success();
}

/// The heads in depth order, chained to `depth` when it asks for more.
FailureOr<SmallVector<std::string>>
ComposeHeadsPass::findHeads(ModuleOp module) {
  SmallVector<std::string> names(heads.begin(), heads.end());
  if (names.empty())
    for (auto func : module.getOps<func::FuncOp>())
      if (auto role = func->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
          role && role.isHead())
        names.push_back(func.getSymName().str());
  if (names.empty())
    return module.emitError() << "no function has role 'medusa_head' or "
                                 "'mtp_module' (set spec.role, or name the "
                                 "heads with the 'heads' option)";
  size_t wanted = depth > 0 ? static_cast<size_t>(depth) : names.size();
  if (wanted > names.size()) {
    auto last = module.lookupSymbol<func::FuncOp>(names.back());
    auto role = last ? last->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName)
                     : RoleAttr();
    if (!role || role.getKind() != FunctionRole::MTPModule)
      return module.emitError()
             << "depth " << wanted << " needs " << wanted << " heads but "
             << names.size() << " are given; only a DeepSeek-style MTP "
             << "module can run again at the next depth, and @"
             << names.back() << " is not one";
  }
  names.resize(wanted, names.back());
  return names;
}

void ComposeHeadsPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<func::FuncOp> target =
      findRoleFunction(module, targetName, FunctionRole::Target);
  FailureOr<SmallVector<std::string>> names = findHeads(module);
  if (failed(target) || failed(names) ||
      failed(createMTPDecoder(module, decoderName, target->getSymName(),
                              *names, rule, tree)))
    signalPassFailure();
}
