//===- spec-check-model.cpp - check models against the model contract -----===//
//
//   spec-check-model models/*.onnx
//
// One line per model, every violation named, a count at the end; exits 1 if
// any model breaks the contract. specc applies the same checker to the
// models it compiles.
//
//===----------------------------------------------------------------------===//

#include "specula/ONNXImport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("spec-check-model options");
static cl::list<std::string> modelPaths(cl::Positional, cl::OneOrMore,
                                        cl::desc("<model.onnx or export folder>..."),
                                        cl::cat(category));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "spec-check-model: check ONNX models against Specula's model contract "
      "(README \"Model contract\"): the configuration in metadata_props and "
      "the inputs and outputs each spec_role needs\n");
  unsigned failures = 0;
  for (const std::string &given : modelPaths) {
    // An export folder stands for its model.onnx, with config.json and
    // tokenizer.json supplying the metadata (spec_role: target).
    std::string path = specula::resolveModelPath(given);
    StringRef name = sys::path::filename(given);
    specula::ModelContractReport report;
    std::string error;
    auto folder = specula::readExportFolderMetadata(path, "target", error);
    // Regular files only: a device is not a model.
    auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false);
    if (!buffer)
      report = {"does not load",
                {"cannot read '" + path + "': " + buffer.getError().message()}};
    else if (failed(folder))
      report = {"does not load", {error}};
    else
      report = specula::checkModelContract((*buffer)->getBuffer(), path, *folder);
    if (report.problems.empty()) {
      outs() << name << ": " << report.summary << ": ok\n";
      continue;
    }
    ++failures;
    errs() << name << ": " << report.summary << ": FAILS the contract\n";
    for (const std::string &problem : report.problems)
      errs() << "  " << name << ": " << problem << "\n";
  }
  outs() << modelPaths.size() - failures << " of " << modelPaths.size()
         << " models follow the contract\n";
  return failures ? 1 : 0;
}
