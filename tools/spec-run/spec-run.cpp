//===- spec-run.cpp - run a compiled speculative decoder on a prompt ------===//
//
//   spec-run decoder.mlir --prompt "def main(" [--max-new-tokens N]
//            [--seed S] [--no-speculation] [--compare] [--json]
//
// Takes what `specc` writes (models plus a spec.decoder, lowered to its
// decode loops), compiles it for the CPU (spec-lower-steps,
// spec-graph-to-llvm, JIT), tokenizes the prompt with the models' byte-level
// tokenizer, generates, and prints the text and the statistics. This is the
// JIT path; the ahead-of-time artifact and the specrt_* runtime replace it.
//
//===----------------------------------------------------------------------===//

#include "dialects/spec/SpecOps.h"
#include "passes/Passes.h"
#include "specula/GraphExecutor.h"
#include "specula/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>
#include <cstring>

using namespace mlir;
using namespace specula;
namespace cl = llvm::cl;

static cl::OptionCategory category("spec-run options");
static cl::opt<std::string> modulePath(cl::Positional, cl::Required,
                                       cl::desc("<decoder.mlir>"),
                                       cl::cat(category));
static cl::opt<std::string> prompt("prompt", cl::desc("The prompt text"),
                                   cl::init(""), cl::cat(category));
static cl::opt<int64_t> maxNewTokens("max-new-tokens",
                                     cl::desc("Tokens to generate at most"),
                                     cl::init(128), cl::cat(category));
static cl::opt<int64_t> seed("seed",
                             cl::desc("Key of the sampler (sampling decoders)"),
                             cl::init(0), cl::cat(category));
static cl::opt<bool> noSpeculation(
    "no-speculation",
    cl::desc("Run the target alone, with the same kernels"),
    cl::cat(category));
static cl::opt<bool> compare(
    "compare",
    cl::desc("Run with and without speculation and report the speedup"),
    cl::cat(category));
static cl::opt<bool> json("json", cl::desc("Print JSON"), cl::cat(category));
static cl::opt<std::string> decoderName(
    "decoder", cl::desc("The spec.decoder to run"), cl::init("decoder"),
    cl::cat(category));

namespace {
struct Run {
  std::vector<int64_t> tokens; // generated, without the prompt
  int64_t targetForwards = 0;
  double seconds = 0;
};

struct Tokenizer {
  int64_t vocab = 0, bos = -1, eos = -1;
};

/// Parses and compiles `function` of the module.
FailureOr<std::unique_ptr<GraphExecutor>>
compileFunction(MLIRContext &context, StringRef source, StringRef function) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, &context, modulePath);
  if (!module)
    return failure();
  if (!module->lookupSymbol<func::FuncOp>(function))
    return module->emitError()
           << "no function @" << function
           << "; compile the models with specc (its decode loops are "
              "@<decoder>_generate and @<decoder>_target_only)";
  PassManager pm(&context);
  pm.addPass(createSpecLowerSteps());
  if (failed(pm.run(*module)))
    return failure();
  return GraphExecutor::compile(*module, function);
}

FailureOr<Run> generate(GraphExecutor &executor, ArrayRef<int64_t> promptIds,
                        const Tokenizer &tokenizer) {
  std::string error;
  auto start = std::chrono::steady_clock::now();
  FailureOr<std::vector<HostTensor>> outputs = executor.run(
      {makeInt64Tensor({static_cast<int64_t>(promptIds.size())}, promptIds),
       makeInt64Tensor({}, {maxNewTokens.getValue()}),
       makeInt64Tensor({}, {seed.getValue()})},
      error);
  auto end = std::chrono::steady_clock::now();
  if (failed(outputs)) {
    llvm::errs() << "error: " << error << "\n";
    return failure();
  }
  Run run;
  run.seconds = std::chrono::duration<double>(end - start).count();
  int64_t length = int64Value((*outputs)[1]);
  run.targetForwards = int64Value((*outputs)[2]);
  const auto *seq =
      reinterpret_cast<const int64_t *>((*outputs)[0].data.data());
  for (int64_t i = promptIds.size(); i < length; ++i) {
    run.tokens.push_back(seq[i]);
    if (seq[i] == tokenizer.eos)
      break;
  }
  return run;
}

std::string detokenize(ArrayRef<int64_t> tokens) {
  std::string text;
  for (int64_t token : tokens)
    if (token >= 0 && token < 256)
      text.push_back(static_cast<char>(token));
  return text;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "spec-run: generate text with a compiled speculative "
                  "decoder\n");
  auto buffer = llvm::MemoryBuffer::getFile(modulePath);
  if (!buffer) {
    llvm::errs() << "error: cannot read '" << modulePath
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  registerSpeculaDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  // The tokenizer and the proposer come from the composition.
  Tokenizer tokenizer;
  int64_t proposals = 0;
  {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>((*buffer)->getBuffer(), &context, modulePath);
    if (!module)
      return 1;
    auto decoder = module->lookupSymbol<spec::DecoderOp>(decoderName);
    if (!decoder) {
      llvm::errs() << "error: " << modulePath << " has no spec.decoder @"
                   << decoderName << "\n";
      return 1;
    }
    proposals = decoder.getNumProposals();
    auto target = module->lookupSymbol<func::FuncOp>(decoder.getTarget());
    auto config = target->getAttrOfType<spec::ModelConfigAttr>(
        spec::SpecDialect::kConfigAttrName);
    if (!config || config.getVocabSize() < 256) {
      llvm::errs() << "error: the target has no byte-level vocabulary "
                      "(spec.config with vocab_size >= 256)\n";
      return 1;
    }
    tokenizer.vocab = config.getVocabSize();
    tokenizer.bos = config.getBosTokenId().value_or(-1);
    tokenizer.eos = config.getEosTokenId().value_or(-1);
  }
  std::vector<int64_t> promptIds;
  if (tokenizer.bos >= 0)
    promptIds.push_back(tokenizer.bos);
  for (unsigned char c : prompt.getValue())
    promptIds.push_back(c);
  if (promptIds.empty()) {
    llvm::errs() << "error: the prompt is empty and the model has no BOS\n";
    return 1;
  }

  auto runFunction = [&](StringRef suffix) -> FailureOr<Run> {
    FailureOr<std::unique_ptr<GraphExecutor>> executor = compileFunction(
        context, (*buffer)->getBuffer(), (decoderName + suffix).str());
    if (failed(executor))
      return failure();
    return generate(**executor, promptIds, tokenizer);
  };
  std::optional<Run> speculative, plain;
  if (!noSpeculation || compare) {
    FailureOr<Run> run = runFunction("_generate");
    if (failed(run))
      return 1;
    speculative = *run;
  }
  if (noSpeculation || compare) {
    FailureOr<Run> run = runFunction("_target_only");
    if (failed(run))
      return 1;
    plain = *run;
  }

  auto stats = [&](const Run &run, bool speculation) {
    double perForward = double(run.tokens.size()) / run.targetForwards;
    llvm::json::Object o{
        {"text", detokenize(run.tokens)},
        {"new_tokens", static_cast<int64_t>(run.tokens.size())},
        {"target_forwards", run.targetForwards},
        {"tokens_per_target_forward", perForward},
        {"seconds", run.seconds},
        {"tokens_per_second", run.tokens.size() / run.seconds}};
    if (speculation && proposals > 0)
      o["acceptance_rate"] = (perForward - 1.0) / proposals;
    return o;
  };
  if (json) {
    llvm::json::Object out;
    if (speculative)
      out["speculative"] = stats(*speculative, true);
    if (plain)
      out["no_speculation"] = stats(*plain, false);
    if (speculative && plain) {
      out["identical"] = speculative->tokens == plain->tokens;
      out["speedup"] = plain->seconds / speculative->seconds;
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
                 << "\n";
    return 0;
  }
  const Run &shown = speculative ? *speculative : *plain;
  llvm::outs() << prompt << detokenize(shown.tokens) << "\n\n";
  auto report = [&](StringRef name, const Run &run, bool speculation) {
    double perForward = double(run.tokens.size()) / run.targetForwards;
    llvm::outs() << llvm::formatv(
        "{0}: {1} tokens in {2} target forwards ({3:F2} per forward",
        name, run.tokens.size(), run.targetForwards, perForward);
    if (speculation && proposals > 0)
      llvm::outs() << llvm::formatv(", acceptance rate {0:F2}",
                                    (perForward - 1.0) / proposals);
    llvm::outs() << llvm::formatv("), {0:F3} s, {1:F0} tokens/s\n",
                                  run.seconds, run.tokens.size() / run.seconds);
  };
  if (speculative)
    report("speculative", *speculative, true);
  if (plain)
    report("no speculation", *plain, false);
  if (speculative && plain)
    llvm::outs() << llvm::formatv(
        "speedup {0:F2}x; outputs {1}\n", plain->seconds / speculative->seconds,
        speculative->tokens == plain->tokens ? "identical" : "differ");
  return 0;
}
