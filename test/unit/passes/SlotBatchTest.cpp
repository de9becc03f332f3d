//===- SlotBatchTest.cpp - a sequence's logits do not depend on its batch -===//
//
// Batched rounds run several sequences' rows in one forward over a cache of
// slots (spec-kv-cache-inplace with slots): each row must see its own
// sequence only, at its own length. For the bundled decoder-only models,
// each compiled once with one sequence's cache and once with a cache of
// slots: sequences of different lengths prefilled into their slots, then
// advanced together by forwards of several rows, each keeping a different
// number of them (the rest stay written past its length, as rejected
// proposals and padding rows do, until a later forward overwrites them),
// some forwards over a part of the slots; every sequence's logits must
// equal, bit for bit, those of the same forwards run alone.
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
constexpr int64_t kCapacity = 64, kSlots = 4;

/// One model compiled for one cache layout.
struct Compiled {
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<GraphExecutor> executor;
  HostTensor cache;
};

class SlotBatchTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    test_models::loadDialects(context);
    compile(alone, 0);
    compile(batched, kSlots);
  }

  void compile(Compiled &compiled, int64_t slots) {
    compiled.module = ModuleOp::create(UnknownLoc::get(&context));
    ASSERT_TRUE(succeeded(test_models::importInplaceModel(
        *compiled.module, std::string(GetParam()) + ".onnx", "model",
        kCapacity, slots)));
    auto func = compiled.module->lookupSymbol<func::FuncOp>("model");
    ASSERT_TRUE(func);
    auto cacheType = dyn_cast<RankedTensorType>(func.getArgumentTypes()[2]);
    ASSERT_TRUE(cacheType && cacheType.hasStaticShape());
    compiled.cache = HostTensor{/*FLOAT=*/1,
                                {cacheType.getShape().begin(),
                                 cacheType.getShape().end()},
                                {}};
    compiled.cache.data.assign(compiled.cache.numElements() * sizeof(float),
                               0);
    vocab = cast<ShapedType>(func.getResultTypes()[0]).getDimSize(2);
    FailureOr<std::unique_ptr<GraphExecutor>> executor =
        GraphExecutor::compile(*compiled.module, "model");
    ASSERT_TRUE(succeeded(executor));
    compiled.executor = std::move(*executor);
  }

  /// Runs `compiled` on rows of tokens (one row per sequence, all as long)
  /// at the sequences' past lengths; `trailing` are the arguments after the
  /// cache. Returns the logits and keeps the cache.
  HostTensor run(Compiled &compiled,
                 const std::vector<std::vector<int64_t>> &rows,
                 ArrayRef<int64_t> pasts, std::vector<HostTensor> trailing) {
    int64_t batch = rows.size(), n = rows.front().size();
    std::vector<int64_t> tokens, positions;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n; ++i) {
        tokens.push_back(rows[b][i]);
        positions.push_back(pasts[b] + i);
      }
    std::vector<HostTensor> inputs{makeInt64Tensor({batch, n}, tokens),
                                   makeInt64Tensor({batch, n}, positions),
                                   compiled.cache};
    llvm::append_range(inputs, trailing);
    std::string error;
    FailureOr<std::vector<HostTensor>> outputs =
        compiled.executor->run(inputs, error);
    EXPECT_TRUE(succeeded(outputs)) << error;
    if (failed(outputs))
      return {};
    compiled.cache = outputs->back();
    return (*outputs)[0];
  }

  /// The bytes of logits row (b, i) of a forward of n rows per sequence.
  std::vector<char> row(const HostTensor &logits, int64_t n, int64_t b,
                        int64_t i) {
    size_t bytes = vocab * sizeof(float);
    auto begin = logits.data.begin() + (b * n + i) * bytes;
    return std::vector<char>(begin, begin + bytes);
  }

  MLIRContext context;
  Compiled alone, batched;
  int64_t vocab = 0;
};

/// A sequence as the reference runs it: its own cache, alone.
struct Sequence {
  std::vector<int64_t> tokens;
  int64_t length = 0;
  HostTensor cache;
};
} // namespace

TEST_P(SlotBatchTest, SequencesInABatchEqualSequencesAlone) {
  std::mt19937 random(11);
  std::uniform_int_distribution<int64_t> byte(0, 255);
  std::vector<Sequence> sequences(kSlots);
  for (Sequence &sequence : sequences) {
    for (int i = 0; i < kCapacity; ++i)
      sequence.tokens.push_back(byte(random));
    sequence.cache = alone.cache;
  }
  // Each slot prefilled alone (first slot s, one past length 0).
  const int64_t prompts[kSlots] = {5, 13, 1, 8};
  for (int64_t s = 0; s < kSlots; ++s) {
    Sequence &sequence = sequences[s];
    std::vector<std::vector<int64_t>> prompt{
        {sequence.tokens.begin(), sequence.tokens.begin() + prompts[s]}};
    alone.cache = sequence.cache;
    HostTensor reference = run(alone, prompt, {0}, {makeInt64Tensor({}, {0})});
    sequence.cache = alone.cache;
    HostTensor slotted = run(batched, prompt, {0},
                             {makeInt64Tensor({}, {s}),
                              makeInt64Tensor({1}, {0})});
    for (int64_t i = 0; i < prompts[s]; ++i)
      ASSERT_EQ(row(slotted, prompts[s], 0, i), row(reference, prompts[s], 0, i))
          << GetParam() << ": prefill row " << i << " of slot " << s;
    sequence.length = prompts[s];
  }

  // Rounds over slots [first, first + count) of `rows` rows each; sequence
  // s then keeps accepted[s] of them.
  struct Round {
    int64_t first, count, rows;
    std::vector<int64_t> accepted;
  };
  const Round rounds[] = {{0, 4, 3, {1, 3, 2, 0}}, {0, 4, 1, {1, 1, 1, 1}},
                          {1, 2, 4, {4, 1}},       {0, 3, 2, {2, 0, 1}},
                          {2, 2, 5, {3, 5}},       {0, 4, 6, {6, 2, 4, 1}}};
  for (const Round &round : rounds) {
    std::vector<std::vector<int64_t>> rows;
    std::vector<int64_t> pasts;
    for (int64_t s = round.first; s < round.first + round.count; ++s) {
      Sequence &sequence = sequences[s];
      rows.emplace_back(sequence.tokens.begin() + sequence.length,
                        sequence.tokens.begin() + sequence.length + round.rows);
      pasts.push_back(sequence.length);
    }
    HostTensor together =
        run(batched, rows, pasts,
            {makeInt64Tensor({}, {round.first}),
             makeInt64Tensor({round.count}, pasts)});
    for (int64_t b = 0; b < round.count; ++b) {
      Sequence &sequence = sequences[round.first + b];
      alone.cache = sequence.cache;
      HostTensor reference =
          run(alone, {rows[b]}, {sequence.length},
              {makeInt64Tensor({}, {sequence.length})});
      sequence.cache = alone.cache;
      for (int64_t i = 0; i < round.rows; ++i)
        EXPECT_EQ(row(together, round.rows, b, i),
                  row(reference, round.rows, 0, i))
            << GetParam() << ": row " << i << " of slot " << round.first + b
            << " at length " << sequence.length << " in a batch of "
            << round.count << " differs from the sequence alone";
      sequence.length += round.accepted[b];
    }
  }
}

// The example target (its draft is the same architecture, smaller) and the
// GPT-2-style model (LayerNorm, GELU, biases, tied head).
INSTANTIATE_TEST_SUITE_P(BundledModels, SlotBatchTest,
                         ::testing::Values("target", "gpt2"));
