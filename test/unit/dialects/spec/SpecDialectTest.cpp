//===- SpecDialectTest.cpp - the spec dialect's C++ API -------------------===//
//
// What library users do without the parser: build attributes and ops with the
// C++ API and get the same verification as textual IR.
//
//===----------------------------------------------------------------------===//

#include "dialects/spec/SpecOps.h"
#include "specula/InitAll.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace specula;
using namespace specula::spec;

namespace {
class SpecDialectTest : public ::testing::Test {
protected:
  SpecDialectTest() {
    DialectRegistry registry;
    registerSpeculaDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    // Collect diagnostics instead of printing them.
    handler.emplace(&context, [this](Diagnostic &diag) {
      diagnostics.push_back(diag.str());
      return success();
    });
  }

  /// A function with the given role and signature (token ids -> logits).
  func::FuncOp addModel(OpBuilder &builder, StringRef name, RoleAttr role,
                        int64_t vocab, Type input = {}) {
    Type ids = input ? input
                     : RankedTensorType::get({ShapedType::kDynamic},
                                             builder.getI64Type());
    auto logits = RankedTensorType::get({ShapedType::kDynamic, vocab},
                                        builder.getF32Type());
    auto fn = func::FuncOp::create(builder, builder.getUnknownLoc(), name,
                                   builder.getFunctionType({ids}, {logits}));
    fn.setPrivate();
    fn->setAttr(SpecDialect::kRoleAttrName, role);
    fn->setAttr(SpecDialect::kConfigAttrName,
                ModelConfigAttr::get(&context, vocab, int64_t(0), int64_t(1),
                                     std::nullopt, std::nullopt, StringAttr()));
    return fn;
  }

  /// A module with a target, a draft and a greedy decoder pairing them.
  OwningOpRef<ModuleOp> buildDraftDecoder(int64_t targetVocab,
                                          int64_t draftVocab, int64_t gamma) {
    OpBuilder builder(&context);
    OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    addModel(builder, "target",
             RoleAttr::get(&context, FunctionRole::Target, {}), targetVocab);
    addModel(builder, "draft", RoleAttr::get(&context, FunctionRole::Draft, {}),
             draftVocab);
    DecoderOp::create(
        builder, builder.getUnknownLoc(), builder.getStringAttr("decoder"),
        FlatSymbolRefAttr::get(&context, "target"),
        DraftProposerAttr::get(&context,
                               FlatSymbolRefAttr::get(&context, "draft"), gamma),
        GreedyAttr::get(&context), /*acceptance_rate=*/FloatAttr(),
        /*tree=*/TreeAttr());
    return module;
  }

  MLIRContext context;
  std::optional<ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
};
} // namespace

TEST_F(SpecDialectTest, AttributeVerifiersRejectInvalidParameters) {
  auto loc = UnknownLoc::get(&context);
  auto emitError = [&] { return mlir::emitError(loc); };
  using OptId = std::optional<int64_t>;
  auto config = [&](int64_t vocab, OptId bos, OptId eos, OptId pad,
                    OptId maxContext) {
    return ModelConfigAttr::getChecked(emitError, &context, vocab, bos, eos,
                                       pad, maxContext, StringAttr());
  };
  EXPECT_FALSE(config(0, 0, 0, std::nullopt, std::nullopt));
  EXPECT_FALSE(config(10, 10, std::nullopt, std::nullopt, std::nullopt));
  EXPECT_TRUE(config(10, 9, 8, 7, 128));
  EXPECT_FALSE(RoleAttr::getChecked(emitError, &context,
                                    FunctionRole::MedusaHead, OptId()));
  EXPECT_FALSE(RoleAttr::getChecked(emitError, &context, FunctionRole::Target,
                                    OptId(1)));
  EXPECT_FALSE(DraftProposerAttr::getChecked(
      emitError, &context, FlatSymbolRefAttr::get(&context, "d"), int64_t(0)));
  EXPECT_FALSE(MTPProposerAttr::getChecked(emitError, &context, {}));
  EXPECT_FALSE(RejectionAttr::getChecked(emitError, &context, APFloat(0.0),
                                         int64_t(0), APFloat(1.0)));
  EXPECT_FALSE(RejectionAttr::getChecked(emitError, &context, APFloat(1.0),
                                         int64_t(0), APFloat(1.5)));
  ASSERT_EQ(diagnostics.size(), 8u);
  EXPECT_EQ(diagnostics[0], "vocab_size must be positive, got 0");
  EXPECT_EQ(diagnostics[1], "bos_token_id 10 is outside the vocabulary [0, 10)");
  EXPECT_EQ(diagnostics[5], "an MTP proposer needs at least one head");
  EXPECT_EQ(diagnostics[7], "top_p must lie in (0, 1], got 1.5");
}

TEST_F(SpecDialectTest, KVCacheTypeNamesItsDimensions) {
  auto cache = KVCacheType::get(&context, {2, 4, 512, 32},
                                Float32Type::get(&context));
  EXPECT_EQ(cache.getNumLayers(), 2);
  EXPECT_EQ(cache.getNumKVHeads(), 4);
  EXPECT_EQ(cache.getCapacity(), 512);
  EXPECT_EQ(cache.getHeadDim(), 32);
  // Printed in the builtin shape syntax and parsed back to the same type.
  std::string text;
  llvm::raw_string_ostream os(text);
  os << Type(cache);
  EXPECT_EQ(text, "!spec.kv_cache<2x4x512x32xf32>");
  EXPECT_EQ(parseType(text, &context), Type(cache));
}

TEST_F(SpecDialectTest, BuiltDecoderVerifiesAndCountsProposals) {
  OwningOpRef<ModuleOp> module = buildDraftDecoder(259, 259, 5);
  EXPECT_TRUE(succeeded(verify(*module)))
      << (diagnostics.empty() ? "" : diagnostics.front());
  auto decoder = *module->getOps<DecoderOp>().begin();
  EXPECT_EQ(decoder.getNumProposals(), 5);
}

TEST_F(SpecDialectTest, BuiltDecoderWithMismatchedVocabularyFails) {
  OwningOpRef<ModuleOp> module = buildDraftDecoder(259, 300, 2);
  EXPECT_TRUE(failed(verify(*module)));
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_NE(diagnostics.front().find("vocabulary size mismatch: target "
                                     "@target has 259 tokens, draft @draft "
                                     "has 300"),
            std::string::npos)
      << diagnostics.front();
}
