//===- BatchInvarianceTest.cpp - a row's logits do not depend on the batch ===//
//
// Exact greedy speculation needs the target's logits for a token to be the
// same, bit for bit, whether the token is verified with others or decoded
// alone. For every bundled decoder-only model, in the in-place cache form the
// decoders call (spec-kv-cache-inplace, spec-lower-steps) and compiled once
// with the CPU pipeline: at several positions, row i of a forward of k rows
// (k = 1..8, the verify widths, and every tiling of the blocked
// contractions: full 8-row tiles, 4, 2 and 1-row remainders) must equal the
// one-row forward of the same token after the same prefix.
//
//===----------------------------------------------------------------------===//

#include "InplaceModel.h"
#include "specula/GraphExecutor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <random>

using namespace mlir;
using namespace specula;

namespace {
constexpr int64_t kCapacity = 64, kMaxRows = 8;

struct Forward {
  HostTensor logits, cache;
};

class BatchInvarianceTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    test_models::loadDialects(context);
    module = ModuleOp::create(UnknownLoc::get(&context));
    ASSERT_TRUE(succeeded(test_models::importInplaceModel(
        *module, std::string(GetParam()) + ".onnx", "model", kCapacity)));
    auto func = module->lookupSymbol<func::FuncOp>("model");
    ASSERT_TRUE(func);
    auto cacheType = dyn_cast<RankedTensorType>(func.getArgumentTypes()[2]);
    ASSERT_TRUE(cacheType && cacheType.hasStaticShape());
    cacheShape.assign(cacheType.getShape().begin(), cacheType.getShape().end());
    vocab = cast<ShapedType>(func.getResultTypes()[0]).getDimSize(2);
    FailureOr<std::unique_ptr<GraphExecutor>> compiled =
        GraphExecutor::compile(*module, "model");
    ASSERT_TRUE(succeeded(compiled));
    executor = std::move(*compiled);
  }

  HostTensor emptyCache() {
    HostTensor cache{/*FLOAT=*/1, cacheShape, {}};
    cache.data.assign(cache.numElements() * sizeof(float), 0);
    return cache;
  }

  /// The model on `tokens` at positions past.. with `cache`.
  Forward forward(ArrayRef<int64_t> tokens, int64_t past,
                  const HostTensor &cache) {
    std::vector<int64_t> positions;
    for (size_t i = 0; i < tokens.size(); ++i)
      positions.push_back(past + i);
    int64_t n = tokens.size();
    std::string error;
    FailureOr<std::vector<HostTensor>> outputs = executor->run(
        {makeInt64Tensor({1, n}, tokens), makeInt64Tensor({1, n}, positions),
         cache, makeInt64Tensor({}, {past})},
        error);
    EXPECT_TRUE(succeeded(outputs)) << error;
    if (failed(outputs))
      return {};
    return {(*outputs)[0], outputs->back()};
  }

  /// The bytes of logits row `row`.
  std::vector<char> row(const HostTensor &logits, int64_t row) {
    size_t bytes = vocab * sizeof(float);
    auto begin = logits.data.begin() + row * bytes;
    return std::vector<char>(begin, begin + bytes);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<GraphExecutor> executor;
  std::vector<int64_t> cacheShape;
  int64_t vocab = 0;
};
} // namespace

TEST_P(BatchInvarianceTest, RowsOfAForwardEqualOneRowForwards) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int64_t> byte(0, 255);
  std::vector<int64_t> tokens;
  for (int i = 0; i < 32; ++i)
    tokens.push_back(byte(random));

  for (int64_t past : {1, 5, 19}) {
    Forward prefix =
        forward(ArrayRef(tokens).take_front(past), 0, emptyCache());
    // One row at a time: the reference.
    std::vector<std::vector<char>> alone;
    HostTensor cache = prefix.cache;
    for (int64_t i = 0; i < kMaxRows; ++i) {
      Forward step = forward(tokens[past + i], past + i, cache);
      alone.push_back(row(step.logits, 0));
      cache = step.cache;
    }
    for (int64_t k = 1; k <= kMaxRows; ++k) {
      Forward together =
          forward(ArrayRef(tokens).slice(past, k), past, prefix.cache);
      for (int64_t i = 0; i < k; ++i)
        EXPECT_EQ(row(together.logits, i), alone[i])
            << GetParam() << ": row " << i << " of a " << k
            << "-row forward after " << past
            << " positions differs from its one-row forward";
    }
  }
}

// The decoder-only bundled models: the example target, its draft, and the
// GPT-2-style model (LayerNorm, GELU, biases, tied head).
INSTANTIATE_TEST_SUITE_P(BundledModels, BatchInvarianceTest,
                         ::testing::Values("target", "draft", "gpt2"));
