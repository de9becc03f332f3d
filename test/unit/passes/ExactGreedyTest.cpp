//===- ExactGreedyTest.cpp - speculative greedy equals the target's own ---===//
//
// Builds the three example decoders (draft, Medusa heads, DeepSeek-style MTP
// module) from the bundled ONNX models as specc does (import,
// spec-pair-draft or spec-fuse-mtp-heads, spec-kv-cache-inplace,
// spec-lower-generate), compiles their speculative and target-only loops
// once, and requires identical tokens on 20 prompts x 128 new tokens: every
// prompt, every position, no tolerance.
//
//===----------------------------------------------------------------------===//

#include "dialects/spec/SpecOps.h"
#include "passes/Passes.h"
#include "specula/GraphExecutor.h"
#include "specula/InitAll.h"
#include "specula/ONNXImport.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir;
using namespace specula;

namespace {
const char *const kPrompts[] = {
    "import os\nimport sys\n\n\ndef main(",
    "class Parser:\n    def __init__(self, ",
    "        return self.",
    "if __name__ == '__main__':\n    ",
    "    for i in range(len(",
    "def _get_default_",
    "        raise ValueError(",
    "\"\"\"Return the ",
    "    @property\n    def ",
    "try:\n    import ",
    "from collections import ",
    "        if not isinstance(",
    "    def __repr__(self):\n        return ",
    "# Copyright (C) ",
    "        self._lock = ",
    "        except OSError:\n            ",
    "__all__ = [",
    "    while True:\n        ",
    "        with open(filename, ",
    "def test_",
};
constexpr int64_t kNewTokens = 128;
constexpr int64_t kBos = 256, kEos = 257;

class ExactGreedyTest : public ::testing::Test {
protected:
  ExactGreedyTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerSpeculaDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  void import(ModuleOp module, StringRef file, StringRef name) {
    std::string path = std::string(SPECULA_MODELS_DIR) + "/" + file.str();
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
    ASSERT_TRUE(bool(buffer)) << path;
    ONNXImportOptions options;
    options.functionName = name.str();
    ASSERT_TRUE(succeeded(
        importONNX(module, (*buffer)->getBuffer(), path, options)));
  }

  /// Compiles `function` of a fresh copy of the decoder built by `build`.
  std::unique_ptr<GraphExecutor>
  compile(llvm::function_ref<void(ModuleOp, PassManager &)> build,
          StringRef function) {
    modules.push_back(ModuleOp::create(UnknownLoc::get(&context)));
    ModuleOp module = *modules.back();
    PassManager pm(&context);
    build(module, pm);
    pm.addPass(createSpecKVCacheInplace());
    pm.addPass(createSpecLowerGenerate());
    pm.addPass(createSpecLowerSteps());
    EXPECT_TRUE(succeeded(pm.run(module)));
    FailureOr<std::unique_ptr<GraphExecutor>> executor =
        GraphExecutor::compile(module, function);
    EXPECT_TRUE(succeeded(executor));
    return succeeded(executor) ? std::move(*executor) : nullptr;
  }

  std::pair<std::vector<int64_t>, int64_t> generate(GraphExecutor &executor,
                                                    StringRef prompt) {
    std::vector<int64_t> ids{kBos};
    for (unsigned char c : prompt)
      ids.push_back(c);
    std::string error;
    FailureOr<std::vector<HostTensor>> outputs = executor.run(
        {makeInt64Tensor({static_cast<int64_t>(ids.size())}, ids),
         makeInt64Tensor({}, {kNewTokens}), makeInt64Tensor({}, {0})},
        error);
    EXPECT_TRUE(succeeded(outputs)) << error;
    if (failed(outputs))
      return {};
    int64_t length = int64Value((*outputs)[1]);
    int64_t forwards = int64Value((*outputs)[2]);
    const auto *seq =
        reinterpret_cast<const int64_t *>((*outputs)[0].data.data());
    std::vector<int64_t> tokens;
    for (int64_t i = ids.size(); i < length; ++i) {
      tokens.push_back(seq[i]);
      if (seq[i] == kEos)
        break;
    }
    return {tokens, forwards};
  }

  void expectExact(llvm::function_ref<void(ModuleOp, PassManager &)> build,
                   double minTokensPerForward) {
    std::unique_ptr<GraphExecutor> speculative =
        compile(build, "decoder_generate");
    std::unique_ptr<GraphExecutor> plain =
        compile(build, "decoder_target_only");
    ASSERT_TRUE(speculative && plain);
    int64_t tokens = 0, forwards = 0;
    for (const char *prompt : kPrompts) {
      auto [spec, specForwards] = generate(*speculative, prompt);
      auto [ref, refForwards] = generate(*plain, prompt);
      EXPECT_EQ(spec, ref) << "prompt: " << prompt;
      EXPECT_EQ(static_cast<int64_t>(ref.size()), kNewTokens)
          << "prompt: " << prompt;
      tokens += spec.size();
      forwards += specForwards;
    }
    double perForward = double(tokens) / forwards;
    RecordProperty("tokens_per_target_forward", std::to_string(perForward));
    // Speculation did happen: fewer target forwards than tokens.
    EXPECT_GT(perForward, minTokensPerForward);
  }

  MLIRContext context;
  std::vector<OwningOpRef<ModuleOp>> modules;
};
} // namespace

TEST_F(ExactGreedyTest, DraftDecoder) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        import(module, "target.onnx", "target");
        import(module, "draft.onnx", "draft");
        SpecPairDraftOptions options;
        options.gamma = 4;
        pm.addPass(createSpecPairDraft(options));
      },
      2.0);
}

TEST_F(ExactGreedyTest, MedusaDecoder) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        import(module, "target.onnx", "target");
        SmallVector<FlatSymbolRefAttr> heads;
        for (int k = 1; k <= 3; ++k) {
          std::string name = "head" + std::to_string(k);
          import(module, "medusa_head_" + std::to_string(k) + ".onnx", name);
          heads.push_back(FlatSymbolRefAttr::get(&context, name));
        }
        OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
        spec::DecoderOp::create(b, module.getLoc(), b.getStringAttr("decoder"),
                                FlatSymbolRefAttr::get(&context, "target"),
                                spec::MTPProposerAttr::get(&context, heads),
                                spec::GreedyAttr::get(&context), FloatAttr());
        SpecFuseMTPHeadsOptions options;
        options.lastPositionOnly = false;
        pm.addPass(createSpecFuseMTPHeads(options));
      },
      1.5);
}

TEST_F(ExactGreedyTest, MTPModuleDecoder) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        import(module, "target.onnx", "target");
        import(module, "mtp_module.onnx", "head1");
        OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
        spec::DecoderOp::create(
            b, module.getLoc(), b.getStringAttr("decoder"),
            FlatSymbolRefAttr::get(&context, "target"),
            spec::MTPProposerAttr::get(
                &context, {FlatSymbolRefAttr::get(&context, "head1")}),
            spec::GreedyAttr::get(&context), FloatAttr());
      },
      1.3);
}
