//===- Composition.cpp - build spec.decoder compositions ------------------===//

#include "passes/Decoder/Composition.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace specula;
using namespace specula::spec;

FailureOr<func::FuncOp> specula::findRoleFunction(ModuleOp module,
                                                  StringRef name,
                                                  FunctionRole role) {
  StringRef roleName = stringifyFunctionRole(role);
  if (!name.empty()) {
    auto found = module.lookupSymbol<func::FuncOp>(name);
    if (!found)
      return module.emitError() << "no function @" << name << " for the "
                                << roleName;
    return found;
  }
  func::FuncOp found;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto attr = func->getAttrOfType<RoleAttr>(SpecDialect::kRoleAttrName);
    if (!attr || attr.getKind() != role)
      continue;
    if (found)
      return module.emitError()
             << "functions @" << found.getSymName() << " and @"
             << func.getSymName() << " both have role '" << roleName
             << "'; name one with the '" << roleName << "' option";
    found = func;
  }
  if (!found)
    return module.emitError() << "no function has role '" << roleName
                              << "' (set spec.role, or name it with the '"
                              << roleName << "' option)";
  return found;
}

FailureOr<VerificationRuleAttrInterface> specula::getVerificationRule(
    MLIRContext *context, function_ref<InFlightDiagnostic()> emitError,
    bool sampling, double temperature, int64_t topK, double topP) {
  if (!sampling)
    return VerificationRuleAttrInterface(GreedyAttr::get(context));
  auto rule = RejectionAttr::getChecked(emitError, context,
                                        APFloat(temperature), topK,
                                        APFloat(topP));
  if (!rule)
    return failure();
  return VerificationRuleAttrInterface(rule);
}

FailureOr<DecoderOp>
specula::createDecoder(ModuleOp module, StringRef name, StringRef target,
                       ProposerAttrInterface proposer,
                       VerificationRuleAttrInterface rule, TreeAttr tree) {
  MLIRContext *context = module.getContext();
  if (Operation *existing = module.lookupSymbol(name))
    return existing->emitError()
           << "a symbol named @" << name
           << " exists already; choose another decoder name";
  // Diagnostics about the decoder point at its target.
  Operation *targetOp = module.lookupSymbol(target);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto decoder = DecoderOp::create(
      b, targetOp ? targetOp->getLoc() : module.getLoc(), b.getStringAttr(name),
      FlatSymbolRefAttr::get(context, target), proposer, rule, FloatAttr(),
      tree);
  SymbolTableCollection symbols;
  if (failed(mlir::verify(decoder)) ||
      failed(decoder.verifySymbolUses(symbols))) {
    decoder.erase();
    return failure();
  }
  return decoder;
}

FailureOr<DecoderOp> specula::createMTPDecoder(
    ModuleOp module, StringRef name, StringRef target,
    ArrayRef<std::string> heads, VerificationRuleAttrInterface rule,
    TreeAttr tree) {
  MLIRContext *context = module.getContext();
  auto refs = llvm::map_to_vector(heads, [&](const std::string &head) {
    return FlatSymbolRefAttr::get(context, head);
  });
  return createDecoder(module, name, target,
                       MTPProposerAttr::get(context, refs), rule, tree);
}

bool specula::proposesWithHeadsInRounds(spec::DecoderOp decoder,
                                        SymbolTable &symbols) {
  auto heads = dyn_cast<spec::MTPProposerAttr>(decoder.getProposer());
  if (!heads || decoder.getTreeAttr())
    return false;
  auto first = symbols.lookup<func::FuncOp>(heads.getHeads().front().getValue());
  auto role = first ? first->getAttrOfType<spec::RoleAttr>(
                          spec::SpecDialect::kRoleAttrName)
                    : spec::RoleAttr();
  return role && role.getKind() == spec::FunctionRole::MedusaHead;
}

func::FuncOp specula::proposingModuleInRounds(spec::DecoderOp decoder,
                                              SymbolTable &symbols) {
  auto heads = dyn_cast<spec::MTPProposerAttr>(decoder.getProposer());
  if (!heads || decoder.getTreeAttr() || heads.getHeads().size() != 1)
    return {};
  auto module = symbols.lookup<func::FuncOp>(heads.getHeads().front().getValue());
  auto role = module ? module->getAttrOfType<spec::RoleAttr>(
                           spec::SpecDialect::kRoleAttrName)
                     : spec::RoleAttr();
  if (!role || role.getKind() != spec::FunctionRole::MTPModule ||
      module.isExternal())
    return {};
  return module;
}
