//===- BatchRoundTest.cpp - batched rounds give each sequence its tokens --===//
//
// spec-slot-target, spec-kv-cache-inplace and spec-lower-rounds build a
// decoder's @decoder_prefill and @decoder_round over one cache of sequence
// slots. Driven the way a server drives them (sequences joining at
// different rounds, into slots in any order, leaving when done; a round
// runs each run of consecutive active slots), every sequence's tokens must
// be the tokens it gets alone: prefilled and stepped by the same functions
// as the only sequence. (SlotBatchTests shows the batched forward's logits
// equal the one-sequence forward's, so these are its greedy tokens.)
//
//===----------------------------------------------------------------------===//

#include "InplaceModel.h"
#include "specula/GraphExecutor.h"

#include "passes/Decoder/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Transforms/Passes.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <random>

using namespace mlir;
using namespace specula;

namespace {
constexpr int64_t kCapacity = 48, kSlots = 4, kNewTokens = 12;

class BatchRoundTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    test_models::loadDialects(context);
    // The steps, which return the cache (the exported entries update the
    // caller's buffer in place, which GraphExecutor's copies would lose).
    prefill = compileRounds("decoder_prefill_step");
    round = compileRounds("decoder_round_step");
    ASSERT_TRUE(prefill && round);
  }

  static HostTensor zeros(RankedTensorType type) {
    HostTensor tensor{/*FLOAT=*/1,
                      {type.getShape().begin(), type.getShape().end()},
                      {}};
    tensor.data.assign(tensor.numElements() * sizeof(float), 0);
    return tensor;
  }

  /// The model as a target-only decoder with batched rounds, compiled for
  /// `entry`.
  std::unique_ptr<GraphExecutor> compileRounds(StringRef entry) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
    std::string path =
        std::string(SPECULA_MODELS_DIR) + "/" + GetParam() + ".onnx";
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
    ONNXImportOptions options;
    options.functionName = "target";
    if (!buffer ||
        failed(importONNX(*module, (*buffer)->getBuffer(), path, options)))
      return nullptr;
    PassManager pm(&context);
    pm.addPass(createSpecComposeTarget());
    SpecSlotTargetOptions slots;
    slots.slots = kSlots;
    pm.addPass(createSpecSlotTarget(slots));
    SpecKVCacheInplaceOptions cache;
    cache.capacity = kCapacity;
    pm.addPass(createSpecKVCacheInplace(cache));
    pm.addPass(createSpecLowerRounds());
    pm.addPass(createSpecLowerSteps());
    if (failed(pm.run(*module)))
      return nullptr;
    auto func = module->lookupSymbol<func::FuncOp>(entry);
    if (!func)
      return nullptr;
    // Only what `entry` calls is compiled (not the decoder's own target).
    for (auto other : module->getOps<func::FuncOp>())
      if (other != func)
        other.setPrivate();
    func.setPublic();
    PassManager dce(&context);
    dce.addPass(createSymbolDCEPass());
    if (failed(dce.run(*module)))
      return nullptr;
    if (slotCache.data.empty())
      slotCache = zeros(cast<RankedTensorType>(func.getArgumentTypes()[0]));
    FailureOr<std::unique_ptr<GraphExecutor>> compiled =
        GraphExecutor::compile(*module, entry);
    return succeeded(compiled) ? std::move(*compiled) : nullptr;
  }

  /// Prefills `prompt` into `slot`; returns its first token.
  int64_t prefillSlot(int64_t slot, const std::vector<int64_t> &prompt) {
    std::string error;
    int64_t n = prompt.size();
    FailureOr<std::vector<HostTensor>> out = prefill->run(
        {slotCache, makeInt64Tensor({}, {slot}), makeInt64Tensor({n}, prompt)},
        error);
    EXPECT_TRUE(succeeded(out)) << error;
    if (failed(out))
      return -1;
    slotCache = out->back();
    return int64Value((*out)[0]);
  }

  /// One round over slots [first, first + lengths.size()).
  std::vector<int64_t> roundOver(int64_t first,
                                 const std::vector<int64_t> &lengths,
                                 const std::vector<int64_t> &tokens) {
    std::string error;
    int64_t count = lengths.size();
    FailureOr<std::vector<HostTensor>> out = round->run(
        {slotCache, makeInt64Tensor({}, {first}),
         makeInt64Tensor({count}, lengths), makeInt64Tensor({count}, tokens)},
        error);
    EXPECT_TRUE(succeeded(out)) << error;
    if (failed(out))
      return {};
    slotCache = out->back();
    const int64_t *picked =
        reinterpret_cast<const int64_t *>((*out)[0].data.data());
    return {picked, picked + count};
  }

  /// The tokens `prompt` gets as the only sequence, in slot 0.
  std::vector<int64_t> generateAlone(const std::vector<int64_t> &prompt) {
    std::vector<int64_t> generated{prefillSlot(0, prompt)};
    int64_t length = prompt.size();
    while (static_cast<int64_t>(generated.size()) < kNewTokens)
      generated.push_back(roundOver(0, {length++}, {generated.back()})[0]);
    return generated;
  }

  MLIRContext context;
  std::unique_ptr<GraphExecutor> prefill, round;
  HostTensor slotCache;
};

/// A sequence in a slot: its tokens so far and how many it has generated.
struct Active {
  int64_t sequence, length, last;
  std::vector<int64_t> generated;
};
} // namespace

TEST_P(BatchRoundTest, EverySequenceGetsItsGreedyTokensAlone) {
  std::mt19937 random(5);
  std::uniform_int_distribution<int64_t> byte(0, 255), size(1, 9);
  const int64_t sequences = 6;
  std::vector<std::vector<int64_t>> prompts(sequences);
  for (auto &prompt : prompts)
    for (int64_t i = 0, n = size(random); i < n; ++i)
      prompt.push_back(byte(random));
  // Sequence s joins at round joins[s] (or when a slot frees), into the
  // highest free slot, so the active slots are not always one run.
  const int64_t joins[sequences] = {0, 0, 2, 3, 3, 5};
  std::vector<std::optional<Active>> slots(kSlots);
  std::vector<std::vector<int64_t>> outputs(sequences);
  int64_t next = 0, done = 0;
  for (int64_t roundIndex = 0; done < sequences; ++roundIndex) {
    for (int64_t slot = kSlots - 1; slot >= 0 && next < sequences; --slot) {
      if (slots[slot] || joins[next] > roundIndex)
        continue;
      int64_t first = prefillSlot(slot, prompts[next]);
      slots[slot] = Active{next, static_cast<int64_t>(prompts[next].size()),
                           first, {first}};
      ++next;
    }
    // Each run of consecutive active slots is one round.
    for (int64_t start = 0; start < kSlots;) {
      if (!slots[start]) {
        ++start;
        continue;
      }
      int64_t end = start;
      std::vector<int64_t> lengths, tokens;
      for (; end < kSlots && slots[end]; ++end) {
        lengths.push_back(slots[end]->length);
        tokens.push_back(slots[end]->last);
      }
      int64_t count = end - start;
      std::vector<int64_t> picked = roundOver(start, lengths, tokens);
      ASSERT_EQ(static_cast<int64_t>(picked.size()), count);
      for (int64_t b = 0; b < count; ++b) {
        Active &active = *slots[start + b];
        active.length += 1;
        active.last = picked[b];
        active.generated.push_back(picked[b]);
        if (static_cast<int64_t>(active.generated.size()) == kNewTokens) {
          outputs[active.sequence] = active.generated;
          slots[start + b].reset();
          ++done;
        }
      }
      start = end;
    }
  }
  for (int64_t s = 0; s < sequences; ++s)
    EXPECT_EQ(outputs[s], generateAlone(prompts[s]))
        << GetParam() << ": sequence " << s << " (prompt of "
        << prompts[s].size() << " tokens) differs from its tokens "
        << "alone";
}

// The example target (the forward's batch invariance is SlotBatchTests'
// to show for every architecture; the rounds are the same for all).
INSTANTIATE_TEST_SUITE_P(BundledModels, BatchRoundTest,
                         ::testing::Values("target"));
