//===- SpecInterfaces.td - spec dialect interfaces ---------*- tablegen -*-===//
//
// What passes, verifiers and tools ask of a decoder's proposer and
// verification rule, so that none of them switches over the kinds.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_DIALECT_SPEC_SPECINTERFACES_TD
#define SPECULA_DIALECT_SPEC_SPECINTERFACES_TD

include "mlir/IR/OpBase.td"

def Spec_ProposerAttrInterface : AttrInterface<"ProposerAttrInterface"> {
  let cppNamespace = "::specula::spec";
  let description = [{
    How a `spec.decoder` proposes: the functions that propose, in the order a
    round runs them, the roles they may have, and how many tokens a round
    proposes. `spec.decoder`'s verifier checks every proposing function the
    same way (role, signature, vocabulary) and leaves to the proposer only
    what relates its functions to one another.
  }];
  let methods = [
    InterfaceMethod<"The number of tokens one round proposes.",
      "int64_t", "getNumProposals">,
    InterfaceMethod<"The proposing functions, in the order a round runs "
                    "them (depth order for heads).",
      "::llvm::SmallVector<::mlir::FlatSymbolRefAttr>", "getProposerFunctions">,
    InterfaceMethod<"The roles a proposing function may have.",
      "::llvm::SmallVector<::specula::spec::FunctionRole>", "getAllowedRoles">,
    InterfaceMethod<"Whether the proposing functions take token ids first "
                    "(a draft model) rather than hidden states (heads).",
      "bool", "takesTokenIds">,
    InterfaceMethod<"How diagnostics name proposing function `index`.",
      "std::string", "describeFunction", (ins "unsigned":$index)>,
    InterfaceMethod<[{
        Checks what relates the proposing functions' roles (given in the
        order of getProposerFunctions) to one another; errors are reported on
        `decoder`.
      }],
      "::mlir::LogicalResult", "verifyRoles",
      (ins "::mlir::Operation *":$decoder,
           "::llvm::ArrayRef<::specula::spec::RoleAttr>":$roles),
      /*methodBody=*/"", /*defaultImplementation=*/"return ::mlir::success();">
  ];
}

def Spec_VerificationRuleAttrInterface
    : AttrInterface<"VerificationRuleAttrInterface"> {
  let cppNamespace = "::specula::spec";
  let description = [{
    How a round's proposals are verified. Sampling rules need the proposer's
    distribution q and a generator key wherever tokens are picked or
    accepted; greedy rules need neither.
  }];
  let methods = [
    InterfaceMethod<"Whether the rule samples (needs q and a key).",
      "bool", "isSampling">
  ];
}

#endif // SPECULA_DIALECT_SPEC_SPECINTERFACES_TD
