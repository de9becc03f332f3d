//===- Composition.h - build spec.decoder compositions ----------*- C++ -*-===//
//
// What comes before the device pipelines: a spec.decoder naming the target,
// its proposer and the verification rule. Draft decoders are composed by the
// spec-pair-draft pass (which checks the pair first); decoders over MTP heads
// or modules by spec-compose-heads, and the target alone by
// spec-compose-target (both with createDecoder).
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_DECODER_COMPOSITION_H
#define SPECULA_PASSES_DECODER_COMPOSITION_H

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace specula {

/// The function `name` names, or if `name` is empty the one function with
/// role `role`; a failure after an error saying which is missing or which
/// two share the role.
mlir::FailureOr<mlir::func::FuncOp> findRoleFunction(mlir::ModuleOp module,
                                                     llvm::StringRef name,
                                                     spec::FunctionRole role);

/// The verification rule: #spec.greedy, or with `sampling`
/// #spec.rejection<temperature, top_k, top_p>; out-of-range sampling
/// parameters are reported through `emitError`.
mlir::FailureOr<spec::VerificationRuleAttrInterface>
getVerificationRule(mlir::MLIRContext *context,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                    bool sampling, double temperature, int64_t topK,
                    double topP);

/// Creates `spec.decoder @<name> target(@<target>) proposer(<proposer>)
/// verify(<rule>) [tree(<tree>)]` at the end of `module` and verifies it
/// (for heads: of one kind, in depth order, matching the target). On failure
/// the decoder is erased and the diagnostics say why.
mlir::FailureOr<spec::DecoderOp>
createDecoder(mlir::ModuleOp module, llvm::StringRef name,
              llvm::StringRef target, spec::ProposerAttrInterface proposer,
              spec::VerificationRuleAttrInterface rule,
              spec::TreeAttr tree = {});

/// createDecoder with `#spec.mtp<heads>`.
mlir::FailureOr<spec::DecoderOp>
createMTPDecoder(mlir::ModuleOp module, llvm::StringRef name,
                 llvm::StringRef target, llvm::ArrayRef<std::string> heads,
                 spec::VerificationRuleAttrInterface rule,
                 spec::TreeAttr tree = {});

/// Whether `decoder`'s batched rounds propose with Medusa heads fused into
/// its target: a chain of heads, greedy or sampled (spec-lower-rounds
/// builds no tree rounds; such decoders' rounds run the target alone).
bool proposesWithHeadsInRounds(spec::DecoderOp decoder,
                               mlir::SymbolTable &symbols);

/// The MTP module that proposes in `decoder`'s batched rounds, or null: a
/// chain of one module (depth 1), greedy or sampled, without a tree
/// (deeper chains' rounds run the target alone).
mlir::func::FuncOp proposingModuleInRounds(spec::DecoderOp decoder,
                                           mlir::SymbolTable &symbols);

} // namespace specula

#endif // SPECULA_PASSES_DECODER_COMPOSITION_H
