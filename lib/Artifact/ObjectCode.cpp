//===- ObjectCode.cpp - the decoder's object code and shared object -------===//
//
// LLVM's optimization and code generation dominate a decoder's compile
// time after the MLIR pipeline, and a decoder is a few large functions (one
// per model) and small ones, which call each other but nothing large is
// inlined (the models' functions are public and big): the public functions
// are spread over parts, each with a copy of the local constants and
// helpers, and each part is optimized and compiled on its own thread in its
// own LLVMContext. A function computes what it would in one module (its
// registers may be allocated differently).
//
//===----------------------------------------------------------------------===//

#include "ObjectCode.h"
#include "lib/HostCode/Optimize.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace mlir;
using namespace specula;

FailureOr<std::unique_ptr<llvm::TargetMachine>>
specula::createHostTargetMachine(ModuleOp module, StringRef cpu) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return module.emitError()
           << "cannot describe this host for code generation: "
           << llvm::toString(builder.takeError());
  if (cpu != "native") {
    std::string error;
    const llvm::Target *target =
        llvm::TargetRegistry::lookupTarget(builder->getTargetTriple(), error);
    // A generic subtarget knows the CPU table; one made for an unknown CPU
    // would print LLVM's own warning.
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target ? target->createMCSubtargetInfo(builder->getTargetTriple(),
                                               "generic", "")
               : nullptr);
    if (!subtarget || !subtarget->isCPUStringValid(cpu))
      return module.emitError()
             << "unknown CPU '" << cpu << "' for "
             << builder->getTargetTriple().str()
             << " (use native, or an LLVM CPU name such as x86-64-v3)";
    builder->setCPU(cpu.str());
    builder->setFeatures("");
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  auto machine = builder->createTargetMachine();
  if (!machine)
    return module.emitError() << "no code generator for this host: "
                              << llvm::toString(machine.takeError());
  return std::move(*machine);
}

/// What arguments and results are (spec.io, spec.name) means nothing to
/// LLVM, whose translation would warn about each.
static void dropSpecArgumentAttrs(ModuleOp module) {
  auto drop = [](DictionaryAttr attrs) {
    if (!attrs)
      return attrs;
    SmallVector<NamedAttribute> kept;
    for (NamedAttribute attr : attrs)
      if (!attr.getName().getValue().starts_with("spec."))
        kept.push_back(attr);
    return DictionaryAttr::get(attrs.getContext(), kept);
  };
  module.walk([&](LLVM::LLVMFuncOp func) {
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.setArgAttrs(i, drop(func.getArgAttrDict(i)));
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      func.setResultAttrs(i, drop(func.getResultAttrDict(i)));
  });
}

/// Emits `module` as the object file `path`; an empty string on success,
/// else what failed (for the calling thread to report).
static std::string emitObjectFile(llvm::Module &module,
                                  llvm::TargetMachine &machine,
                                  StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return "cannot write '" + path.str() + "': " + ec.message();
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return "this host's target cannot emit objects";
  codegen.run(module);
  os.flush();
  if (os.has_error()) {
    os.clear_error();
    return "cannot write '" + path.str() + "'";
  }
  return "";
}

/// The parts of `module` as bitcode, each to be read into its own context:
/// the public functions, largest first, each given to the part with the
/// fewest instructions so far, at most `count` parts. Every part copies the
/// module's local definitions (private constants, helpers), so that its
/// functions fold the constants they read as in one module; the rest are
/// defined in one part and declared in the others.
static SmallVector<SmallString<0>> splitIntoBitcode(llvm::Module &module,
                                                    unsigned count) {
  SmallVector<std::pair<size_t, llvm::Function *>> functions;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !function.hasLocalLinkage())
      functions.push_back({function.getInstructionCount(), &function});
  llvm::stable_sort(functions,
                    [](auto &a, auto &b) { return a.first > b.first; });
  count = std::clamp<size_t>(functions.size(), 1, std::max(count, 1u));
  SmallVector<size_t> load(count, 0);
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> owner;
  for (auto [size, function] : functions) {
    unsigned part = llvm::min_element(load) - load.begin();
    owner[function] = part;
    load[part] += size;
  }
  // A copy of mutable state would not be shared: one part defines it.
  for (llvm::GlobalVariable &global : module.globals())
    if (global.hasLocalLinkage() && !global.isConstant()) {
      global.setLinkage(llvm::GlobalValue::ExternalLinkage);
      global.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  SmallVector<SmallString<0>> parts(count);
  for (unsigned part = 0; part < count; ++part) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> clone =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          if (value->hasLocalLinkage())
            return true;
          auto it = owner.find(value);
          return it == owner.end() ? part == 0 : it->second == part;
        });
    llvm::raw_svector_ostream os(parts[part]);
    llvm::WriteBitcodeToFile(*clone, os);
  }
  return parts;
}

FailureOr<SmallVector<std::string>>
specula::emitObjectFiles(ModuleOp module, StringRef cpu, StringRef directory,
                         unsigned threads, TimingScope &timing) {
  dropSpecArgumentAttrs(module);
  TimingScope translation = timing.nest("Translation to LLVM IR");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "specula-decoder");
  if (!llvmModule)
    return module.emitError() << "cannot translate the decoder to LLVM IR";
  translation.stop();
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createHostTargetMachine(module, cpu);
  if (failed(machine))
    return failure();
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());

  unsigned count =
      threads ? threads : llvm::hardware_concurrency().compute_thread_count();
  SmallVector<SmallString<0>> parts =
      splitIntoBitcode(*llvmModule, std::max(count, 1u));
  llvmModule.reset();
  // Target machines are made here, where errors can be reported.
  SmallVector<std::unique_ptr<llvm::TargetMachine>> machines;
  SmallVector<std::string> paths, errors(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    FailureOr<std::unique_ptr<llvm::TargetMachine>> partMachine =
        createHostTargetMachine(module, cpu);
    if (failed(partMachine))
      return failure();
    machines.push_back(std::move(*partMachine));
    SmallString<256> path(directory);
    llvm::sys::path::append(path, "decoder." + std::to_string(i) + ".o");
    paths.push_back(std::string(path));
  }
  SmallVector<std::unique_ptr<llvm::LLVMContext>> contexts;
  SmallVector<std::unique_ptr<llvm::Module>> modules(parts.size());
  for (size_t i = 0; i < parts.size(); ++i)
    contexts.push_back(std::make_unique<llvm::LLVMContext>());
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(parts.size()));
  auto forEachPart = [&](auto step) {
    for (size_t i = 0; i < parts.size(); ++i)
      pool.async([&, i] {
        if (errors[i].empty())
          errors[i] = step(i);
      });
    pool.wait();
  };

  TimingScope optimization = timing.nest("LLVM optimization (O3)");
  forEachPart([&](size_t i) -> std::string {
    auto part = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(parts[i].str(), "part"), *contexts[i]);
    if (!part)
      return llvm::toString(part.takeError());
    modules[i] = std::move(*part);
    optimizeHostModule(*modules[i], machines[i].get());
    return "";
  });
  optimization.stop();

  TimingScope codegen = timing.nest("LLVM code generation");
  forEachPart([&](size_t i) {
    return emitObjectFile(*modules[i], *machines[i], paths[i]);
  });
  for (const std::string &error : errors)
    if (!error.empty())
      return module.emitError() << "code generation failed: " << error;
  return paths;
}

FailureOr<std::string> specula::findLinker(ModuleOp module,
                                           StringRef linker) {
  StringRef name = linker.empty() ? StringRef("cc") : linker;
  if (llvm::sys::path::has_parent_path(name))
    return name.str();
  auto found = llvm::sys::findProgramByName(name);
  if (!found)
    return module.emitError()
           << "no C compiler driver '" << name
           << "' on PATH to link the shared object; install gcc or clang, "
              "or pass --linker";
  return *found;
}

/// Whether the code has OpenMP parallel loops (spec-parallelize-columns),
/// whose runtime the library must link.
static bool usesOpenMP(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return op->getName().getDialectNamespace() == "omp"
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

LogicalResult specula::linkSharedObject(ModuleOp module,
                                        ArrayRef<std::string> objects,
                                        StringRef library, StringRef driver) {
  SmallVector<StringRef> args{driver, "-shared", "-o", library};
  args.append(objects.begin(), objects.end());
  args.push_back("-lm");
  // LLVM's libomp, found where it was at build time by the loader too.
  std::string rpath = "-Wl,-rpath," SPECULA_OPENMP_LIBRARY_DIR;
  if (usesOpenMP(module))
    args.append({"-L" SPECULA_OPENMP_LIBRARY_DIR, "-lomp", rpath});
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(driver, args, std::nullopt, {},
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &message);
  if (rc != 0)
    return module.emitError()
           << "linking the shared object with '"
           << llvm::sys::path::filename(driver) << "' failed"
           << (message.empty() ? "" : ": ") << message << " (exit " << rc
           << ")";
  return success();
}
