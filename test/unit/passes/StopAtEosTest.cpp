//===- StopAtEosTest.cpp - a round that commits EOS ends the decode loop --===//
//
// A target and a draft that both continue token t with t + 1, so every
// proposal is accepted: from the prompt [1], the first round commits
// 3, 4, 5, 6 and 7 at once. With EOS = 5 (or a caller's stop token) inside
// that round, the loop must stop after it (two target forwards: the prefill
// and the round) instead of generating to max_new_tokens.
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

using namespace mlir;
using namespace specula;

namespace {
/// A model over 8 tokens whose logits prefer token t + 1 after token t.
std::string successorModel(StringRef name, StringRef role) {
  return (R"(
func.func @)" + name + R"((%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
    %pos: tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
    %cache: !spec.kv_cache<1x1x64x1xf32> {spec.io = #spec.io<kv_cache>},
    %past: index {spec.io = #spec.io<past_length>})
    -> (tensor<1x?x8xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x1x64x1xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<)" + role + R"(>,
                spec.config = #spec.model_config<vocab_size = 8, eos_token_id = 5>} {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %ids, %c1 : tensor<?x?xi64>
  %init = tensor.empty(%n) : tensor<1x?x8xf32>
  %logits = linalg.generic {indexing_maps = [
      affine_map<(b, s, v) -> (b, s)>, affine_map<(b, s, v) -> (b, s, v)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<?x?xi64>) outs(%init : tensor<1x?x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %v = linalg.index 2 : index
    %vi = arith.index_cast %v : index to i64
    %one = arith.constant 1 : i64
    %next = arith.addi %id, %one : i64
    %hit = arith.cmpi eq, %vi, %next : i64
    %ten = arith.constant 10.0 : f32
    %zero = arith.constant 0.0 : f32
    %l = arith.select %hit, %ten, %zero : f32
    linalg.yield %l : f32
  } -> tensor<1x?x8xf32>
  return %logits, %cache : tensor<1x?x8xf32>, !spec.kv_cache<1x1x64x1xf32>
}
)")
      .str();
}

/// Runs `function` of the successor decoder from the prompt [1] with
/// `stopTokens`; returns the sequence's first `length` tokens and the target
/// forwards.
std::pair<std::vector<int64_t>, int64_t>
run(StringRef function, ArrayRef<int64_t> stopTokens, size_t length) {
  DialectRegistry registry;
  registerSpeculaDialects(registry);
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string source =
      successorModel("target", "target") + successorModel("draft", "draft") +
      "spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, "
      "gamma = 4>) verify(#spec.greedy)\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  EXPECT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(createSpecLowerGenerate());
  pm.addPass(createSpecLowerSteps());
  EXPECT_TRUE(succeeded(pm.run(*module)));
  FailureOr<std::unique_ptr<GraphExecutor>> executor =
      GraphExecutor::compile(*module, function);
  EXPECT_TRUE(succeeded(executor));
  if (failed(executor))
    return {};
  std::string error;
  FailureOr<std::vector<HostTensor>> outputs = (*executor)->run(
      {makeInt64Tensor({1}, {1}), makeInt64Tensor({}, {20}),
       makeInt64Tensor({}, {0}),
       makeInt64Tensor({static_cast<int64_t>(stopTokens.size())},
                       stopTokens)},
      error);
  EXPECT_TRUE(succeeded(outputs)) << error;
  if (failed(outputs))
    return {};
  const auto *seq =
      reinterpret_cast<const int64_t *>((*outputs)[0].data.data());
  return {std::vector<int64_t>(seq, seq + length), int64Value((*outputs)[2])};
}

TEST(StopAtEos, ARoundThatCommitsEosEndsTheLoop) {
  // The prefill, then one round committing 3 4 5 6 7.
  auto [speculative, rounds] = run("decoder_generate", {}, 5);
  EXPECT_EQ(speculative, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(rounds, 2);
  // The prefill gives 2, then one forward per token up to EOS.
  auto [plain, steps] = run("decoder_target_only", {}, 5);
  EXPECT_EQ(plain, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(steps, 4);
}

TEST(StopAtEos, ARoundThatCommitsAStopTokenEndsTheLoop) {
  // Stop token 4 sits in the same round; stop token 2 is the prefill's.
  EXPECT_EQ(run("decoder_generate", {7, 4}, 4).second, 2);
  EXPECT_EQ(run("decoder_target_only", {7, 4}, 4).second, 3);
  EXPECT_EQ(run("decoder_generate", {2}, 2).second, 1);
  EXPECT_EQ(run("decoder_target_only", {2}, 2).second, 1);
}
} // namespace
