//===- spec-run-graph.cpp - run imported ONNX graphs on the CPU -----------===//
//
// Imports an ONNX model, compiles it for the CPU and runs it:
//
//   spec-run-graph model.onnx -i input_0.pb ... [--output-dir DIR]
//                  [--expect output_0.pb ...] [--rtol R] [--atol A]
//   spec-run-graph --conformance /usr/share/libonnx-testdata/data/node
//
// The second form runs every ONNX node conformance test whose operators are
// all supported, each in a child process (a crash fails one test, not the
// run), and prints passed / failed / unsupported counts.
//
//===----------------------------------------------------------------------===//

#include "specula/GraphExecutor.h"
#include "specula/InitAll.h"
#include "specula/ONNXImport.h"
#include "specula/TensorIO.h"

#include "passes/Decoder/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace specula;
namespace cl = llvm::cl;

/// Exit status of a conformance child whose model the importer refused.
static constexpr int kRefused = 2;

static cl::OptionCategory category("spec-run-graph options");
static cl::opt<std::string> modelPath(
    cl::Positional, cl::desc("<model.onnx | module.mlir>"), cl::cat(category));
static cl::opt<std::string> functionName(
    "function",
    cl::desc("With an .mlir module: the function to run (spec step and cache "
             "ops are lowered first, with spec-lower-steps)"),
    cl::init("main"), cl::cat(category));
static cl::list<std::string> inputPaths("i", cl::desc("Input tensor (.pb)"),
                                        cl::value_desc("file"), cl::cat(category));
static cl::list<std::string> expectPaths(
    "expect", cl::desc("Expected output tensor (.pb), in output order"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> outputDir(
    "output-dir", cl::desc("Write output_N.pb files here"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<double> relativeTolerance("rtol", cl::desc("Relative tolerance"),
                            cl::init(1e-3), cl::cat(category));
static cl::opt<double> absoluteTolerance("atol", cl::desc("Absolute tolerance"),
                            cl::init(1e-7), cl::cat(category));
static cl::opt<std::string> conformanceDir(
    "conformance",
    cl::desc("Run the ONNX node tests in this directory (one test_* folder "
             "each, with model.onnx and test_data_set_*)"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> filter(
    "filter", cl::desc("With --conformance: only tests matching this regex"),
    cl::value_desc("regex"), cl::cat(category));
static cl::opt<int64_t> gpuScheduleThreads(
    "gpu-schedule-threads",
    cl::desc("Compile with the loops of the CUDA schedule (spec-gpu-schedule "
             "with this many threads per block), run on the CPU, instead of "
             "the CPU's own (0: off)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> gpuSplitMinBytes(
    "gpu-split-min-bytes",
    cl::desc("With --gpu-schedule-threads: split the reductions of "
             "contractions whose weights have at least this many bytes "
             "among threads (spec-gpu-contractions{split-min-bytes})"),
    cl::init(kDefaultGPUSplitMinBytes), cl::cat(category));
static cl::opt<std::string> weightPrecision(
    "weights",
    cl::desc("Store the weight matrices as f16, bf16 or int8, widened to "
             "f32 in the contractions, as specc --weights does (default: "
             "f32)"),
    cl::value_desc("f32|f16|bf16|int8"), cl::init("f32"), cl::cat(category));
static cl::opt<bool> runsFromStdin(
    "runs-from-stdin",
    cl::desc("Compile once, then run once for each line of standard input "
             "('-i FILE'... ['--output-dir DIR']); each run's report ends "
             "with a line 'done' or 'failed'"),
    cl::cat(category));
static cl::opt<bool> verbose("v", cl::desc("Print every test's outcome"), cl::cat(category));
static cl::opt<bool> listOps("list-supported-ops",
                             cl::desc("Print the supported ONNX operators"), cl::cat(category));

/// Compares one output; on mismatch returns a description.
static std::optional<std::string> compare(const HostTensor &actual,
                                          const HostTensor &expected,
                                          double rtol, double atol) {
  if (actual.shape != expected.shape) {
    std::string a, e;
    for (int64_t s : actual.shape)
      a += std::to_string(s) + " ";
    for (int64_t s : expected.shape)
      e += std::to_string(s) + " ";
    return "shape [" + a + "] differs from the expected [" + e + "]";
  }
  if (!sameElementStorage(actual.dataType, expected.dataType))
    return "data type " + std::to_string(actual.dataType) +
           " differs from the expected " + std::to_string(expected.dataType);
  int64_t count = actual.numElements();
  auto check = [&](auto tag) -> std::optional<std::string> {
    using T = decltype(tag);
    const T *a = reinterpret_cast<const T *>(actual.data.data());
    const T *e = reinterpret_cast<const T *>(expected.data.data());
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a[i]) && std::isnan(e[i]))
          continue;
        if (a[i] == e[i] ||
            std::fabs(double(a[i]) - double(e[i])) <=
                atol + rtol * std::fabs(double(e[i])))
          continue;
      } else if (a[i] == e[i]) {
        continue;
      }
      return "element " + std::to_string(i) + " is " + std::to_string(a[i]) +
             ", expected " + std::to_string(e[i]);
    }
    return std::nullopt;
  };
  switch (elementByteWidth(actual.dataType)) {
  case 1:
    return check(int8_t());
  case 2:
    return std::memcmp(actual.data.data(), expected.data.data(),
                       actual.data.size()) == 0
               ? std::nullopt
               : std::optional<std::string>("16-bit data differs");
  case 4:
    return actual.dataType == 1 ? check(float()) : check(int32_t());
  default:
    return actual.dataType == 11 ? check(double()) : check(int64_t());
  }
}

/// spec-graph-to-llvm's options from the flags.
static const GraphToLLVMOptions &loweringOptions() {
  static GraphToLLVMOptions lowering;
  lowering.gpuScheduleThreads = gpuScheduleThreads;
  lowering.gpuSplitMinBytes = gpuSplitMinBytes;
  lowering.weights = weightPrecision;
  return lowering;
}

/// Imports `path` and compiles its graph; diagnostics go to `diagnostics`.
/// `refused` tells an import the importer refused (a clear "not supported")
/// from a failure after it.
static FailureOr<std::unique_ptr<GraphExecutor>>
importAndCompile(MLIRContext &context, StringRef path,
                 std::string &diagnostics, bool *refused = nullptr) {
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    // The messages name the node, operator and opset; add the file.
    os << path << ": "
       << (diag.getSeverity() == DiagnosticSeverity::Error     ? "error: "
           : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning: "
                                                               : "note: ")
       << diag << "\n";
    for (Diagnostic &note : diag.getNotes())
      os << "  note: " << note << "\n";
    return success();
  });
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer) {
    diagnostics = "cannot read '" + path.str() + "'";
    return failure();
  }
  if (path.ends_with(".mlir")) {
    // A module from specc or spec-opt: lower the spec ops, then compile.
    OwningOpRef<ModuleOp> parsed =
        parseSourceString<ModuleOp>((*buffer)->getBuffer(), &context, path);
    if (!parsed)
      return failure();
    PassManager pm(&context);
    pm.addPass(createSpecLowerSteps());
    if (failed(pm.run(*parsed)))
      return failure();
    return GraphExecutor::compile(*parsed, functionName, loweringOptions());
  }
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(&context, path, 0, 0));
  if (failed(importONNX(*module, (*buffer)->getBuffer(), path))) {
    if (refused)
      *refused = !StringRef(diagnostics).contains("importer bug");
    return failure();
  }
  return GraphExecutor::compile(*module, "main", loweringOptions());
}

/// Runs one data set; returns an empty string on success, else why not.
static std::string runDataSet(GraphExecutor &executor, StringRef dir,
                              double rtol, double atol) {
  std::vector<HostTensor> inputs, expected;
  std::string error;
  for (int i = 0;; ++i) {
    std::string path = (dir + "/input_" + std::to_string(i) + ".pb").str();
    if (!llvm::sys::fs::exists(path))
      break;
    FailureOr<HostTensor> tensor = readTensorProto(path, error);
    if (failed(tensor))
      return error;
    inputs.push_back(std::move(*tensor));
  }
  for (int i = 0;; ++i) {
    std::string path = (dir + "/output_" + std::to_string(i) + ".pb").str();
    if (!llvm::sys::fs::exists(path))
      break;
    FailureOr<HostTensor> tensor = readTensorProto(path, error);
    if (failed(tensor))
      return error;
    expected.push_back(std::move(*tensor));
  }
  FailureOr<std::vector<HostTensor>> outputs = executor.run(inputs, error);
  if (failed(outputs))
    return error;
  if (outputs->size() != expected.size())
    return "produced " + std::to_string(outputs->size()) + " outputs, expected " +
           std::to_string(expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    if (std::optional<std::string> mismatch =
            compare((*outputs)[i], expected[i], rtol, atol))
      return "output " + std::to_string(i) + ": " + *mismatch;
  return "";
}

/// The node tests in --conformance's directory (test_*/model.onnx), sorted.
static std::vector<std::string> listConformanceTests() {
  std::error_code ec;
  std::vector<std::string> tests;
  for (llvm::sys::fs::directory_iterator it(conformanceDir, ec), end;
       it != end && !ec; it.increment(ec)) {
    std::string name = llvm::sys::path::filename(it->path()).str();
    if (StringRef(name).starts_with("test_") &&
        llvm::sys::fs::exists(it->path() + "/model.onnx"))
      tests.push_back(name);
  }
  if (ec)
    tests.clear();
  llvm::sort(tests);
  return tests;
}

/// In the child: imports, compiles and runs test `dir`'s model on each of
/// its data sets; exits 0, kRefused or 1 with the message written to `fd`.
[[noreturn]] static void runTestInChild(MLIRContext &context,
                                        const std::string &dir, int fd) {
  std::string message;
  bool refused = false;
  FailureOr<std::unique_ptr<GraphExecutor>> executor =
      importAndCompile(context, dir + "/model.onnx", message, &refused);
  if (succeeded(executor)) {
    for (int set = 0;; ++set) {
      std::string setDir = dir + "/test_data_set_" + std::to_string(set);
      if (!llvm::sys::fs::exists(setDir))
        break;
      message = runDataSet(**executor, setDir, relativeTolerance, absoluteTolerance);
      if (!message.empty()) {
        message = "test_data_set_" + std::to_string(set) + ": " + message;
        break;
      }
    }
  } else if (message.empty()) {
    message = "compilation failed";
  }
  if (write(fd, message.data(), message.size()) < 0)
    _exit(3);
  _exit(message.empty() ? 0 : refused ? kRefused : 1);
}

/// Runs test `dir` in a child, so that a crash fails only this test.
/// Returns the child's exit status (-1 if it could not start) and message.
static std::pair<int, std::string> runTest(MLIRContext &context,
                                           const std::string &dir) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0)
    return {-1, "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(pipeFds[0]);
    runTestInChild(context, dir, pipeFds[1]);
  }
  close(pipeFds[1]);
  std::string message;
  char chunk[4096];
  ssize_t n;
  while ((n = read(pipeFds[0], chunk, sizeof(chunk))) > 0)
    message.append(chunk, n);
  close(pipeFds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return {1, "crashed with signal " + std::to_string(WTERMSIG(status))};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 1, message};
}

/// What a conformance run counted.
struct ConformanceCounts {
  int passed = 0, failed = 0, unsupported = 0, refused = 0;
  std::map<std::string, int> unsupportedOps;
};

/// Whether test `dir`'s model uses an operator the importer lacks (counted
/// in `counts`).
static bool usesUnsupportedOperators(const std::string &dir,
                                     ConformanceCounts &counts) {
  std::string modelFile = dir + "/model.onnx";
  auto buffer = llvm::MemoryBuffer::getFile(modelFile, /*IsText=*/false);
  std::string error;
  FailureOr<std::vector<std::string>> missing =
      buffer ? findUnsupportedOperators((*buffer)->getBuffer(), modelFile, error)
             : FailureOr<std::vector<std::string>>(failure());
  if (succeeded(missing) && missing->empty())
    return false;
  ++counts.unsupported;
  if (succeeded(missing))
    for (const std::string &op : *missing)
      ++counts.unsupportedOps[op];
  else
    ++counts.unsupportedOps["(model does not load)"];
  return true;
}

static void printConformanceSummary(const ConformanceCounts &counts) {
  llvm::outs() << "ONNX node conformance: " << counts.passed << " passed, "
               << counts.failed << " failed, "
               << counts.unsupported + counts.refused << " unsupported ("
               << counts.unsupported << " with operators not supported, "
               << counts.refused
               << " refused by a supported operator's importer: types or "
                  "attributes not supported, see -v)\n";
  llvm::outs() << "operators not supported (tests using them):";
  for (const auto &[op, count] : counts.unsupportedOps)
    llvm::outs() << " " << op << " (" << count << ")";
  llvm::outs() << "\n";
}

static int runConformance(MLIRContext &context) {
  std::vector<std::string> tests = listConformanceTests();
  if (tests.empty()) {
    llvm::errs() << "error: no ONNX node tests (test_*/model.onnx) in '"
                 << conformanceDir << "'\n";
    return 1;
  }
  llvm::Regex regex(filter);
  ConformanceCounts counts;
  for (const std::string &test : tests) {
    if (!filter.empty() && !regex.match(test))
      continue;
    std::string dir = conformanceDir + "/" + test;
    if (usesUnsupportedOperators(dir, counts)) {
      if (verbose)
        llvm::outs() << "UNSUPPORTED " << test << "\n";
      continue;
    }
    auto [status, message] = runTest(context, dir);
    if (status < 0) {
      llvm::errs() << "error: " << message << "\n";
      return 1;
    }
    if (status == 0) {
      ++counts.passed;
      if (verbose)
        llvm::outs() << "PASS " << test << "\n";
    } else if (status == kRefused) {
      // The importer refused a feature with a clear error: unsupported.
      ++counts.refused;
      if (verbose)
        llvm::outs() << "REFUSED " << test << ": "
                     << StringRef(message).split('\n').first << "\n";
    } else {
      ++counts.failed;
      llvm::outs() << "FAIL " << test << ": " << message << "\n";
    }
  }
  printConformanceSummary(counts);
  return counts.failed == 0 ? 0 : 1;
}

/// Runs the compiled graph once on the tensors in `inputs`, prints each
/// output's shape (and whether it matches `expects`), and writes the outputs
/// into `outputDirectory` if one is given. Returns the exit status.
static int runOnce(GraphExecutor &executor, ArrayRef<std::string> inputs,
                   ArrayRef<std::string> expects, StringRef outputDirectory) {
  std::vector<HostTensor> tensors;
  std::string error;
  for (const std::string &path : inputs) {
    FailureOr<HostTensor> tensor = readTensorProto(path, error);
    if (failed(tensor)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
    tensors.push_back(std::move(*tensor));
  }
  FailureOr<std::vector<HostTensor>> outputs = executor.run(tensors, error);
  if (failed(outputs)) {
    llvm::errs() << "error: " << modelPath << ": " << error << "\n";
    return 1;
  }
  int status = 0;
  for (auto [i, output] : llvm::enumerate(*outputs)) {
    llvm::outs() << "output " << i << ": shape [";
    llvm::interleaveComma(output.shape, llvm::outs());
    llvm::outs() << "]";
    if (i < expects.size()) {
      FailureOr<HostTensor> expected = readTensorProto(expects[i], error);
      if (failed(expected)) {
        llvm::errs() << "error: " << error << "\n";
        return 1;
      }
      std::optional<std::string> mismatch =
          compare(output, *expected, relativeTolerance, absoluteTolerance);
      llvm::outs() << (mismatch ? " MISMATCH: " + *mismatch : " matches");
      if (mismatch)
        status = 1;
    }
    llvm::outs() << "\n";
    if (!outputDirectory.empty()) {
      std::string path =
          outputDirectory.str() + "/output_" + std::to_string(i) + ".pb";
      if (failed(writeTensorProto(output, "output_" + std::to_string(i), path,
                                  error))) {
        llvm::errs() << "error: " << error << "\n";
        return 1;
      }
    }
  }
  return status;
}

/// --runs-from-stdin: one run a line, `-i FILE`... `[--output-dir DIR]`,
/// answered by the run's output and a line `done` (or `failed`), so that a
/// caller that feeds one run's outputs to the next compiles the graph once.
static int runFromStdin(GraphExecutor &executor) {
  int status = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    SmallVector<StringRef> words;
    StringRef(line).split(words, ' ', -1, /*KeepEmpty=*/false);
    std::vector<std::string> inputs;
    std::string directory;
    std::optional<std::string> bad;
    for (size_t w = 0; w < words.size() && !bad; w += 2) {
      if (w + 1 == words.size() ||
          (words[w] != "-i" && words[w] != "--output-dir"))
        bad = "expected '-i FILE' or '--output-dir DIR', got '" +
              words[w].str() + "'";
      else if (words[w] == "-i")
        inputs.push_back(words[w + 1].str());
      else
        directory = words[w + 1].str();
    }
    int runStatus = 1;
    if (bad)
      llvm::errs() << "error: standard input: " << *bad << "\n";
    else
      runStatus = runOnce(executor, inputs, {}, directory);
    status |= runStatus;
    llvm::outs() << (runStatus == 0 ? "done" : "failed") << "\n";
    llvm::outs().flush();
  }
  return status;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Run imported ONNX graphs on the CPU (compiled with "
      "spec-graph-to-llvm)\n");
  DialectRegistry registry;
  registerSpeculaDialects(registry);
  registerAllDialects(registry);
  registerONNXImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  if (listOps) {
    for (const std::string &line : describeSupportedOperators())
      llvm::outs() << line << "\n";
    return 0;
  }
  if (!conformanceDir.empty())
    return runConformance(context);
  if (modelPath.empty()) {
    llvm::errs() << "error: no model given (see --help)\n";
    return 1;
  }

  if (runsFromStdin && (!inputPaths.empty() || !expectPaths.empty() ||
                        !outputDir.empty())) {
    llvm::errs() << "error: --runs-from-stdin reads the inputs and output "
                    "directory of each run from standard input; -i, --expect "
                    "and --output-dir are not taken with it\n";
    return 1;
  }
  std::string diagnostics;
  FailureOr<std::unique_ptr<GraphExecutor>> executor =
      importAndCompile(context, modelPath, diagnostics);
  if (failed(executor)) {
    llvm::errs() << diagnostics;
    return 1;
  }
  if (runsFromStdin)
    return runFromStdin(**executor);
  return runOnce(**executor, inputPaths, expectPaths, outputDir);
}
