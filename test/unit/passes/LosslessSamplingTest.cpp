//===- LosslessSamplingTest.cpp - rejection sampling keeps the target -----===//
//
// Compiles a speculative decoder whose target and draft have fixed, different
// next-token distributions p and q over 4 tokens (spec-lower-generate,
// spec-lower-steps, spec-graph-to-llvm), runs it with many seeds and checks
// with a chi-square test that the generated tokens follow p; the same bound
// rejects tokens drawn from q, a sampler biased towards the draft.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "specula/GraphExecutor.h"
#include "specula/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace specula;

namespace {
// Logits of the target (p) and the draft (q), the same at every position.
constexpr std::array<double, 4> kTargetLogits{1.0, 0.0, 2.0, -1.0};
constexpr std::array<double, 4> kDraftLogits{0.0, 1.5, 1.0, 0.5};

std::string modelFunction(StringRef name, StringRef role,
                          const std::array<double, 4> &logits) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "func.func @" << name
     << "(%ids: tensor<?x?xi64> {onnx.name = \"input_ids\"}, "
        "%pos: tensor<?x?xi64> {onnx.name = \"position_ids\"}, "
        "%cache: !spec.kv_cache<1x1x64x1xf32> {onnx.name = \"kv_cache\"}, "
        "%past: index {onnx.name = \"past_length\"}) -> "
        "(tensor<1x?x4xf32> {onnx.name = \"logits\"}, "
        "!spec.kv_cache<1x1x64x1xf32> {onnx.name = \"kv_cache\"}) "
        "attributes {spec.role = #spec.role<"
     << role << ">} {\n"
     << "  %c1 = arith.constant 1 : index\n"
     << "  %n = tensor.dim %ids, %c1 : tensor<?x?xi64>\n"
     << "  %row = arith.constant dense<[" << logits[0] << ", " << logits[1]
     << ", " << logits[2] << ", " << logits[3] << "]> : tensor<4xf32>\n"
     << "  %init = tensor.empty(%n) : tensor<1x?x4xf32>\n"
     << "  %logits = linalg.generic {indexing_maps = ["
        "affine_map<(b, s, v) -> (v)>, affine_map<(b, s, v) -> (b, s, v)>], "
        "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
        "ins(%row : tensor<4xf32>) outs(%init : tensor<1x?x4xf32>) {\n"
     << "  ^bb0(%x: f32, %o: f32):\n    linalg.yield %x : f32\n"
     << "  } -> tensor<1x?x4xf32>\n"
     << "  return %logits, %cache : tensor<1x?x4xf32>, "
        "!spec.kv_cache<1x1x64x1xf32>\n}\n";
  return text;
}

std::array<double, 4> softmax(const std::array<double, 4> &logits) {
  std::array<double, 4> p;
  double total = 0;
  for (int v = 0; v < 4; ++v)
    total += p[v] = std::exp(logits[v]);
  for (double &x : p)
    x /= total;
  return p;
}

double chiSquare(const std::array<int64_t, 4> &counts,
                 const std::array<double, 4> &p) {
  int64_t n = 0;
  for (int64_t c : counts)
    n += c;
  double statistic = 0;
  for (int v = 0; v < 4; ++v) {
    double expected = p[v] * n;
    statistic += (counts[v] - expected) * (counts[v] - expected) / expected;
  }
  return statistic;
}

class LosslessSamplingTest : public ::testing::Test {
protected:
  LosslessSamplingTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerSpeculaDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Compiles `function` of a module with a sampling decoder over `target`
  /// and `draft` logits.
  std::unique_ptr<GraphExecutor> compile(StringRef function,
                                         const std::array<double, 4> &target,
                                         const std::array<double, 4> &draft) {
    std::string source =
        modelFunction("target", "target", target) +
        modelFunction("draft", "draft", draft) +
        "spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, "
        "gamma = 3>) verify(#spec.rejection<temperature = 1.0>)\n";
    modules.push_back(parseSourceString<ModuleOp>(source, &context));
    ModuleOp module = *modules.back();
    EXPECT_TRUE(module);
    PassManager pm(&context);
    pm.addPass(createSpecLowerGenerate());
    pm.addPass(createSpecLowerSteps());
    EXPECT_TRUE(succeeded(pm.run(module)));
    FailureOr<std::unique_ptr<GraphExecutor>> executor =
        GraphExecutor::compile(module, function);
    EXPECT_TRUE(succeeded(executor));
    return succeeded(executor) ? std::move(*executor) : nullptr;
  }

  /// Generates `newTokens` after the prompt [0] with `key`; returns them.
  std::vector<int64_t> generate(GraphExecutor &executor, int64_t newTokens,
                                int64_t key) {
    std::string error;
    FailureOr<std::vector<HostTensor>> outputs = executor.run(
        {makeInt64Tensor({1}, {0}), makeInt64Tensor({}, {newTokens}),
         makeInt64Tensor({}, {key})},
        error);
    EXPECT_TRUE(succeeded(outputs)) << error;
    std::vector<int64_t> tokens(newTokens);
    std::memcpy(tokens.data(), (*outputs)[0].data.data() + sizeof(int64_t),
                newTokens * sizeof(int64_t));
    return tokens;
  }

  MLIRContext context;
  std::vector<OwningOpRef<ModuleOp>> modules;
};
} // namespace

TEST_F(LosslessSamplingTest, SpeculativeSamplesFollowTheTargetDistribution) {
  std::unique_ptr<GraphExecutor> speculative =
      compile("decoder_generate", kTargetLogits, kDraftLogits);
  // The biased control: tokens drawn from the draft's distribution alone
  // (a "decoder" whose target is the draft, run without speculation).
  std::unique_ptr<GraphExecutor> draftOnly =
      compile("decoder_target_only", kDraftLogits, kDraftLogits);
  ASSERT_TRUE(speculative && draftOnly);

  constexpr int64_t kRuns = 3000, kNewTokens = 8;
  std::array<int64_t, 4> counts{}, controlCounts{};
  for (int64_t key = 0; key < kRuns; ++key) {
    for (int64_t token : generate(*speculative, kNewTokens, key)) {
      ASSERT_TRUE(token >= 0 && token < 4) << token;
      ++counts[token];
    }
    for (int64_t token : generate(*draftOnly, kNewTokens, key))
      ++controlCounts[token];
  }
  std::array<double, 4> p = softmax(kTargetLogits);
  // Chi-square with 3 degrees of freedom: 16.27 is its 99.9th percentile.
  constexpr double kBound = 16.27;
  double statistic = chiSquare(counts, p);
  EXPECT_LT(statistic, kBound) << "speculative samples deviate from p: "
                               << counts[0] << " " << counts[1] << " "
                               << counts[2] << " " << counts[3];
  double control = chiSquare(controlCounts, p);
  EXPECT_GT(control, kBound) << "the bound does not reject the biased control";
  RecordProperty("chi_square", std::to_string(statistic));
  RecordProperty("chi_square_biased_control", std::to_string(control));
}

TEST_F(LosslessSamplingTest, SeededRunsReproduce) {
  std::unique_ptr<GraphExecutor> speculative =
      compile("decoder_generate", kTargetLogits, kDraftLogits);
  ASSERT_TRUE(speculative);
  EXPECT_EQ(generate(*speculative, 16, 7), generate(*speculative, 16, 7));
  EXPECT_NE(generate(*speculative, 16, 7), generate(*speculative, 16, 8));
}
