//===- LosslessSamplingTest.cpp - rejection sampling keeps the target -----===//
//
// Compiles a speculative decoder whose target and draft have fixed, different
// next-token distributions p and q over 4 tokens (spec-lower-generate,
// spec-lower-steps, spec-graph-to-llvm), runs it with many seeds and checks
// with a chi-square test that the generated tokens follow p; the same bound
// rejects tokens drawn from q, a sampler biased towards the draft. Medusa
// heads verifying a tree of candidates are checked against a target whose
// distribution depends on the previous token.
//
//===----------------------------------------------------------------------===//

#include "passes/Decoder/Passes.h"
#include "specula/GraphExecutor.h"
#include "specula/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace mlir;
using namespace specula;

namespace {
// Logits of the target (p) and the draft (q), the same at every position.
constexpr std::array<double, 4> kTargetLogits{1.0, 0.0, 2.0, -1.0};
constexpr std::array<double, 4> kDraftLogits{0.0, 1.5, 1.0, 0.5};
// How an MTP module's logits move per depth of a chain (see mtpFunctions).
constexpr std::array<double, 4> kMTPSlope{1.0, -1.0, 0.0, 0.5};
// How the tree tests' target logits move with a row's token (see
// treeTargetFunctions).
constexpr std::array<double, 4> kTreeSlope{1.0, -1.0, 0.0, 0.5};

/// `v` as a `tensor<4xf32>` constant's value.
std::string dense(const std::array<double, 4> &v) {
  return llvm::formatv("dense<[{0}, {1}, {2}, {3}]> : tensor<4xf32>", v[0],
                       v[1], v[2], v[3])
      .str();
}

/// The body lines that give `%n` (the rows of `%ids`) and `%logits`, the
/// same `logits` in every row.
std::string constantLogits(const std::array<double, 4> &logits) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  %c1 = arith.constant 1 : index\n"
     << "  %n = tensor.dim %ids, %c1 : tensor<?x?xi64>\n"
     << "  %row = arith.constant " << dense(logits) << "\n"
     << "  %init = tensor.empty(%n) : tensor<1x?x4xf32>\n"
     << "  %logits = linalg.generic {indexing_maps = ["
        "affine_map<(b, s, v) -> (v)>, affine_map<(b, s, v) -> (b, s, v)>], "
        "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
        "ins(%row : tensor<4xf32>) outs(%init : tensor<1x?x4xf32>) {\n"
     << "  ^bb0(%x: f32, %o: f32):\n    linalg.yield %x : f32\n"
     << "  } -> tensor<1x?x4xf32>\n";
  return text;
}

/// The inputs every model function here takes (an in-place cache).
constexpr const char *kModelInputs =
    "%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>}, "
    "%pos: tensor<?x?xi64> {spec.io = #spec.io<position_ids>}, "
    "%cache: !spec.kv_cache<1x1x64x1xf32> {spec.io = #spec.io<kv_cache>}, "
    "%past: index {spec.io = #spec.io<past_length>}";

/// A model whose logits are `logits` at every row; with `takesTree`, it
/// also takes a tree mask (which constant logits ignore).
std::string modelFunction(StringRef name, StringRef role,
                          const std::array<double, 4> &logits,
                          bool takesTree = false) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "func.func @" << name << "(" << kModelInputs
     << (takesTree ? ", %tree: tensor<?x?xi1> {spec.io = "
                     "#spec.io<tree_mask>}"
                   : "")
     << ") -> "
        "(tensor<1x?x4xf32> {spec.io = #spec.io<logits>}, "
        "!spec.kv_cache<1x1x64x1xf32> {spec.io = #spec.io<kv_cache>}) "
        "attributes {spec.role = #spec.role<"
     << role << ">} {\n"
     << constantLogits(logits)
     << "  return %logits, %cache : tensor<1x?x4xf32>, "
        "!spec.kv_cache<1x1x64x1xf32>\n}\n";
  return text;
}

/// The target with a hidden_states result (zeros, one channel) for MTP
/// modules to read, and an MTP module whose logits move with its input
/// hidden state h: `logits + h * slope`, and which gives h + 1 as its own.
/// Chained, depth d proposes from logits + (d - 1) * slope: every depth has
/// its own q, so a proposal verified against another depth's q would bias
/// the samples.
std::string mtpFunctions(const std::array<double, 4> &target,
                         const std::array<double, 4> &module,
                         const std::array<double, 4> &slope) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const char *results =
      "(tensor<1x?x4xf32> {spec.io = #spec.io<logits>}, "
      "tensor<1x?x1xf32> {spec.io = #spec.io<hidden_states>}, "
      "!spec.kv_cache<1x1x64x1xf32> {spec.io = #spec.io<kv_cache>})";
  os << "func.func @target(" << kModelInputs << ") -> " << results
     << " attributes {spec.role = #spec.role<target>} {\n"
     << constantLogits(target)
     << "  %zero = arith.constant 0.0 : f32\n"
     << "  %empty = tensor.empty(%n) : tensor<1x?x1xf32>\n"
     << "  %hidden = linalg.fill ins(%zero : f32) outs(%empty : "
        "tensor<1x?x1xf32>) -> tensor<1x?x1xf32>\n"
     << "  return %logits, %hidden, %cache : tensor<1x?x4xf32>, "
        "tensor<1x?x1xf32>, !spec.kv_cache<1x1x64x1xf32>\n}\n";
  os << "func.func @module(%h: tensor<1x?x1xf32> "
        "{spec.io = #spec.io<previous_hidden_states>}, "
     << kModelInputs << ") -> " << results
     << " attributes {spec.role = #spec.role<mtp_module, depth = 1>} {\n"
     << "  %c1 = arith.constant 1 : index\n"
     << "  %n = tensor.dim %ids, %c1 : tensor<?x?xi64>\n"
     << "  %row = arith.constant " << dense(module) << "\n"
     << "  %slope = arith.constant " << dense(slope) << "\n"
     << "  %init = tensor.empty(%n) : tensor<1x?x4xf32>\n"
     << "  %logits = linalg.generic {indexing_maps = ["
        "affine_map<(b, s, v) -> (v)>, affine_map<(b, s, v) -> (v)>, "
        "affine_map<(b, s, v) -> (b, s, 0)>, "
        "affine_map<(b, s, v) -> (b, s, v)>], "
        "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
        "ins(%row, %slope, %h : tensor<4xf32>, tensor<4xf32>, "
        "tensor<1x?x1xf32>) outs(%init : tensor<1x?x4xf32>) {\n"
     << "  ^bb0(%r: f32, %k: f32, %x: f32, %o: f32):\n"
     << "    %m = arith.mulf %k, %x : f32\n"
     << "    %a = arith.addf %r, %m : f32\n"
     << "    linalg.yield %a : f32\n"
     << "  } -> tensor<1x?x4xf32>\n"
     << "  %one = arith.constant 1.0 : f32\n"
     << "  %empty = tensor.empty(%n) : tensor<1x?x1xf32>\n"
     << "  %hidden = linalg.generic {indexing_maps = ["
        "affine_map<(b, s, c) -> (b, s, c)>, "
        "affine_map<(b, s, c) -> (b, s, c)>], "
        "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
        "ins(%h : tensor<1x?x1xf32>) outs(%empty : tensor<1x?x1xf32>) {\n"
     << "  ^bb0(%x: f32, %o: f32):\n"
     << "    %y = arith.addf %x, %one : f32\n"
     << "    linalg.yield %y : f32\n"
     << "  } -> tensor<1x?x1xf32>\n"
     << "  return %logits, %hidden, %cache : tensor<1x?x4xf32>, "
        "tensor<1x?x1xf32>, !spec.kv_cache<1x1x64x1xf32>\n}\n";
  return text;
}

/// A target that takes a tree mask, fused with `heads.size()` Medusa heads:
/// its logits at a row are `base + token * slope` (the row's own token: p
/// depends on the previous token, so a pick drawn from another row's logits
/// shows), and head d's logits are `heads[d - 1]` at every row.
std::string treeTargetFunctions(const std::array<double, 4> &base,
                                const std::array<double, 4> &slope,
                                ArrayRef<std::array<double, 4>> heads = {}) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "func.func @target(" << kModelInputs
     << ", %tree: tensor<?x?xi1> {spec.io = #spec.io<tree_mask>}) -> "
        "(tensor<1x?x4xf32> {spec.io = #spec.io<logits>}, ";
  for (size_t d = 1; d <= heads.size(); ++d)
    os << "tensor<1x?x4xf32> {spec.io = #spec.io<head_logits, index = " << d
       << ">}, ";
  os << "!spec.kv_cache<1x1x64x1xf32> {spec.io = #spec.io<kv_cache>}) "
        "attributes {spec.role = #spec.role<target>} {\n"
     << "  %c1 = arith.constant 1 : index\n"
     << "  %n = tensor.dim %ids, %c1 : tensor<?x?xi64>\n"
     << "  %init = tensor.empty(%n) : tensor<1x?x4xf32>\n"
     << "  %base = arith.constant " << dense(base) << "\n"
     << "  %slope = arith.constant " << dense(slope) << "\n"
     << "  %logits = linalg.generic {indexing_maps = ["
        "affine_map<(b, s, v) -> (v)>, affine_map<(b, s, v) -> (v)>, "
        "affine_map<(b, s, v) -> (b, s)>, "
        "affine_map<(b, s, v) -> (b, s, v)>], "
        "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
        "ins(%base, %slope, %ids : tensor<4xf32>, tensor<4xf32>, "
        "tensor<?x?xi64>) outs(%init : tensor<1x?x4xf32>) {\n"
     << "  ^bb0(%r: f32, %k: f32, %t: i64, %o: f32):\n"
     << "    %x = arith.sitofp %t : i64 to f32\n"
     << "    %m = arith.mulf %k, %x : f32\n"
     << "    %a = arith.addf %r, %m : f32\n"
     << "    linalg.yield %a : f32\n"
     << "  } -> tensor<1x?x4xf32>\n";
  std::string values = "%logits", types = "tensor<1x?x4xf32>";
  for (size_t d = 0; d < heads.size(); ++d) {
    os << "  %hrow" << d << " = arith.constant " << dense(heads[d]) << "\n"
       << "  %head" << d << " = linalg.generic {indexing_maps = ["
          "affine_map<(b, s, v) -> (v)>, affine_map<(b, s, v) -> (b, s, v)>], "
          "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
          "ins(%hrow" << d << " : tensor<4xf32>) outs(%init : "
          "tensor<1x?x4xf32>) {\n"
       << "  ^bb0(%x: f32, %o: f32):\n    linalg.yield %x : f32\n"
       << "  } -> tensor<1x?x4xf32>\n";
    values += ", %head" + std::to_string(d);
    types += ", tensor<1x?x4xf32>";
  }
  os << "  return " << values << ", %cache : " << types
     << ", !spec.kv_cache<1x1x64x1xf32>\n}\n";
  for (size_t d = 1; d <= heads.size(); ++d)
    os << "func.func private @head" << d
       << "(tensor<1x?x1xf32>) -> tensor<1x?x4xf32> attributes {spec.role = "
          "#spec.role<medusa_head, depth = " << d << ">}\n";
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

/// p restricted to its k largest entries (top-k), then to the smallest set
/// of largest entries reaching mass topP (top-p), renormalized each time.
std::array<double, 4> filtered(std::array<double, 4> p, int k, double topP) {
  auto keep = [&](auto keepIndex) {
    double total = 0;
    for (int v = 0; v < 4; ++v)
      total += p[v] = keepIndex(v) ? p[v] : 0.0;
    for (double &x : p)
      x /= total;
  };
  auto rank = [&](int v) {
    int larger = 0;
    for (int w = 0; w < 4; ++w)
      larger += p[w] > p[v];
    return larger;
  };
  if (k > 0)
    keep([&](int v) { return rank(v) < k; });
  if (topP < 1.0)
    keep([&](int v) {
      double before = 0; // mass of the entries larger than p[v]
      for (int w = 0; w < 4; ++w)
        before += p[w] > p[v] ? p[w] : 0.0;
      return p[v] > 0 && before < topP;
    });
  return p;
}

/// Pearson's statistic over the tokens p allows; infinite when a token p
/// excludes was drawn.
double chiSquare(const std::array<int64_t, 4> &counts,
                 const std::array<double, 4> &p) {
  int64_t n = 0;
  for (int64_t c : counts)
    n += c;
  double statistic = 0;
  for (int v = 0; v < 4; ++v) {
    if (p[v] == 0) {
      if (counts[v] != 0)
        return INFINITY;
      continue;
    }
    double expected = p[v] * n;
    statistic += (counts[v] - expected) * (counts[v] - expected) / expected;
  }
  return statistic;
}

class LosslessSamplingTest : public ::testing::Test {
protected:
  LosslessSamplingTest() {
    DialectRegistry registry;
    registerSpeculaDialects(registry);
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Compiles `function` of a module with a sampling decoder over `target`
  /// and `draft` logits; `filters` are extra #spec.rejection parameters.
  /// With `mtpDepth`, the proposer is an MTP module (logits `draft` at
  /// depth 1, kMTPSlope further per depth) chained to that depth.
  std::unique_ptr<GraphExecutor> compile(StringRef function,
                                         const std::array<double, 4> &target,
                                         const std::array<double, 4> &draft,
                                         StringRef filters = "",
                                         unsigned mtpDepth = 0) {
    std::string source;
    if (mtpDepth == 0) {
      source = modelFunction("target", "target", target) +
               modelFunction("draft", "draft", draft) +
               "spec.decoder @decoder target(@target) "
               "proposer(#spec.draft<@draft, gamma = 3>)";
    } else {
      SmallVector<StringRef> chain(mtpDepth, "@module");
      source = mtpFunctions(target, draft, kMTPSlope) +
               "spec.decoder @decoder target(@target) proposer(#spec.mtp<[" +
               llvm::join(chain, ", ") + "]>)";
    }
    source += " verify(#spec.rejection<temperature = 1.0" + filters.str() +
              ">)\n";
    return compileSource(source, function);
  }

  /// Lowers the decoders in `source` and compiles `function` (with the
  /// CUDA schedule's loops when `gpuScheduleThreads` is set).
  std::unique_ptr<GraphExecutor> compileSource(StringRef source,
                                               StringRef function,
                                               int64_t gpuScheduleThreads = 0) {
    modules.push_back(parseSourceString<ModuleOp>(source, &context));
    ModuleOp module = *modules.back();
    EXPECT_TRUE(module);
    PassManager pm(&context);
    pm.addPass(createSpecLowerGenerate());
    pm.addPass(createSpecLowerSteps());
    EXPECT_TRUE(succeeded(pm.run(module)));
    GraphToLLVMOptions lowering;
    lowering.gpuScheduleThreads = gpuScheduleThreads;
    FailureOr<std::unique_ptr<GraphExecutor>> executor =
        GraphExecutor::compile(module, function, lowering);
    EXPECT_TRUE(succeeded(executor));
    return succeeded(executor) ? std::move(*executor) : nullptr;
  }

  /// Generates `newTokens` after the prompt [0] with `key`; returns them
  /// (and counts the target forwards it took in `forwards`).
  std::vector<int64_t> generate(GraphExecutor &executor, int64_t newTokens,
                                int64_t key, int64_t *forwards = nullptr) {
    std::string error;
    FailureOr<std::vector<HostTensor>> outputs = executor.run(
        {makeInt64Tensor({1}, {0}), makeInt64Tensor({}, {newTokens}),
         makeInt64Tensor({}, {key}), makeInt64Tensor({0}, {})},
        error);
    EXPECT_TRUE(succeeded(outputs)) << error;
    if (forwards)
      *forwards += int64Value((*outputs)[2]);
    std::vector<int64_t> tokens(newTokens);
    std::memcpy(tokens.data(), (*outputs)[0].data.data() + sizeof(int64_t),
                newTokens * sizeof(int64_t));
    return tokens;
  }

  /// Samples with the speculative decoder under `filters` and checks the
  /// tokens against the filtered target distribution with a chi-square
  /// bound (`bound`: the 99.9th percentile for the allowed tokens' degrees
  /// of freedom), which tokens from the filtered draft alone must fail.
  void expectTargetDistribution(StringRef filters, int k, double topP,
                                double bound, unsigned mtpDepth = 0) {
    std::unique_ptr<GraphExecutor> speculative = compile(
        "decoder_generate", kTargetLogits, kDraftLogits, filters, mtpDepth);
    // The biased control: tokens drawn from the draft's distribution alone
    // (a "decoder" whose target is the draft, run without speculation).
    std::unique_ptr<GraphExecutor> draftOnly =
        compile("decoder_target_only", kDraftLogits, kDraftLogits, filters);
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
    std::array<double, 4> p = filtered(softmax(kTargetLogits), k, topP);
    double statistic = chiSquare(counts, p);
    EXPECT_LT(statistic, bound) << "speculative samples deviate from p: "
                                << counts[0] << " " << counts[1] << " "
                                << counts[2] << " " << counts[3];
    double control = chiSquare(controlCounts, p);
    EXPECT_GT(control, bound) << "the bound does not reject the biased control";
    RecordProperty("chi_square", std::to_string(statistic));
    RecordProperty("chi_square_biased_control", std::to_string(control));
    std::printf("chi-square %.2f (bound %.2f), biased control %.2f\n",
                statistic, bound, control);
  }

  /// A decoder in `source` (over treeTargetFunctions(kTargetLogits,
  /// kTreeSlope)) verifying a tree of candidates, sampling: each committed
  /// token must follow the target's distribution given the token before
  /// it, whichever of the tree's rows it was drawn at. The bound is the
  /// 99.9th percentile with 12 degrees of freedom (3 for each previous
  /// token); a sampler that ignores the previous token must fail it.
  void expectTreeSamplesFollowTheTarget(StringRef source,
                                        int64_t gpuScheduleThreads = 0);

  MLIRContext context;
  std::vector<OwningOpRef<ModuleOp>> modules;
};
} // namespace

// Chi-square bounds: 99.9th percentiles with 3, 2 and 1 degrees of freedom.
TEST_F(LosslessSamplingTest, SpeculativeSamplesFollowTheTargetDistribution) {
  expectTargetDistribution("", 0, 1.0, 16.27);
}

// p keeps tokens 2 and 0; the draft's top-2 are tokens 1 and 2.
TEST_F(LosslessSamplingTest, TopKSamplesFollowTheFilteredTarget) {
  expectTargetDistribution(", top_k = 2", 2, 1.0, 10.83);
}

// Mass 0.9 needs tokens 2, 0 and 1 of p (0.64 + 0.24 + 0.09).
TEST_F(LosslessSamplingTest, TopPSamplesFollowTheFilteredTarget) {
  expectTargetDistribution(", top_p = 0.9", 0, 0.9, 13.82);
}

// Top-k 3 then top-p 0.8 of the renormalized top 3: tokens 2 and 0.
TEST_F(LosslessSamplingTest, TopKThenTopPSamplesFollowTheFilteredTarget) {
  expectTargetDistribution(", top_k = 3, top_p = 0.8", 3, 0.8, 10.83);
}



// An MTP module chained to depths 1-3, a different q at every depth.
TEST_F(LosslessSamplingTest, MTPChainSamplesFollowTheTargetDistribution) {
  for (unsigned depth = 1; depth <= 3; ++depth) {
    SCOPED_TRACE("MTP chain of depth " + std::to_string(depth));
    expectTargetDistribution("", 0, 1.0, 16.27, depth);
  }
}

void LosslessSamplingTest::expectTreeSamplesFollowTheTarget(
    StringRef source, int64_t gpuScheduleThreads) {
  std::unique_ptr<GraphExecutor> speculative =
      compileSource(source, "decoder_generate", gpuScheduleThreads);
  // The biased control draws every token from p after token 0.
  std::unique_ptr<GraphExecutor> contextFree =
      compile("decoder_target_only", kTargetLogits, kTargetLogits);
  ASSERT_TRUE(speculative && contextFree);

  constexpr int64_t kRuns = 3000, kNewTokens = 8;
  // counts[t][v]: token v committed after token t (the prompt is [0]).
  std::array<std::array<int64_t, 4>, 4> counts{}, controlCounts{};
  int64_t forwards = 0;
  for (int64_t key = 0; key < kRuns; ++key) {
    int64_t previous = 0;
    for (int64_t token : generate(*speculative, kNewTokens, key, &forwards)) {
      ASSERT_TRUE(token >= 0 && token < 4) << token;
      ++counts[previous][token];
      previous = token;
    }
    previous = 0;
    for (int64_t token : generate(*contextFree, kNewTokens, key)) {
      ++controlCounts[previous][token];
      previous = token;
    }
  }
  double statistic = 0, control = 0;
  for (int t = 0; t < 4; ++t) {
    std::array<double, 4> logits;
    for (int v = 0; v < 4; ++v)
      logits[v] = kTargetLogits[v] + t * kTreeSlope[v];
    statistic += chiSquare(counts[t], softmax(logits));
    control += chiSquare(controlCounts[t], softmax(logits));
  }
  constexpr double kBound = 32.91;
  EXPECT_LT(statistic, kBound) << "tree samples deviate from p";
  EXPECT_GT(control, kBound) << "the bound does not reject the biased control";
  // The tree accepted candidates: fewer target forwards than tokens (the
  // prefill's forward gives the first token).
  double perForward =
      static_cast<double>(kRuns * kNewTokens) / static_cast<double>(forwards);
  EXPECT_GT(perForward, 1.3);
  RecordProperty("chi_square", std::to_string(statistic));
  RecordProperty("chi_square_biased_control", std::to_string(control));
  std::printf("chi-square %.2f (bound %.2f), biased control %.2f, %.2f "
              "tokens per target forward\n",
              statistic, kBound, control, perForward);
}

/// Medusa heads verifying [[0], [1], [0, 0], [1, 0]]: two candidates at
/// each depth. Head 1's best two are tokens 2 and 0, p's most likely after
/// token 0; head 2's best is token 0, p's most likely after token 2.
std::string medusaTreeDecoder() {
  constexpr std::array<double, 4> kHeads[] = {{1.0, 0.0, 2.0, -1.0},
                                              {2.0, 0.5, 1.0, -1.0}};
  return treeTargetFunctions(kTargetLogits, kTreeSlope, kHeads) +
         "spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, "
         "@head2]>) verify(#spec.rejection<temperature = 1.0>) "
         "tree(#spec.tree<parents = [0, 0, 1, 2], ranks = [0, 1, 0, 0]>)\n";
}

TEST_F(LosslessSamplingTest, TreeSamplesFollowTheTargetDistribution) {
  expectTreeSamplesFollowTheTarget(medusaTreeDecoder());
}

// The same on the loops of the CUDA schedule (spec-gpu-schedule).
TEST_F(LosslessSamplingTest, TreeSamplesOnTheGPUScheduleFollowTheTarget) {
  expectTreeSamplesFollowTheTarget(medusaTreeDecoder(), 128);
}

// A draft proposing the tree [[0], [1], [0, 0], [1, 0]] (its best two,
// tokens 1 and 2, then its best, token 1, under each), its second depth
// from a forward over the tree's first.
TEST_F(LosslessSamplingTest, DraftTreeSamplesFollowTheTargetDistribution) {
  expectTreeSamplesFollowTheTarget(
      treeTargetFunctions(kTargetLogits, kTreeSlope) +
      modelFunction("draft", "draft", kDraftLogits, /*takesTree=*/true) +
      "spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, "
      "gamma = 2>) verify(#spec.rejection<temperature = 1.0>) "
      "tree(#spec.tree<parents = [0, 0, 1, 2], ranks = [0, 1, 0, 0]>)\n");
}

TEST_F(LosslessSamplingTest, SeededRunsReproduce) {
  std::unique_ptr<GraphExecutor> speculative =
      compile("decoder_generate", kTargetLogits, kDraftLogits);
  ASSERT_TRUE(speculative);
  EXPECT_EQ(generate(*speculative, 16, 7), generate(*speculative, 16, 7));
  EXPECT_NE(generate(*speculative, 16, 7), generate(*speculative, 16, 8));
}
