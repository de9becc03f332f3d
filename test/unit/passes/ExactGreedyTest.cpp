//===- ExactGreedyTest.cpp - speculative greedy equals the target's own ---===//
//
// Builds the example decoders (draft, Medusa heads, DeepSeek-style MTP
// module, alone and chained) from the bundled ONNX models as specc does (import,
// spec-pair-draft or spec-fuse-mtp-heads, spec-kv-cache-inplace,
// spec-lower-generate), compiles each into an artifact as `specc -o
// model.spec` does, runs its speculative and target-only loops through the
// specrt runtime, and requires identical tokens on 20 prompts x 128 new
// tokens: every prompt, every position, no tolerance.
//
//===----------------------------------------------------------------------===//

#include "dialects/spec/SpecOps.h"
#include "passes/Decoder/Composition.h"
#include "passes/Decoder/Passes.h"
#include "specrt/specrt.h"
#include "specula/Artifact.h"
#include "specula/InitAll.h"
#include "specula/ONNXImport.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstring>
#include <optional>

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
constexpr int64_t kBos = 256;

class ExactGreedyTest : public ::testing::Test {
protected:
  ExactGreedyTest() {
    DialectRegistry registry;
    registerSpeculaDialects(registry);
    registerAllDialects(registry);
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

  /// The target and the three example Medusa heads, as @target and
  /// @head1..3; returns the heads' names.
  SmallVector<std::string> importMedusa(ModuleOp module) {
    import(module, "target.onnx", "target");
    SmallVector<std::string> heads;
    for (int k = 1; k <= 3; ++k) {
      heads.push_back("head" + std::to_string(k));
      import(module, "medusa_head_" + std::to_string(k) + ".onnx",
             heads.back());
    }
    return heads;
  }

  /// The example target paired with its draft, gamma 4 (or proposing the
  /// tree `parents`/`ranks`, as #spec.tree holds it).
  void pairDraft(ModuleOp module, PassManager &pm,
                 ArrayRef<int64_t> parents = {}, ArrayRef<int64_t> ranks = {},
                 int64_t gamma = 4, double minConfidence = 0.0) {
    import(module, "target.onnx", "target");
    import(module, "draft.onnx", "draft");
    SpecPairDraftOptions options;
    options.gamma = gamma;
    options.minConfidence = minConfidence;
    options.treeParents.assign(parents.begin(), parents.end());
    options.treeRanks.assign(ranks.begin(), ranks.end());
    pm.addPass(createSpecPairDraft(options));
  }

  /// The draft proposing a tree of 8 candidates, 4 deep, per round.
  void expectExactDraftTree(const ArtifactOptions &options);

  /// Compiles the decoder built by `build` into an artifact and opens it.
  specrt_model *compile(llvm::function_ref<void(ModuleOp, PassManager &)> build,
                        const ArtifactOptions &options) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
    PassManager pm(&context);
    build(*module, pm);
    EXPECT_TRUE(succeeded(pm.run(*module)));
    SmallString<128> directory;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("exact-greedy",
                                                      directory));
    artifactDirectory = std::string(directory);
    llvm::sys::path::append(directory, "decoder.spec");
    if (failed(writeArtifact(*module, directory, options)))
      return nullptr;
    specrt_model *model = nullptr;
    EXPECT_EQ(specrt_open(directory.c_str(), nullptr, &model), SPECRT_OK)
        << specrt_last_error();
    return model;
  }

  ~ExactGreedyTest() override {
    if (!artifactDirectory.empty())
      llvm::sys::fs::remove_directories(artifactDirectory);
  }

  /// The generated tokens and the target forwards; checks that the
  /// per-position acceptance accounts for the tokens.
  /// The tokens also stream (specrt_generate_options.on_token): the same
  /// ones, in order.
  std::pair<std::vector<int64_t>, int64_t>
  generate(specrt_model *model, StringRef prompt, bool speculative,
           std::optional<int64_t> stopToken = std::nullopt) {
    std::vector<int64_t> ids{kBos};
    for (unsigned char c : prompt)
      ids.push_back(c);
    specrt_generate_options options;
    specrt_generate_options_init(&options);
    options.max_new_tokens = kNewTokens;
    options.speculative = speculative;
    if (stopToken) {
      options.stop_tokens = &*stopToken;
      options.num_stop_tokens = 1;
    }
    std::vector<int64_t> streamed;
    options.on_token = [](int64_t token, void *user) {
      static_cast<std::vector<int64_t> *>(user)->push_back(token);
    };
    options.user_data = &streamed;
    specrt_result result;
    EXPECT_EQ(specrt_generate(model, ids.data(), ids.size(), &options, &result),
              SPECRT_OK)
        << specrt_last_error();
    std::vector<int64_t> tokens(result.tokens,
                                result.tokens + result.num_tokens);
    EXPECT_EQ(streamed, tokens) << "prompt: " << prompt.str();
    // One token from the prefill, then per round the accepted proposals and
    // the target's own token; the last round may overshoot max_new_tokens.
    EXPECT_EQ(result.rounds, result.target_forwards - 1);
    double counted = 1.0 + static_cast<double>(result.rounds);
    for (size_t i = 0; i < result.num_positions; ++i) {
      EXPECT_GE(result.accepted_per_position[i], 0.0);
      EXPECT_LE(result.accepted_per_position[i],
                i ? result.accepted_per_position[i - 1] : 1.0);
      counted += result.accepted_per_position[i] * result.rounds;
    }
    EXPECT_EQ(result.num_positions > 0, speculative);
    // The rounds' time is part of the whole; only the draft and the MTP
    // module propose outside the verify forward.
    EXPECT_GT(result.verify_seconds, 0.0);
    EXPECT_GE(result.propose_seconds, 0.0);
    EXPECT_LE(result.propose_seconds + result.verify_seconds, result.seconds);
    if (!speculative) {
      EXPECT_EQ(result.propose_seconds, 0.0);
    }
    EXPECT_GE(counted + 1e-6, static_cast<double>(result.num_tokens));
    EXPECT_LT(counted, static_cast<double>(result.num_tokens) +
                           static_cast<double>(result.num_positions) + 1.0);
    int64_t forwards = result.target_forwards;
    specrt_result_free(&result);
    return {tokens, forwards};
  }

  void expectExact(llvm::function_ref<void(ModuleOp, PassManager &)> build,
                   double minTokensPerForward,
                   const ArtifactOptions &options = ArtifactOptions()) {
    specrt_model *model = compile(build, options);
    ASSERT_TRUE(model);
    int64_t tokens = 0, forwards = 0;
    for (const char *prompt : kPrompts) {
      auto [spec, specForwards] = generate(model, prompt, true);
      auto [ref, refForwards] = generate(model, prompt, false);
      EXPECT_EQ(spec, ref) << "prompt: " << prompt;
      EXPECT_EQ(static_cast<int64_t>(ref.size()), kNewTokens)
          << "prompt: " << prompt;
      EXPECT_EQ(refForwards, kNewTokens) << "prompt: " << prompt;
      tokens += spec.size();
      forwards += specForwards;
    }
    specrt_close(model);
    double perForward = double(tokens) / forwards;
    RecordProperty("tokens_per_target_forward", std::to_string(perForward));
    std::printf("%.2f tokens per target forward\n", perForward);
    // Speculation did happen: fewer target forwards than tokens.
    EXPECT_GT(perForward, minTokensPerForward);
  }

  /// Medusa heads verifying a 16-candidate tree in one forward.
  void expectExactMedusaTree(const ArtifactOptions &options);

  MLIRContext context;
  std::string artifactDirectory;
};
} // namespace

TEST_F(ExactGreedyTest, DraftDecoder) {
  expectExact([&](ModuleOp module, PassManager &pm) { pairDraft(module, pm); },
              2.0);
}

// Rounds whose drafting stops at the first unsure token verify as many
// rows as were proposed (1 to gamma + 1): the output is still the target's.
TEST_F(ExactGreedyTest, DraftDecoderStoppingAtUnsureTokens) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        pairDraft(module, pm, {}, {}, /*gamma=*/6, /*minConfidence=*/0.5);
      },
      1.5);
}

// A stop token ends the generation and the stream at the same token, in
// the middle of a round or not.
TEST_F(ExactGreedyTest, DraftDecoderStopsAndStreamsAtAStopToken) {
  specrt_model *model = compile(
      [&](ModuleOp module, PassManager &pm) { pairDraft(module, pm); }, {});
  ASSERT_TRUE(model);
  for (const char *prompt : kPrompts) {
    std::vector<int64_t> full = generate(model, prompt, true).first;
    // The first token from the fifth on that did not come earlier.
    size_t at = 4;
    while (at < full.size() &&
           std::find(full.begin(), full.begin() + at, full[at]) != full.begin() + at)
      ++at;
    if (at == full.size())
      continue;
    for (bool speculative : {true, false}) {
      std::vector<int64_t> stopped = generate(model, prompt, speculative, full[at]).first;
      EXPECT_EQ(stopped, std::vector<int64_t>(full.begin(), full.begin() + at + 1))
          << "prompt: " << prompt;
    }
  }
  specrt_close(model);
}

TEST_F(ExactGreedyTest, MedusaDecoder) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        SmallVector<std::string> heads = importMedusa(module);
        ASSERT_TRUE(succeeded(createMTPDecoder(module, "decoder", "target",
                                               heads,
                                               spec::GreedyAttr::get(&context))));
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
        ASSERT_TRUE(succeeded(createMTPDecoder(module, "decoder", "target",
                                               {"head1"},
                                               spec::GreedyAttr::get(&context))));
      },
      1.3);
}

// Medusa heads verifying a tree of 16 candidates per round (top-4 of head 1,
// then the likeliest continuations): spec-tree-attention gives the target a
// tree mask, each round walks the target's picks down the tree.
void ExactGreedyTest::expectExactMedusaTree(const ArtifactOptions &options) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        SmallVector<std::string> heads = importMedusa(module);
        // [[0], [1], [2], [3], [0, 0], [0, 1], [0, 2], [1, 0], [1, 1],
        //  [2, 0], [3, 0], [0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0],
        //  [1, 0, 0]]
        auto tree = spec::TreeAttr::get(
            &context, {0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 5, 5, 5, 6, 8},
            {0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 0, 0, 1, 2, 0, 0});
        ASSERT_TRUE(succeeded(
            createMTPDecoder(module, "decoder", "target", heads,
                             spec::GreedyAttr::get(&context), tree)));
        SpecFuseMTPHeadsOptions fuseOptions;
        fuseOptions.lastPositionOnly = false;
        pm.addPass(createSpecFuseMTPHeads(fuseOptions));
      },
      2.4, options);
}

TEST_F(ExactGreedyTest, MedusaTreeDecoder) { expectExactMedusaTree({}); }

// [[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0, 0]]:
// spec-tree-attention gives the target and the draft tree masks; the draft
// proposes each depth from a forward over the depths above it, and keeps
// the accepted candidates' cache rows.
void ExactGreedyTest::expectExactDraftTree(const ArtifactOptions &options) {
  expectExact(
      [&](ModuleOp module, PassManager &pm) {
        pairDraft(module, pm, {0, 0, 1, 1, 2, 3, 3, 6},
                  {0, 1, 0, 1, 0, 0, 1, 0});
      },
      3.0, options);
}

TEST_F(ExactGreedyTest, DraftTreeDecoder) { expectExactDraftTree({}); }

// The module chained with itself: depth d runs on depth d - 1's hidden
// states, with its own cache rolled back with the target's.
TEST_F(ExactGreedyTest, MTPModuleChainDecoder) {
  for (int depth : {2, 3}) {
    SCOPED_TRACE("depth " + std::to_string(depth));
    expectExact(
        [&](ModuleOp module, PassManager &pm) {
          import(module, "target.onnx", "target");
          import(module, "mtp_module.onnx", "head1");
          SmallVector<std::string> chain(depth, "head1");
          ASSERT_TRUE(succeeded(createMTPDecoder(
              module, "decoder", "target", chain,
              spec::GreedyAttr::get(&context))));
        },
        // One proposal gives at most 2 tokens per forward: above that (2.40
        // at depth 2, 2.71 at depth 3), the deeper proposals are accepted.
        depth == 2 ? 2.1 : 2.5);
  }
}

// The CUDA schedule (spec-gpu-contractions: a thread per column group and
// tile of rows; spec-gpu-schedule: one thread per output of the other ops,
// tiles of a block's threads), executed on the CPU as loops: the tiling and
// mapping keep greedy exact.
TEST_F(ExactGreedyTest, DraftDecoderOnTheGPUSchedule) {
  ArtifactOptions options;
  options.cpuPipeline.gpuScheduleThreads = 128;
  expectExact([&](ModuleOp module, PassManager &pm) { pairDraft(module, pm); },
              2.0, options);
}

// spec-gpu-contractions with every static reduction split among threads
// (partial sums per slice, added in slice order): still batch invariant.
TEST_F(ExactGreedyTest, DraftDecoderOnTheGPUScheduleSplitReductions) {
  ArtifactOptions options;
  options.cpuPipeline.gpuScheduleThreads = 128;
  options.cpuPipeline.gpuSplitMinBytes = 0;
  expectExact([&](ModuleOp module, PassManager &pm) { pairDraft(module, pm); },
              2.0, options);
}

// The tree round (tree mask, cache rows moved along the accepted path) on
// the CUDA schedule's loops.
TEST_F(ExactGreedyTest, MedusaTreeDecoderOnTheGPUSchedule) {
  ArtifactOptions options;
  options.cpuPipeline.gpuScheduleThreads = 128;
  expectExactMedusaTree(options);
}

// The draft's tree forwards and both caches' moves on the CUDA schedule's
// loops.
TEST_F(ExactGreedyTest, DraftTreeDecoderOnTheGPUSchedule) {
  ArtifactOptions options;
  options.cpuPipeline.gpuScheduleThreads = 128;
  expectExactDraftTree(options);
}
