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

/// The contract report of the model file at `path`, with `metadata` for the
/// keys it lacks.
static specula::ModelContractReport
checkFile(const std::string &path,
          const std::map<std::string, std::string> &metadata) {
  // Regular files only: a device is not a model.
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return {"does not load",
            {"cannot read '" + path + "': " + buffer.getError().message()}};
  return specula::checkModelContract((*buffer)->getBuffer(), path, metadata);
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "spec-check-model: check ONNX models against Specula's model contract "
      "(docs/model-contract.md): the configuration in metadata_props and "
      "the inputs and outputs each spec_role needs\n");
  unsigned failures = 0, checked = 0;
  auto report = [&](StringRef name, const specula::ModelContractReport &report) {
    ++checked;
    if (report.problems.empty()) {
      outs() << name << ": " << report.summary << ": ok\n";
      return;
    }
    ++failures;
    errs() << name << ": " << report.summary << ": FAILS the contract\n";
    for (const std::string &problem : report.problems)
      errs() << "  " << name << ": " << problem << "\n";
  };
  for (const std::string &given : modelPaths) {
    // An export folder stands for its model.onnx, with config.json and
    // tokenizer.json supplying the metadata (spec_role: target), and for
    // the MTP modules its config.json declares.
    std::string path = specula::resolveModelPath(given);
    std::string error;
    auto folder = specula::readExportFolderMetadata(path, "target", error);
    report(sys::path::filename(given),
           failed(folder) ? specula::ModelContractReport{"does not load", {error}}
                          : checkFile(path, *folder));
    auto mtp = specula::readExportFolderMTPModules(path, error);
    if (failed(mtp)) {
      report(sys::path::filename(given), {"its MTP modules", {error}});
      continue;
    }
    for (const specula::ExportFolderModel &module : mtp->modules)
      report((sys::path::filename(given) + "/" +
              sys::path::filename(module.path)).str(),
             checkFile(module.path, module.metadata));
  }
  outs() << checked - failures << " of " << checked
         << " models follow the contract\n";
  return failures ? 1 : 0;
}
