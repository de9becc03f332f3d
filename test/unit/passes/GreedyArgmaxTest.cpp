//===- GreedyArgmaxTest.cpp - the greedy argmax, scalar and in vectors ----===//
//
// Compiles a greedy `spec.propose` (spec-lower-steps, spec-graph-to-llvm)
// with the linalg reduction (argmax-lanes=0) and in vectors of 8 and 16
// lanes, and runs all of them on rows made to catch a wrong lane merge or
// tail: ties within and across lanes, NaNs (first, in the middle, all),
// infinities, all -inf, the maximum in the last partial chunk, and random
// rows, for vocabularies shorter than, equal to and longer than a vector.
// Every lowering must give what torch.argmax gives for rows without NaN
// (the first index of the maximum) and the linalg reduction's rule for the
// rest, which the reference below spells out.
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

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;
using namespace specula;

namespace {
constexpr int32_t kFloat = 1;
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::nanf("");

/// The linalg reduction's rule: start at column 0, take a column whose
/// value is greater than the best so far (so NaNs are never taken, and a
/// NaN in column 0 is never replaced).
int64_t referenceArgmax(const std::vector<float> &row) {
  int64_t best = 0;
  for (size_t c = 1; c < row.size(); ++c)
    if (row[c] > row[best])
      best = static_cast<int64_t>(c);
  return best;
}

class GreedyArgmaxTest : public ::testing::TestWithParam<int64_t> {
protected:
  GreedyArgmaxTest() {
    DialectRegistry registry;
    registerSpeculaDialects(registry);
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The tokens each row of `rows` (rows x vocab) proposes, compiled with
  /// `lanes`.
  std::vector<int64_t> propose(const std::vector<std::vector<float>> &rows,
                               int64_t lanes) {
    int64_t count = rows.size(), vocab = rows.front().size();
    std::string source = llvm::formatv(
        "func.func @main(%logits: tensor<{0}x{1}xf32>) -> tensor<{0}xi64> {{\n"
        "  %t, %q = spec.propose %logits rule(#spec.greedy)\n"
        "      : tensor<{0}x{1}xf32> -> tensor<{0}xi64>, tensor<{0}x{1}xf32>\n"
        "  return %t : tensor<{0}xi64>\n}\n",
        count, vocab);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return {};
    PassManager pm(&context);
    SpecLowerStepsOptions options;
    options.argmaxLanes = lanes;
    pm.addPass(createSpecLowerSteps(options));
    EXPECT_TRUE(succeeded(pm.run(*module)));
    FailureOr<std::unique_ptr<GraphExecutor>> executor =
        GraphExecutor::compile(*module, "main");
    EXPECT_TRUE(succeeded(executor));
    if (failed(executor))
      return {};
    HostTensor logits{kFloat, {count, vocab}, {}};
    logits.data.resize(count * vocab * sizeof(float));
    for (int64_t r = 0; r < count; ++r)
      std::memcpy(logits.data.data() + r * vocab * sizeof(float),
                  rows[r].data(), vocab * sizeof(float));
    std::string error;
    FailureOr<std::vector<HostTensor>> results =
        (*executor)->run({logits}, error);
    EXPECT_TRUE(succeeded(results)) << error;
    if (failed(results))
      return {};
    std::vector<int64_t> tokens(count);
    std::memcpy(tokens.data(), (*results)[0].data.data(),
                count * sizeof(int64_t));
    return tokens;
  }

  MLIRContext context;
};

/// Rows of `vocab` columns that each stress one part of the merge.
std::vector<std::vector<float>> testRows(int64_t vocab) {
  std::vector<std::vector<float>> rows;
  auto row = [&](auto fill) {
    std::vector<float> values(vocab);
    for (int64_t c = 0; c < vocab; ++c)
      values[c] = fill(c);
    rows.push_back(values);
  };
  int64_t last = vocab - 1;
  // The maximum once, at the first, middle and last column.
  for (int64_t at : {int64_t(0), vocab / 2, last})
    row([&](int64_t c) { return c == at ? 5.0f : float(c % 7) - 3.0f; });
  // Ties: the same maximum in several lanes and chunks; the first wins.
  row([&](int64_t c) { return (c % 3 == 2) ? 4.0f : 0.0f; });
  row([&](int64_t c) { return (c == last || c == vocab / 3) ? 4.0f : -1.0f; });
  row([&](int64_t) { return 1.0f; });
  // NaNs: first (kept), in the middle (skipped), everywhere (column 0).
  row([&](int64_t c) { return c == 0 ? kNaN : float(c); });
  row([&](int64_t c) { return c == vocab / 2 ? kNaN : float(c % 5); });
  row([&](int64_t) { return kNaN; });
  // Infinities: +inf anywhere wins; all -inf keeps column 0; -inf and NaN.
  row([&](int64_t c) { return c == last ? kInf : -kInf; });
  row([&](int64_t) { return -kInf; });
  row([&](int64_t c) { return c % 2 ? kNaN : -kInf; });
  row([&](int64_t c) { return c == 0 ? -kInf : (c % 2 ? kNaN : -5.0f); });
  // Signed zeros compare equal: the first zero wins.
  row([&](int64_t c) { return c % 2 ? 0.0f : -0.0f; });
  std::mt19937 generator(7);
  std::normal_distribution<float> normal;
  for (int i = 0; i < 8; ++i)
    row([&](int64_t) { return normal(generator); });
  // Few distinct values: many ties between lanes.
  std::uniform_int_distribution<int> small(0, 3);
  for (int i = 0; i < 8; ++i)
    row([&](int64_t) { return float(small(generator)); });
  return rows;
}

TEST_P(GreedyArgmaxTest, EveryLoweringGivesTheFirstMaximum) {
  int64_t vocab = GetParam();
  std::vector<std::vector<float>> rows = testRows(vocab);
  std::vector<int64_t> expected;
  for (const std::vector<float> &row : rows)
    expected.push_back(referenceArgmax(row));
  for (int64_t lanes : {0, 8, 16}) {
    std::vector<int64_t> tokens = propose(rows, lanes);
    ASSERT_EQ(tokens.size(), rows.size()) << "argmax-lanes=" << lanes;
    for (size_t r = 0; r < rows.size(); ++r)
      EXPECT_EQ(tokens[r], expected[r])
          << "argmax-lanes=" << lanes << ", vocabulary " << vocab << ", row "
          << r;
  }
}

// Shorter than a vector, one vector, one more, and the example models' 259.
INSTANTIATE_TEST_SUITE_P(Vocabularies, GreedyArgmaxTest,
                         ::testing::Values(1, 5, 16, 17, 40, 259));
} // namespace
