//===- ONNXMutatorTest.cpp - mutants of the ONNX fuzz corpus import -------===//
//
// A bounded, deterministic run of the ONNX fuzzer's structural mutations in
// every build: each model of the seed corpus, mutated 1-3 times with fixed
// seeds, is imported or refused with an error, never crashing and never
// producing IR that does not verify. The fuzzer (.ci/sanitize) searches the
// same space at random and under the sanitizers.
//
//===----------------------------------------------------------------------===//

#include "ONNXMutator.h"
#include "specula/InitAll.h"
#include "specula/ONNXImport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>

using namespace specula::fuzz;

namespace {
/// Mutants per corpus model: SPECULA_MUTANTS_PER_SEED, for a longer search.
int getMutantsPerSeed() {
  const char *count = std::getenv("SPECULA_MUTANTS_PER_SEED");
  return count ? std::max(1, std::atoi(count)) : 2000;
}

/// The corpus's models (files that parse as binary or textual ONNX), sorted.
std::vector<std::pair<std::string, onnx::ModelProto>> loadCorpus() {
  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(SPECULA_FUZZ_CORPUS, ec), end;
       it != end && !ec; it.increment(ec))
    paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::pair<std::string, onnx::ModelProto>> models;
  for (const std::string &path : paths) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    onnx::ModelProto model;
    if (buffer && parseModel((*buffer)->getBuffer().str(), model))
      models.emplace_back(path, std::move(model));
  }
  return models;
}

/// Imports `bytes`; the importer's "does not verify" verdict, if it gave one.
std::string importAndReportBug(mlir::MLIRContext &context,
                               const std::string &bytes, bool &imported) {
  std::string bug;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    std::string message = d.str();
    if (message.rfind("the imported IR does not verify", 0) == 0)
      bug = message;
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  specula::ONNXImportOptions options;
  options.maxInlineElements = 16;
  imported = succeeded(
      specula::importONNX(*module, bytes, "mutant.onnx", options));
  return bug;
}

TEST(ONNXMutatorTest, CorpusMutantsImportOrAreRefused) {
  mlir::DialectRegistry registry;
  specula::registerONNXImportDialects(registry);
  mlir::MLIRContext context(registry,
                            mlir::MLIRContext::Threading::DISABLED);
  auto corpus = loadCorpus();
  ASSERT_GE(corpus.size(), 20u) << "the seed corpus did not load";
  std::array<int, kNumMutationKinds> applied{};
  // Of the mutants of the seeds that import (most of the corpus is inputs
  // the importer refuses), how many still import.
  int mutantsOfGoodSeeds = 0, imported = 0;
  for (auto [index, entry] : llvm::enumerate(corpus)) {
    std::string seedBytes;
    ASSERT_TRUE(entry.second.SerializeToString(&seedBytes));
    bool seedImports = false;
    (void)importAndReportBug(context, seedBytes, seedImports);
    for (int i = 0, e = getMutantsPerSeed(); i < e; ++i) {
      uint64_t seed = index * 1000000 + i;
      // A crash ends the process: SPECULA_MUTANT_TRACE names each mutant
      // first (ONNXMutatorTool-style replays use the same seed).
      if (std::getenv("SPECULA_MUTANT_TRACE"))
        std::fprintf(stderr, "%s seed %llu\n", entry.first.c_str(),
                     static_cast<unsigned long long>(seed));
      std::mt19937_64 rng(seed);
      onnx::ModelProto mutant = entry.second;
      for (int n = 0, count = 1 + rng() % 3; n < count; ++n)
        if (std::optional<MutationKind> kind = mutateModel(mutant, rng))
          ++applied[static_cast<int>(*kind)];
      std::string bytes;
      ASSERT_TRUE(mutant.SerializeToString(&bytes));
      bool ok = false;
      std::string bug = importAndReportBug(context, bytes, ok);
      EXPECT_TRUE(bug.empty()) << entry.first << ", mutant " << i << ": "
                               << bug;
      mutantsOfGoodSeeds += seedImports;
      imported += seedImports && ok;
    }
  }
  std::printf("%d of %d mutants of the importable seeds imported\n", imported,
              mutantsOfGoodSeeds);
  // Mutants that still import reach the op handlers with an edited value.
  EXPECT_GT(imported * 20, mutantsOfGoodSeeds);
  for (int kind = 0; kind < kNumMutationKinds; ++kind)
    EXPECT_GT(applied[kind], 0)
        << getMutationKindName(static_cast<MutationKind>(kind))
        << " mutations were never applied";
}

TEST(ONNXMutatorTest, SameSeedSameMutant) {
  auto corpus = loadCorpus();
  ASSERT_FALSE(corpus.empty());
  for (uint64_t seed : {1, 2, 3}) {
    std::string first, second;
    for (std::string *out : {&first, &second}) {
      onnx::ModelProto mutant = corpus.front().second;
      std::mt19937_64 rng(seed);
      ASSERT_TRUE(mutateModel(mutant, rng).has_value());
      ASSERT_TRUE(mutant.SerializeToString(out));
    }
    EXPECT_EQ(first, second);
  }
}

TEST(ONNXMutatorTest, EachKindChangesTheModel) {
  onnx::ModelProto model;
  ASSERT_TRUE(parseModel(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[3, 2] y) {
  s = Constant<value = int64[2] {3, 2}>()
  t = Transpose<perm = [1, 0]>(x)
  y = Reshape(t, s)
})",
                         model));
  std::string original;
  ASSERT_TRUE(model.SerializeToString(&original));
  for (int kind = 0; kind < kNumMutationKinds; ++kind) {
    // A mutation may leave a value as it was (an edge to the same name):
    // some seed changes it.
    bool changed = false;
    for (uint64_t seed = 0; seed < 16 && !changed; ++seed) {
      onnx::ModelProto mutant = model;
      std::mt19937_64 rng(seed);
      ASSERT_TRUE(mutateModel(mutant, static_cast<MutationKind>(kind), rng));
      std::string bytes;
      ASSERT_TRUE(mutant.SerializeToString(&bytes));
      changed = bytes != original;
    }
    EXPECT_TRUE(changed) << getMutationKindName(static_cast<MutationKind>(kind));
  }
}
} // namespace
