//===- CacheRollbackTest.cpp - rejected positions leave no trace ----------===//
//
// The example target with its cache made in place (spec-kv-cache-inplace,
// spec-lower-steps), compiled once. A speculative round writes the last
// token and three proposals into the cache, two proposals are rejected (the
// valid length keeps only the first), and the next round writes from there.
// The cache's valid prefix must then equal, bit for bit, the cache of the
// accepted sequence computed from scratch, and so must the logits.
//
//===----------------------------------------------------------------------===//

#include "InplaceModel.h"
#include "specula/GraphExecutor.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir;
using namespace specula;

namespace {
// tensor<2 x layers x heads x capacity x dim> of the example target.
constexpr int64_t kLayers = 4, kHeads = 2, kCapacity = 64, kDim = 32;

struct Step {
  HostTensor logits, cache;
};

class CacheRollbackTest : public ::testing::Test {
protected:
  void SetUp() override {
    test_models::loadDialects(context);
    module = ModuleOp::create(UnknownLoc::get(&context));
    ASSERT_TRUE(succeeded(test_models::importInplaceModel(*module, "target.onnx",
                                                      "target", kCapacity)));
    FailureOr<std::unique_ptr<GraphExecutor>> compiled =
        GraphExecutor::compile(*module, "target");
    ASSERT_TRUE(succeeded(compiled));
    executor = std::move(*compiled);
  }

  HostTensor emptyCache() {
    HostTensor cache{/*FLOAT=*/1, {2, kLayers, kHeads, kCapacity, kDim}, {}};
    cache.data.assign(2 * kLayers * kHeads * kCapacity * kDim * sizeof(float),
                      0);
    return cache;
  }

  /// Runs the target on `tokens` at positions past.. with `cache`.
  Step forward(ArrayRef<int64_t> tokens, int64_t past, HostTensor cache) {
    std::vector<int64_t> positions;
    for (size_t i = 0; i < tokens.size(); ++i)
      positions.push_back(past + i);
    int64_t n = tokens.size();
    std::string error;
    FailureOr<std::vector<HostTensor>> outputs = executor->run(
        {makeInt64Tensor({1, n}, tokens), makeInt64Tensor({1, n}, positions),
         std::move(cache), makeInt64Tensor({}, {past})},
        error);
    EXPECT_TRUE(succeeded(outputs)) << error;
    return {(*outputs)[0], (*outputs)[2]};
  }

  /// The bytes of positions [0, length) of every layer, keys and values.
  static std::vector<char> validPrefix(const HostTensor &cache,
                                       int64_t length) {
    std::vector<char> bytes;
    size_t row = kDim * sizeof(float);
    for (int64_t slab = 0; slab < 2 * kLayers * kHeads; ++slab)
      for (int64_t p = 0; p < length; ++p) {
        const char *at = cache.data.data() + (slab * kCapacity + p) * row;
        bytes.insert(bytes.end(), at, at + row);
      }
    return bytes;
  }

  /// The logits row of the last token.
  static std::vector<char> lastRow(const HostTensor &logits) {
    size_t row = logits.shape[2] * sizeof(float);
    return std::vector<char>(logits.data.end() - row, logits.data.end());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<GraphExecutor> executor;
};
} // namespace

TEST_F(CacheRollbackTest, RejectedPositionsAreOverwritten) {
  std::vector<int64_t> prompt{256, 'd', 'e', 'f', ' '};
  int64_t past = prompt.size();
  Step prefill = forward(prompt, 0, emptyCache());

  // A round feeds the last token and three proposals.
  std::vector<int64_t> round{'m', 'a', 'x', 'y'};
  Step verify = forward(round, past, prefill.cache);
  // Keep 'm' and 'a' (one proposal accepted); 'x' and 'y' are rejected and
  // the corrected token is 'i'. The next round writes 'i' at past + 2.
  Step next = forward({'i'}, past + 2, verify.cache);

  // From scratch: the accepted sequence in one prefill.
  std::vector<int64_t> accepted = prompt;
  accepted.insert(accepted.end(), {'m', 'a', 'i'});
  Step scratch = forward(accepted, 0, emptyCache());

  int64_t length = accepted.size();
  EXPECT_EQ(validPrefix(next.cache, length), validPrefix(scratch.cache, length))
      << "the cache's valid prefix differs from the recomputation";
  EXPECT_EQ(lastRow(next.logits), lastRow(scratch.logits))
      << "the logits after a rollback differ from the recomputation";
  // The rejected positions were written, then one was overwritten: the
  // test can fail if rollback did not take effect.
  EXPECT_NE(validPrefix(verify.cache, length),
            validPrefix(scratch.cache, length));
}
