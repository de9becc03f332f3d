//===- RuntimeTest.cpp - the runtime's parts that need no artifact --------===//
//
// The manifest's strict JSON reader, the functions compiled code calls
// (memrefCopy, the buffer allocator, the run-time checks' report) and the
// check of what a decode loop returns.
// Artifacts themselves are tested end to end in test/tools/spec-run and
// ExactGreedyTests.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "Manifest.h"
#include "specrt/specrt.h"

#include "gtest/gtest.h"

#include <cstring>
#include <numeric>
#include <vector>

using namespace specrt;

// libspecrt.so's allocator, which compiled code calls.
extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t size);
extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                    uint64_t size);
extern "C" void _mlir_memref_to_llvm_free(void *block);

namespace {
TEST(Json, ParsesNestedValues) {
  nlohmann::json v;
  std::string error;
  ASSERT_TRUE(parseJson(R"({"a": [1, -2.5e1, true, null], "b": {"c": "x\n\u00e9"}})",
                        v, error))
      << error;
  ASSERT_TRUE(v.is_object());
  const nlohmann::json &a = v["a"];
  ASSERT_TRUE(a.is_array() && a.size() == 4u);
  EXPECT_EQ(a[0].get<double>(), 1);
  EXPECT_EQ(a[1].get<double>(), -25);
  EXPECT_TRUE(a[2].get<bool>());
  EXPECT_TRUE(a[3].is_null());
  EXPECT_EQ(v["b"]["c"].get<std::string>(), "x\n\xc3\xa9");
}

TEST(Json, ReportsWhereItFails) {
  nlohmann::json v;
  std::string error;
  // nlohmann/json's column is where its lexer stopped, not the token's.
  EXPECT_FALSE(parseJson("{\n  \"a\": 1,\n  \"b\" 2\n}", v, error));
  EXPECT_EQ(error.rfind("line 3, column ", 0), 0u) << error;
  EXPECT_NE(error.find("expected ':'"), std::string::npos) << error;
  EXPECT_FALSE(parseJson("{\"a\": \"unterminated", v, error));
  EXPECT_EQ(error.rfind("line 1, column 20: ", 0), 0u) << error;
  EXPECT_FALSE(parseJson("[1, 2] 3", v, error));
  EXPECT_EQ(error.rfind("line 1, column 8: ", 0), 0u) << error;
  EXPECT_FALSE(parseJson(std::string(1000, '[') + std::string(1000, ']'), v,
                         error));
  EXPECT_EQ(error, "nested more than 64 levels deep");
}

// What strtod or a lenient reader would take, RFC 8259 does not: a manifest
// must mean one thing.
TEST(Json, RefusesWhatTheGrammarDoesNot) {
  nlohmann::json v;
  std::string error;
  for (const char *number : {"0x103", "0512", "+1", "1.", ".5", "1e", "-",
                             "inf", "nan", "NaN", "-Infinity", "1e999", "1_0"}) {
    EXPECT_FALSE(parseJson(std::string("[") + number + "]", v, error))
        << number;
  }
  EXPECT_FALSE(parseJson(R"({"a": 1, "a": 2})", v, error));
  EXPECT_EQ(error, "duplicate member 'a'");
  EXPECT_FALSE(parseJson(R"({"b": {"a": 1, "c": {"a": 2}, "a": 3}})", v, error));
  EXPECT_EQ(error, "duplicate member 'b.a'");
  EXPECT_TRUE(parseJson(R"({"a": {"a": 1}, "b": {"a": 2}})", v, error)) << error;
  EXPECT_FALSE(parseJson(R"({"file": "decoder.so\u0000x"})", v, error));
  EXPECT_NE(error.find("NUL"), std::string::npos) << error;
  EXPECT_FALSE(parseJson(R"(["\ud800"])", v, error));

  ASSERT_TRUE(parseJson("[0, -0, 0.5, 1e3, 1E-2, 10, -7.25e+1]", v, error))
      << error;
  std::vector<double> expected = {0, 0, 0.5, 1000, 0.01, 10, -72.5};
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(v[i].get<double>(), expected[i]) << i;
}
} // namespace

extern "C" void memrefCopy(int64_t elementSize, void *source, void *target);
extern "C" void specrt_check(bool ok, const char *message);
namespace specrt {
const char *takeCheckFailure();
} // namespace specrt

namespace {
template <int Rank> struct Descriptor {
  float *allocated, *aligned;
  int64_t offset, sizes[Rank], strides[Rank];
};
struct Unranked {
  int64_t rank;
  void *descriptor;
};

TEST(MemRefCopy, CopiesAStridedViewIntoADenseBuffer) {
  // The 2x3 block at (1, 2) of a 4x6 matrix, transposed by its strides.
  std::vector<float> matrix(24);
  std::iota(matrix.begin(), matrix.end(), 0.0f);
  std::vector<float> out(6, -1.0f);
  Descriptor<2> source{matrix.data(), matrix.data(), 1 * 6 + 2, {3, 2}, {1, 6}};
  Descriptor<2> target{out.data(), out.data(), 0, {3, 2}, {2, 1}};
  Unranked s{2, &source}, t{2, &target};
  memrefCopy(sizeof(float), &s, &t);
  EXPECT_EQ(out, (std::vector<float>{8, 14, 9, 15, 10, 16}));
}

TEST(MemRefCopy, WalksEveryOuterDimensionOfHighRanks) {
  // A 2x3x2 block of a 3x4x5 tensor, inner dimension strided, as rank 3
  // and padded with unit dimensions to rank 12 (more outer dimensions than
  // the copy keeps on the stack).
  std::vector<float> tensor(60);
  std::iota(tensor.begin(), tensor.end(), 0.0f);
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k)
        expected.push_back(tensor[(i + 1) * 20 + j * 5 + k * 2]);
  std::vector<float> out(12, -1.0f);
  Descriptor<3> source{tensor.data(), tensor.data(), 20, {2, 3, 2}, {20, 5, 2}};
  Descriptor<3> target{out.data(), out.data(), 0, {2, 3, 2}, {6, 2, 1}};
  Unranked s{3, &source}, t{3, &target};
  memrefCopy(sizeof(float), &s, &t);
  EXPECT_EQ(out, expected);

  Descriptor<12> wideSource{tensor.data(), tensor.data(), 20, {}, {}};
  Descriptor<12> wideTarget{out.data(), out.data(), 0, {}, {}};
  for (int d = 0; d < 9; ++d) {
    wideSource.sizes[d] = wideTarget.sizes[d] = 1;
    wideSource.strides[d] = wideTarget.strides[d] = 60;
  }
  int64_t sizes[3] = {2, 3, 2}, sourceStrides[3] = {20, 5, 2},
          targetStrides[3] = {6, 2, 1};
  for (int d = 0; d < 3; ++d) {
    wideSource.sizes[9 + d] = wideTarget.sizes[9 + d] = sizes[d];
    wideSource.strides[9 + d] = sourceStrides[d];
    wideTarget.strides[9 + d] = targetStrides[d];
  }
  std::fill(out.begin(), out.end(), -1.0f);
  Unranked ws{12, &wideSource}, wt{12, &wideTarget};
  memrefCopy(sizeof(float), &ws, &wt);
  EXPECT_EQ(out, expected);
}

TEST(MemRefCopy, CopiesDenseRowsAndScalars) {
  std::vector<float> in{1, 2, 3, 4, 5, 6}, out(6, 0);
  Descriptor<2> source{in.data(), in.data(), 0, {2, 3}, {3, 1}};
  Descriptor<2> target{out.data(), out.data(), 0, {2, 3}, {3, 1}};
  Unranked s{2, &source}, t{2, &target};
  memrefCopy(sizeof(float), &s, &t);
  EXPECT_EQ(out, in);

  float x = 7, y = 0;
  struct {
    float *allocated, *aligned;
    int64_t offset;
  } a{&x, &x, 0}, b{&y, &y, 0};
  Unranked sa{0, &a}, sb{0, &b};
  memrefCopy(sizeof(float), &sa, &sb);
  EXPECT_EQ(y, 7);
}

TEST(Allocator, ReusesAFreedBlockForTheSameSizeClass) {
  // Sizes in one class (64-byte steps to 4 KiB, then quarters of powers of
  // two) get the block freed last; every byte of it is usable.
  for (auto [first, second] :
       std::vector<std::pair<uint64_t, uint64_t>>{{1, 64},
                                                  {65, 128},
                                                  {4033, 4096},
                                                  {4097, 5120},
                                                  {5121, 6144},
                                                  {7000, 7168},
                                                  {8193, 10240},
                                                  {1 << 20, (1 << 20) + 1}}) {
    void *block = _mlir_memref_to_llvm_alloc(first);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
    std::memset(block, 0xab, first);
    _mlir_memref_to_llvm_free(block);
    void *again = _mlir_memref_to_llvm_alloc(second);
    // The second size may fall in the next class only where the list says
    // so ((1 << 20) + 1 is a quarter more).
    if (second == (1 << 20) + 1)
      EXPECT_NE(again, block) << first << " then " << second;
    else
      EXPECT_EQ(again, block) << first << " then " << second;
    std::memset(again, 0xcd, second);
    _mlir_memref_to_llvm_free(again);
  }
}

TEST(Allocator, KeepsClassesAndAlignmentsApart) {
  // A block is never handed out for a larger size than its class, nor for
  // an alignment its header does not give.
  void *small = _mlir_memref_to_llvm_alloc(4096);
  _mlir_memref_to_llvm_free(small);
  void *larger = _mlir_memref_to_llvm_alloc(4097);
  EXPECT_NE(larger, small);
  void *aligned = _mlir_memref_to_llvm_aligned_alloc(4096, 100);
  ASSERT_NE(aligned, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 4096, 0u);
  EXPECT_NE(aligned, small);
  std::memset(larger, 1, 4097);
  std::memset(aligned, 2, 100);
  _mlir_memref_to_llvm_free(aligned);
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(4096, 120), aligned);
  EXPECT_EQ(_mlir_memref_to_llvm_alloc(4033), small); // 64-byte header
  _mlir_memref_to_llvm_free(small);
  _mlir_memref_to_llvm_free(aligned);
  _mlir_memref_to_llvm_free(larger);
  _mlir_memref_to_llvm_free(nullptr);
  // Beyond any class: null, as malloc would.
  EXPECT_EQ(_mlir_memref_to_llvm_alloc(uint64_t(1) << 63), nullptr);
}

TEST(Allocator, LiveBlocksNeverOverlap) {
  // Many live blocks of assorted sizes, freed in a shuffled order and
  // allocated again: every one keeps its own contents.
  std::vector<std::pair<unsigned char *, uint64_t>> blocks;
  for (int round = 0; round < 3; ++round) {
    for (uint64_t i = 0; i < 200; ++i) {
      uint64_t size = 1 + (i * 7919) % 20000;
      auto *b = static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(size));
      ASSERT_NE(b, nullptr);
      std::memset(b, int(i & 0xff), size);
      blocks.push_back({b, size});
    }
    for (uint64_t i = 0; i < blocks.size(); ++i) {
      auto [b, size] = blocks[i];
      unsigned char expected = b[0];
      for (uint64_t j = 0; j < size; ++j)
        ASSERT_EQ(b[j], expected) << "block " << i << " byte " << j;
    }
    for (uint64_t i = 0; i < blocks.size(); i += 2)
      _mlir_memref_to_llvm_free(blocks[i].first);
    for (uint64_t i = 1; i < blocks.size(); i += 2)
      _mlir_memref_to_llvm_free(blocks[i].first);
    blocks.clear();
  }
}

TEST(RunTimeChecks, TheFirstFailureOfARunIsKeptUntilTaken) {
  EXPECT_EQ(specrt::takeCheckFailure(), nullptr);
  specrt_check(true, "passed");
  EXPECT_EQ(specrt::takeCheckFailure(), nullptr);
  specrt_check(false, "first");
  specrt_check(false, "second");
  specrt_check(true, "passed");
  EXPECT_STREQ(specrt::takeCheckFailure(), "first");
  EXPECT_EQ(specrt::takeCheckFailure(), nullptr);
}

TEST(RuntimeAPI, RejectsMissingArgumentsWithAMessage) {
  specrt_model *model = nullptr;
  EXPECT_EQ(specrt_open(nullptr, nullptr, &model),
            SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(specrt_last_error(),
               "specrt_open needs a path and a model pointer");
  EXPECT_EQ(specrt_open("/nonexistent.spec", nullptr, &model),
            SPECRT_ERROR_IO);
  EXPECT_EQ(model, nullptr);
  specrt_open_options options;
  specrt_open_options_init(&options);
  options.threads = -1;
  EXPECT_EQ(specrt_open("/nonexistent.spec", &options, &model),
            SPECRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(specrt_last_error(),
               "threads must not be negative (0: all cores), got -1");
  EXPECT_STREQ(specrt_status_name(SPECRT_ERROR_CORRUPT), "corrupt artifact");
}
} // namespace

// What compiled code returns is checked before statistics are derived from
// it: a wrong length once printed 9.2e18 tokens per forward.
TEST(DecodeOutputCheck, RefusesWhatNoDecodeLoopCanReturn) {
  const int64_t prompt[] = {256, 10, 11};
  DecodeOutput good;
  good.sequence = {256, 10, 11, 12, 13};
  good.targetForwards = 2;
  good.acceptedHistogram = {0, 1};
  EXPECT_EQ(checkDecodeOutput(good, prompt, 3, 259, 512), "");

  DecodeOutput shorter = good;
  shorter.sequence.resize(3);
  EXPECT_EQ(checkDecodeOutput(shorter, prompt, 3, 259, 512),
            "a sequence of 3 tokens for a prompt of 3 and a context of 512");
  DecodeOutput longer = good;
  longer.sequence.resize(513, 1);
  EXPECT_NE(checkDecodeOutput(longer, prompt, 3, 259, 512), "");
  DecodeOutput otherPrompt = good;
  otherPrompt.sequence[1] = 9;
  EXPECT_EQ(checkDecodeOutput(otherPrompt, prompt, 3, 259, 512),
            "a sequence that does not start with the prompt");
  DecodeOutput outside = good;
  outside.sequence[4] = 259;
  EXPECT_EQ(checkDecodeOutput(outside, prompt, 3, 259, 512),
            "token 259 at position 4, outside the vocabulary");
  DecodeOutput negative = good;
  negative.acceptedHistogram[0] = -1;
  EXPECT_EQ(checkDecodeOutput(negative, prompt, 3, 259, 512),
            "a negative count of rounds");
  DecodeOutput rounds = good;
  rounds.acceptedHistogram = {3, 0};
  EXPECT_EQ(checkDecodeOutput(rounds, prompt, 3, 259, 512),
            "2 target forwards for 3 verify rounds");
}
