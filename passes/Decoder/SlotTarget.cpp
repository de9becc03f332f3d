//===- SlotTarget.cpp - a decoder's target over a cache of slots ----------===//
//
// Batched rounds need the target twice: as the decoder's loops call it (one
// sequence) and over a cache of sequence slots (a batch of sequences per
// forward). The clone carries the slot count until spec-kv-cache-inplace
// gives it its cache. A draft or an MTP module proposes in batched rounds
// too: it gets a twin of its own.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/Passes.h"

#include "passes/Decoder/Composition.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace specula {
#define GEN_PASS_DEF_SPECSLOTTARGET
#include "passes/Decoder/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
struct SlotTargetPass
    : public specula::impl::SpecSlotTargetBase<SlotTargetPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

/// Clones `model` beside it as `@<model>_slots` with a cache of `slots`
/// slots to come, and names the clone on `decoder` as `attrName`.
static void addSlotTwin(SymbolTable &symbols, func::FuncOp model,
                        DecoderOp decoder, StringRef attrName, int64_t slots) {
  func::FuncOp clone = model.clone();
  clone.setSymName((model.getSymName() + "_slots").str());
  clone->setAttr(SpecDialect::kSlotsAttrName,
                 IntegerAttr::get(IntegerType::get(model.getContext(), 64),
                                  slots));
  // Inserted after the model; renamed if the name is taken.
  symbols.insert(clone, std::next(Block::iterator(model)));
  decoder->setAttr(attrName, FlatSymbolRefAttr::get(clone.getSymNameAttr()));
}

void SlotTargetPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (slots < 1) {
    module.emitError() << "spec-slot-target: slots must be at least 1, got "
                       << static_cast<int64_t>(slots);
    return signalPassFailure();
  }
  SymbolTable symbols(module);
  for (auto decoder : llvm::to_vector(module.getOps<DecoderOp>())) {
    if (decoder->hasAttr(SpecDialect::kSlotTargetAttrName)) {
      decoder.emitError() << "decoder @" << decoder.getSymName()
                          << " already has a batched target";
      return signalPassFailure();
    }
    auto target = symbols.lookup<func::FuncOp>(decoder.getTarget());
    // Rounds that do not propose with the heads fused into the target run
    // the target they were fused into: plain rounds compute no heads.
    if (auto source = target ? target->getAttrOfType<FlatSymbolRefAttr>(
                                   SpecDialect::kFusedFromAttrName)
                             : FlatSymbolRefAttr())
      if (!proposesWithHeadsInRounds(decoder, symbols))
        if (auto unfused = symbols.lookup<func::FuncOp>(source.getValue()))
          target = unfused;
    if (!target) {
      decoder.emitError() << "decoder @" << decoder.getSymName()
                          << ": no target function @" << decoder.getTarget();
      return signalPassFailure();
    }
    addSlotTwin(symbols, target, decoder, SpecDialect::kSlotTargetAttrName,
                slots);
    // An MTP module proposes from the target's hidden states with a cache
    // of its own, which the rounds keep per slot as a draft's.
    if (func::FuncOp module = proposingModuleInRounds(decoder, symbols)) {
      addSlotTwin(symbols, module, decoder, SpecDialect::kSlotDraftAttrName,
                  slots);
      continue;
    }
    auto proposer = dyn_cast<DraftProposerAttr>(decoder.getProposer());
    if (!proposer)
      continue;
    auto draft = symbols.lookup<func::FuncOp>(proposer.getModel().getValue());
    if (!draft || draft.isExternal()) {
      decoder.emitError() << "decoder @" << decoder.getSymName()
                          << ": no draft function body @"
                          << proposer.getModel().getValue();
      return signalPassFailure();
    }
    addSlotTwin(symbols, draft, decoder, SpecDialect::kSlotDraftAttrName,
                slots);
  }
}
