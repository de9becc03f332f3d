//===- GraphExecutor.cpp - compile and run model functions on the CPU -----===//

#include "specula/GraphExecutor.h"

#include "lib/HostCode/Optimize.h"
#include "passes/Common/Passes.h"
#include "specula/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace mlir;
using namespace specula;

// ONNX TensorProto data types (onnx.proto), kept here so that the executor
// does not depend on libonnx.
enum : int32_t {
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

unsigned specula::elementByteWidth(int32_t dataType) {
  switch (dataType) {
  case kBool:
  case kInt8:
  case kUInt8:
    return 1;
  case kInt16:
  case kUInt16:
  case kFloat16:
  case kBFloat16:
    return 2;
  case kFloat:
  case kInt32:
  case kUInt32:
    return 4;
  case kDouble:
  case kInt64:
  case kUInt64:
    return 8;
  default:
    return 0;
  }
}

HostTensor specula::makeInt64Tensor(std::vector<int64_t> shape,
                                    ArrayRef<int64_t> values) {
  HostTensor t{kInt64, std::move(shape), {}};
  t.data.resize(values.size() * sizeof(int64_t));
  // memcpy's pointers must not be null, even for 0 bytes (empty tensors).
  if (!values.empty())
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

int64_t specula::int64Value(const HostTensor &tensor) {
  int64_t value = 0;
  std::memcpy(&value, tensor.data.data(),
              std::min(sizeof(value), tensor.data.size()));
  return value;
}

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// The ONNX data type of an MLIR element type (signless integers read as
/// signed), or 0.
static int32_t dataTypeOf(Type type) {
  if (type.isF32())
    return kFloat;
  if (type.isF64())
    return kDouble;
  if (type.isF16())
    return kFloat16;
  if (type.isBF16())
    return kBFloat16;
  if (type.isInteger(1))
    return kBool;
  if (type.isInteger(8))
    return kInt8;
  if (type.isInteger(16))
    return kInt16;
  if (type.isInteger(32))
    return kInt32;
  if (type.isInteger(64))
    return kInt64;
  return 0;
}

/// Same bit pattern, other signedness: unsigned ONNX types map onto the
/// signless integers of the same width.
bool specula::sameElementStorage(int32_t a, int32_t b) {
  auto canonical = [](int32_t t) {
    switch (t) {
    case kUInt8:
      return int32_t(kInt8);
    case kUInt16:
      return int32_t(kInt16);
    case kUInt32:
      return int32_t(kInt32);
    case kUInt64:
      return int32_t(kInt64);
    // The ONNX test data stores bfloat16 tensors as their uint16 bits.
    case kBFloat16:
      return int32_t(kInt16);
    default:
      return t;
    }
  };
  return canonical(a) == canonical(b);
}

/// What decode loops call to time their phases (the runtime's
/// specrt_clock_ns, for the JIT).
static int64_t clockNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Where decode loops hand each committed token (the runtime's
/// specrt_on_token, which streams them and may cancel): nowhere, in the JIT.
static bool ignoreToken(int64_t) { return false; }

/// The first failed run-time check of the current call on this thread
/// (spec-lower-checks), as the runtime keeps it for artifacts.
static thread_local const char *failedCheck = nullptr;

static void reportCheck(bool ok, const char *message) {
  if (!ok && !failedCheck)
    failedCheck = message;
}

/// Lowers `module` to the LLVM dialect with spec-graph-to-llvm and moves
/// its weights into `weightsFile`, as artifacts do: LLVM never sees them
/// (it would fold loads of them into constants: minutes for 16-bit ones).
static LogicalResult lowerToLLVM(ModuleOp module,
                                 const GraphToLLVMOptions &lowering,
                                 StringRef weightsFile) {
  // Bufferization and the LLVM conversions work through interfaces that
  // upstream dialects register as extensions.
  DialectRegistry extensions;
  registerAllDialects(extensions);
  registerAllExtensions(extensions);
  module.getContext()->appendDialectRegistry(extensions);

  PassManager pm(module.getContext());
  buildGraphToLLVMPipeline(pm, lowering);
  SpecExternalizeWeightsOptions weights;
  weights.path = weightsFile.str();
  pm.addPass(createSpecExternalizeWeights(weights));
  return pm.run(module);
}

/// The contents of `path` in 64-byte aligned memory (the offsets
/// spec-externalize-weights gives are aligned so), or null.
static std::shared_ptr<char> readAligned(StringRef path) {
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(path, size))
    return nullptr;
  size_t bytes = (std::max<uint64_t>(size, 1) + 63) / 64 * 64;
  std::shared_ptr<char> data(static_cast<char *>(std::aligned_alloc(64, bytes)),
                             std::free);
  std::ifstream file(path.str(), std::ios::binary);
  if (!data || !file.read(data.get(), static_cast<std::streamsize>(size)))
    return nullptr;
  return data;
}

/// Points the compiled code's spec_weights_base at `weights`.
static LogicalResult setWeightsBase(ModuleOp module, ExecutionEngine &engine,
                                    char *weights) {
  llvm::Expected<void *> base = engine.lookup("spec_weights_base");
  if (!base) {
    llvm::consumeError(base.takeError());
    return module.emitError() << "the compiled code has no spec_weights_base";
  }
  *static_cast<char **>(*base) = weights;
  return success();
}

/// This CPU's target machine (null if LLVM cannot make one): with it the
/// loop vectorizer knows the vector units.
static std::unique_ptr<llvm::TargetMachine> hostTargetMachine() {
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder) {
    llvm::consumeError(hostBuilder.takeError());
    return nullptr;
  }
  hostBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = hostBuilder->createTargetMachine();
  if (!machine) {
    llvm::consumeError(machine.takeError());
    return nullptr;
  }
  return std::move(*machine);
}

/// JIT-compiles `module` (in the LLVM dialect), optimized as artifacts are,
/// with the runtime's symbols the compiled code calls.
static FailureOr<std::unique_ptr<ExecutionEngine>>
createEngine(ModuleOp module) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  std::unique_ptr<llvm::TargetMachine> host = hostTargetMachine();
  // The artifact writer's O3 (no LLVM unrollers), so that what tests run is
  // optimized as artifacts are. ExecutionEngineOptions::transformer is a
  // function_ref: the function it refers to must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      [&host](llvm::Module *module) {
        optimizeHostModule(*module, host.get());
        return llvm::Error::success();
      };
  ExecutionEngineOptions options;
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // memref.copy of non-contiguous buffers calls into the runner utilities.
  SmallVector<StringRef> libs{SPECULA_MLIR_C_RUNNER_UTILS};
  options.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    std::string message = llvm::toString(engine.takeError());
    return module.emitError() << "JIT compilation failed: " << message;
  }
  // Decode loops read the runtime's clock (specrt_clock_ns) and hand it
  // their tokens (specrt_on_token), and models report failed run-time checks
  // (specrt_check): the JIT provides all three.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("specrt_clock_ns")] = {
        llvm::orc::ExecutorAddr::fromPtr(&clockNanoseconds),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("specrt_on_token")] = {
        llvm::orc::ExecutorAddr::fromPtr(&ignoreToken),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("specrt_check")] = {
        llvm::orc::ExecutorAddr::fromPtr(&reportCheck),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  return std::move(*engine);
}

GraphExecutor::~GraphExecutor() = default;

FailureOr<std::unique_ptr<GraphExecutor>>
GraphExecutor::compile(ModuleOp module, StringRef function,
                       const GraphToLLVMOptions &lowering) {
  auto func = module.lookupSymbol<func::FuncOp>(function);
  if (!func)
    return module.emitError() << "no function @" << function << " to compile";
  std::unique_ptr<GraphExecutor> executor(new GraphExecutor());
  executor->function = function.str();
  auto signature = [&](Type type,
                       std::vector<TensorSignature> &list) -> LogicalResult {
    if (type.isIndex() || type.isInteger(64)) {
      list.push_back({kInt64, {}, /*scalar=*/true});
      return success();
    }
    auto tensor = dyn_cast<RankedTensorType>(type);
    int32_t dataType = tensor ? dataTypeOf(tensor.getElementType()) : 0;
    if (!dataType)
      return func.emitError() << "cannot pass " << type
                              << " between the host and compiled code";
    std::vector<int64_t> shape;
    for (int64_t size : tensor.getShape())
      shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    list.push_back({dataType, shape});
    return success();
  };
  for (Type type : func.getArgumentTypes())
    if (failed(signature(type, executor->inputs)))
      return failure();
  for (Type type : func.getResultTypes())
    if (failed(signature(type, executor->results)))
      return failure();

  SmallString<128> weightsFile;
  if (llvm::sys::fs::createTemporaryFile("spec-graph-weights", "bin",
                                         weightsFile))
    return module.emitError() << "cannot create a temporary weights file";
  llvm::FileRemover removeWeights(weightsFile);
  if (failed(lowerToLLVM(module, lowering, weightsFile)))
    return failure();
  executor->weights = readAligned(weightsFile);
  if (!executor->weights)
    return module.emitError() << "cannot read back the weights file '"
                              << weightsFile << "'";
  FailureOr<std::unique_ptr<ExecutionEngine>> engine = createEngine(module);
  if (failed(engine) ||
      failed(setWeightsBase(module, **engine, executor->weights.get())))
    return failure();
  executor->engine = std::move(*engine);
  return executor;
}

/// Why `arg` cannot be passed as an argument of `dataType` and `shape` (-1
/// for a dynamic size), or empty.
static std::string checkArgument(const HostTensor &arg, int32_t dataType,
                                 ArrayRef<int64_t> shape,
                                 const std::string &which) {
  if (!sameElementStorage(arg.dataType, dataType))
    return which + " has data type " + std::to_string(arg.dataType) +
           ", expected " + std::to_string(dataType);
  if (arg.shape.size() != shape.size())
    return which + " has rank " + std::to_string(arg.shape.size()) +
           ", expected " + std::to_string(shape.size());
  for (auto [d, size] : llvm::enumerate(arg.shape))
    if (shape[d] >= 0 && shape[d] != size)
      return which + " has size " + std::to_string(size) + " in dimension " +
             std::to_string(d) + ", expected " + std::to_string(shape[d]);
  if (static_cast<int64_t>(arg.data.size()) !=
      arg.numElements() * elementByteWidth(arg.dataType))
    return which + " holds " + std::to_string(arg.data.size()) +
           " bytes, not what its shape needs";
  return "";
}

/// The words MLIR's packed calling convention passes for `arg`: the value of
/// a scalar, else a memref descriptor (allocated and aligned pointers,
/// offset, sizes, strides) over its data.
static std::vector<int64_t> describeArgument(const HostTensor &arg,
                                             bool scalar) {
  std::vector<int64_t> desc;
  if (scalar) {
    int64_t value;
    std::memcpy(&value, arg.data.data(), sizeof(value));
    return {value};
  }
  auto pointer = reinterpret_cast<int64_t>(arg.data.data());
  desc = {pointer, pointer, 0};
  desc.insert(desc.end(), arg.shape.begin(), arg.shape.end());
  std::vector<int64_t> strides(arg.shape.size());
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(arg.shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= arg.shape[d];
  }
  desc.insert(desc.end(), strides.begin(), strides.end());
  return desc;
}

/// Copies the result whose memref descriptor starts at `words` out, element
/// by element through its strides (results may be views), into `out`; the
/// buffer the compiled code allocated goes into `allocations`.
static void copyResult(const int64_t *words, size_t rank, HostTensor &out,
                       llvm::SmallPtrSetImpl<void *> &allocations) {
  allocations.insert(reinterpret_cast<void *>(words[0]));
  const char *aligned = reinterpret_cast<const char *>(words[1]);
  int64_t offset = words[2];
  out.shape.assign(words + 3, words + 3 + rank);
  const int64_t *strides = words + 3 + rank;
  unsigned width = elementByteWidth(out.dataType);
  out.data.resize(out.numElements() * width);
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0, n = out.numElements(); e < n; ++e) {
    int64_t position = offset;
    for (size_t d = 0; d < rank; ++d)
      position += index[d] * strides[d];
    std::memcpy(out.data.data() + e * width, aligned + position * width,
                width);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
}

FailureOr<std::vector<HostTensor>>
GraphExecutor::run(ArrayRef<HostTensor> args, std::string &error) {
  if (args.size() != inputs.size()) {
    error = "expected " + std::to_string(inputs.size()) + " inputs, got " +
            std::to_string(args.size());
    return failure();
  }
  // The descriptors' storage lives while the call runs.
  std::vector<std::vector<int64_t>> descriptors;
  for (auto [i, arg] : llvm::enumerate(args)) {
    error = checkArgument(arg, inputs[i].dataType, inputs[i].shape,
                          "input " + std::to_string(i));
    if (!error.empty())
      return failure();
    descriptors.push_back(describeArgument(arg, inputs[i].scalar));
  }
  std::vector<void *> packed;
  for (std::vector<int64_t> &desc : descriptors)
    for (int64_t &word : desc)
      packed.push_back(&word);

  // The results come back as one struct of memref descriptors, all 8-byte
  // words.
  size_t resultWords = 0;
  for (const TensorSignature &result : results)
    resultWords += result.scalar ? 1 : 3 + 2 * result.shape.size();
  std::vector<int64_t> resultStorage(std::max<size_t>(resultWords, 1));
  if (!results.empty())
    packed.push_back(resultStorage.data());

  failedCheck = nullptr;
  if (llvm::Error callError = engine->invokePacked(function, packed)) {
    error = "call failed: " + llvm::toString(std::move(callError));
    return failure();
  }
  const char *check = failedCheck;
  failedCheck = nullptr;

  std::vector<HostTensor> outputs;
  // Results are buffers the compiled code allocated (bufferization hands
  // their ownership to the caller); free each once after copying it out.
  llvm::SmallPtrSet<void *, 8> allocations;
  size_t word = 0;
  for (const TensorSignature &result : results) {
    HostTensor &out = outputs.emplace_back();
    out.dataType = result.dataType;
    if (result.scalar) {
      out.data.resize(sizeof(int64_t));
      std::memcpy(out.data.data(), &resultStorage[word++], sizeof(int64_t));
      continue;
    }
    copyResult(&resultStorage[word], result.shape.size(), out, allocations);
    word += 3 + 2 * result.shape.size();
  }
  for (void *allocation : allocations)
    free(allocation);
  if (check) {
    error = std::string("a run-time check of the model failed: ") + check;
    return failure();
  }
  return outputs;
}
