//===- CUDADevice.cpp - run an artifact's kernels on an NVIDIA GPU --------===//
//
// The CUDA driver is loaded at run time (dlopen("libcuda.so.1")), so the
// runtime links no CUDA library and runs CPU artifacts on machines without
// one. Opening a CUDA artifact sets up the driver (the device's primary
// context, one stream), puts the weights in managed memory, makes compiled
// code allocate managed memory too (the host code of the decode loops reads
// the tokens and counts the kernels write; SPECRT_CUDA_MEMORY=pinned uses
// pinned host memory the GPU maps instead), and loads the host library,
// whose constructors load its PTX through mgpuModuleLoadJIT.
//
// The mgpu* functions below are what MLIR 22's gpu-to-llvm lowering and
// gpu.binary translation call (signatures from the lowered module's
// declarations). Their failures cannot be returned to the compiled code, so
// the first one is recorded, later calls do nothing, and the device reports
// it when the decode loop returns.
//
//===----------------------------------------------------------------------===//

#include "Allocator.h"
#include "Device.h"
#include "MappedFile.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>

using namespace specrt;

// The buffers of compiled code (Allocator.cpp).
extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t size);
extern "C" void _mlir_memref_to_llvm_free(void *block);

// The driver's opaque handle types, at global scope as cuda.h declares
// them, so that the functions have the driver's exact types.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;

namespace {
// The few driver API types and constants used here (cuda.h), so that the
// runtime builds without the CUDA toolkit.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr unsigned CU_MEM_ATTACH_GLOBAL = 1;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 1;
constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 2;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;

/// Names of the errors this device explains, for drivers (the toolkit's stub)
/// whose cuGetErrorName fails too.
const char *knownErrorName(CUresult result) {
  switch (result) {
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  default: return nullptr;
  }
}

/// The driver entry points, resolved from libcuda.so.1.
struct Driver {
  void *handle = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamDestroy)(CUstream);

  /// Loads the library and every entry point; false with `error` set when
  /// there is no driver or it lacks one.
  bool load(std::string &error) {
    if (handle)
      return true;
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *message = dlerror();
      error = std::string("no CUDA driver: libcuda.so.1 not found (") +
              (message ? message : "?") +
              "); install the NVIDIA driver, or compile for the CPU";
      return false;
    }
    bool complete = true;
    auto resolve = [&](auto &entry, const char *name) {
      entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(
          dlsym(library, name));
      if (!entry && complete) {
        error = std::string("the CUDA driver (libcuda.so.1) has no ") + name +
                "; it is too old for this runtime";
        complete = false;
      }
    };
    resolve(cuInit, "cuInit");
    resolve(cuDriverGetVersion, "cuDriverGetVersion");
    resolve(cuGetErrorName, "cuGetErrorName");
    resolve(cuGetErrorString, "cuGetErrorString");
    resolve(cuDeviceGetCount, "cuDeviceGetCount");
    resolve(cuDeviceGet, "cuDeviceGet");
    resolve(cuDeviceGetName, "cuDeviceGetName");
    resolve(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    resolve(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    resolve(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    resolve(cuCtxSetCurrent, "cuCtxSetCurrent");
    resolve(cuMemGetInfo, "cuMemGetInfo_v2");
    resolve(cuMemAllocManaged, "cuMemAllocManaged");
    resolve(cuMemFree, "cuMemFree_v2");
    resolve(cuMemHostAlloc, "cuMemHostAlloc");
    resolve(cuMemFreeHost, "cuMemFreeHost");
    resolve(cuModuleLoadDataEx, "cuModuleLoadDataEx");
    resolve(cuModuleUnload, "cuModuleUnload");
    resolve(cuModuleGetFunction, "cuModuleGetFunction");
    resolve(cuLaunchKernel, "cuLaunchKernel");
    resolve(cuStreamCreate, "cuStreamCreate");
    resolve(cuStreamSynchronize, "cuStreamSynchronize");
    resolve(cuStreamDestroy, "cuStreamDestroy_v2");
    if (!complete) {
      dlclose(library);
      return false;
    }
    handle = library;
    return true;
  }

  /// "CUDA_ERROR_X (what it means)".
  std::string describe(CUresult result) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
      name = knownErrorName(result);
    if (cuGetErrorString(result, &text) != CUDA_SUCCESS)
      text = nullptr;
    std::string described =
        name ? name : "CUDA error " + std::to_string(result);
    if (text)
      described += std::string(" (") + text + ")";
    return described;
  }
};

/// What the mgpu* functions work with: one device, its primary context, one
/// stream, and the first failure since the last check.
struct State {
  std::mutex mutex;
  Driver driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string firstError;
  bool active = false;
  /// The functions of each loaded module, by the address of their name (a
  /// constant of the host library): host code asks before every launch.
  std::unordered_map<void *, std::vector<std::pair<const char *, CUfunction>>>
      functions;

  /// Records the first failure; true if `result` is one.
  bool failed(CUresult result, const char *what) {
    if (result == CUDA_SUCCESS)
      return false;
    std::lock_guard<std::mutex> lock(mutex);
    if (firstError.empty())
      firstError = std::string(what) + " failed: " + driver.describe(result);
    return true;
  }
  bool ok() {
    std::lock_guard<std::mutex> lock(mutex);
    return active && firstError.empty();
  }
  std::string takeError() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string error;
    error.swap(firstError);
    return error;
  }
};

State &state() {
  // Never destroyed: the host library's destructors unload modules late.
  static State *instance = new State;
  return *instance;
}

void *managedAllocate(uint64_t alignment, uint64_t size) {
  // Managed allocations are aligned to at least 256 bytes.
  State &s = state();
  CUdeviceptr pointer = 0;
  if (alignment > 256 ||
      s.failed(s.driver.cuMemAllocManaged(&pointer, size, CU_MEM_ATTACH_GLOBAL),
               ("cuMemAllocManaged of " + std::to_string(size) + " bytes")
                   .c_str()))
    return nullptr;
  return reinterpret_cast<void *>(pointer);
}

void managedRelease(void *base) {
  state().driver.cuMemFree(reinterpret_cast<CUdeviceptr>(base));
}

/// Pinned host memory mapped into the GPU's address space (the same
/// address on both sides): kernels read it across the bus. For drivers or
/// sandboxes without managed memory.
void *pinnedAllocate(uint64_t alignment, uint64_t size) {
  State &s = state();
  void *pointer = nullptr;
  if (alignment > 4096 ||
      s.failed(s.driver.cuMemHostAlloc(&pointer, size,
                                       CU_MEMHOSTALLOC_PORTABLE |
                                           CU_MEMHOSTALLOC_DEVICEMAP),
               ("cuMemHostAlloc of " + std::to_string(size) + " bytes")
                   .c_str()))
    return nullptr;
  return pointer;
}

void pinnedRelease(void *base) { state().driver.cuMemFreeHost(base); }

const BlockSource managedBlocks{"managed", managedAllocate, managedRelease};
const BlockSource pinnedBlocks{"pinned host", pinnedAllocate, pinnedRelease};

/// "sm_90" -> 90; 0 when malformed.
int chipNumber(const std::string &chip) {
  if (chip.size() < 4 || chip.compare(0, 3, "sm_") != 0)
    return 0;
  int number = 0;
  for (char c : chip.substr(3)) {
    if (c < '0' || c > '9')
      return c == 'a' ? number : 0; // sm_90a
    number = number * 10 + (c - '0');
  }
  return number;
}

class CUDADevice : public Device {
public:
  ~CUDADevice() override;

  specrt_status open(const std::string &directory, const Manifest &manifest,
                     bool verifyChecksums, std::string &error);

  specrt_status decode(bool speculative, const int64_t *prompt,
                       size_t promptLength, int64_t maxNewTokens, int64_t seed,
                       const std::vector<int64_t> &stopTokens,
                       DecodeOutput &output, std::string &error) override;
  void setThreads(int threads) override { library.setThreads(threads); }

private:
  specrt_status setUpDriver(const Manifest &manifest, std::string &error);

  void *weights = nullptr;
  const BlockSource *memory = &managedBlocks;
  HostLibrary library;
  bool retainedContext = false;
};
} // namespace

CUDADevice::~CUDADevice() {
  State &s = state();
  // The library's destructors unload its modules; then the buffers go.
  library.close();
  if (s.active) {
    if (s.stream)
      s.driver.cuStreamSynchronize(s.stream);
    useBlockSource(hostBlockSource());
    deferFreedBlocks(false);
    releaseCachedBlocks(*memory);
    if (weights)
      memory->release(weights);
    if (s.stream)
      s.driver.cuStreamDestroy(s.stream);
    s.stream = nullptr;
    s.active = false;
  }
  if (retainedContext)
    s.driver.cuDevicePrimaryCtxRelease(s.device);
  s.takeError();
}

specrt_status CUDADevice::setUpDriver(const Manifest &manifest,
                                      std::string &error) {
  State &s = state();
  if (s.active) {
    error = "a CUDA artifact is open already; this runtime runs one at a time";
    return SPECRT_ERROR_DEVICE;
  }
  if (!s.driver.load(error))
    return SPECRT_ERROR_DEVICE;
  const Driver &d = s.driver;
  auto check = [&](CUresult result, const std::string &what) {
    if (result == CUDA_SUCCESS)
      return true;
    error = "CUDA driver: " + what + " failed: " + d.describe(result);
    return false;
  };
  if (!check(d.cuInit(0), "cuInit"))
    return SPECRT_ERROR_DEVICE;
  int count = 0;
  if (!check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return SPECRT_ERROR_DEVICE;
  if (count == 0) {
    error = "CUDA driver: no CUDA device";
    return SPECRT_ERROR_DEVICE;
  }
  if (!check(d.cuDeviceGet(&s.device, 0), "cuDeviceGet"))
    return SPECRT_ERROR_DEVICE;
  char name[256] = {};
  int major = 0, minor = 0, managed = 0;
  if (!check(d.cuDeviceGetName(name, sizeof(name) - 1, s.device),
             "cuDeviceGetName") ||
      !check(d.cuDeviceGetAttribute(
                 &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                 s.device),
             "cuDeviceGetAttribute") ||
      !check(d.cuDeviceGetAttribute(
                 &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                 s.device),
             "cuDeviceGetAttribute") ||
      !check(d.cuDeviceGetAttribute(&managed,
                                    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
                                    s.device),
             "cuDeviceGetAttribute"))
    return SPECRT_ERROR_DEVICE;
  // PTX for a chip runs on that chip and newer ones (the driver compiles
  // it), never on older ones.
  int wanted = chipNumber(manifest.chip), have = major * 10 + minor;
  if (!wanted) {
    error = "the manifest's target.chip '" + manifest.chip +
            "' is not a CUDA chip (sm_XY)";
    return SPECRT_ERROR_FORMAT;
  }
  if (have < wanted) {
    error = "the artifact was compiled for " + manifest.chip + "; this GPU (" +
            name + ") is sm_" + std::to_string(have) +
            "; recompile with specc --device cuda --chip sm_" +
            std::to_string(have);
    return SPECRT_ERROR_DEVICE;
  }
  if (!managed) {
    error = std::string("this GPU (") + name +
            ") cannot allocate managed memory, which CUDA artifacts use";
    return SPECRT_ERROR_DEVICE;
  }
  if (!check(d.cuDevicePrimaryCtxRetain(&s.context, s.device),
             "cuDevicePrimaryCtxRetain"))
    return SPECRT_ERROR_DEVICE;
  retainedContext = true;
  if (!check(d.cuCtxSetCurrent(s.context), "cuCtxSetCurrent") ||
      !check(d.cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING),
             "cuStreamCreate"))
    return SPECRT_ERROR_DEVICE;
  s.takeError();
  s.active = true;
  return SPECRT_OK;
}

specrt_status CUDADevice::open(const std::string &directory,
                               const Manifest &manifest, bool verifyChecksums,
                               std::string &error) {
  if (specrt_status status = checkHostCPU(manifest, error))
    return status;
  MappedFile file;
  if (specrt_status status =
          mapWeights(directory, manifest, verifyChecksums, file, error))
    return status;
  if (specrt_status status = setUpDriver(manifest, error))
    return status;

  State &s = state();
  size_t freeBytes = 0, totalBytes = 0;
  s.driver.cuMemGetInfo(&freeBytes, &totalBytes);
  // SPECRT_CUDA_MEMORY=pinned: buffers in pinned host memory instead of
  // managed memory (for drivers and sandboxes without managed memory).
  const char *choice = std::getenv("SPECRT_CUDA_MEMORY");
  if (choice && std::string(choice) == "pinned")
    memory = &pinnedBlocks;
  else if (choice && *choice && std::string(choice) != "managed") {
    error = std::string("SPECRT_CUDA_MEMORY is '") + choice +
            "'; expected managed or pinned";
    return SPECRT_ERROR_INVALID_ARGUMENT;
  }
  weights = memory->allocate(256, file.size() ? file.size() : 1);
  if (!weights) {
    error = "out of device memory: the weights need " +
            std::to_string(file.size()) + " bytes, the GPU has " +
            std::to_string(freeBytes) + " free (" + s.takeError() + ")";
    return SPECRT_ERROR_OUT_OF_MEMORY;
  }
  std::memcpy(weights, file.data(), file.size());
  useBlockSource(*memory);
  // Launches are asynchronous: a block the host frees may still be in use
  // by a queued kernel until the stream is synchronized.
  deferFreedBlocks(true);

  // Loading the library loads its kernels (mgpuModuleLoadJIT).
  if (specrt_status status =
          library.open(directory, manifest, verifyChecksums, weights, error))
    return status;
  std::string failure = s.takeError();
  if (!failure.empty()) {
    int version = 0;
    s.driver.cuDriverGetVersion(&version);
    error = "loading the artifact's kernels: " + failure;
    if (failure.find("UNSUPPORTED_PTX_VERSION") != std::string::npos)
      error += "; the kernels are PTX ISA " + manifest.ptxIsa +
               ", newer than this driver (CUDA " +
               std::to_string(version / 1000) + "." +
               std::to_string(version % 1000 / 10) +
               ") accepts: update the driver";
    return SPECRT_ERROR_DEVICE;
  }
  return SPECRT_OK;
}

specrt_status CUDADevice::decode(bool speculative, const int64_t *prompt,
                                 size_t promptLength, int64_t maxNewTokens,
                                 int64_t seed,
                                 const std::vector<int64_t> &stopTokens,
                                 DecodeOutput &output, std::string &error) {
  // Kernels copy the prompt into the sequence and compare with the stop
  // tokens: both must be in memory the GPU reads.
  auto *ids = static_cast<int64_t *>(
      _mlir_memref_to_llvm_alloc((promptLength + 1) * sizeof(int64_t)));
  auto *stops = static_cast<int64_t *>(
      _mlir_memref_to_llvm_alloc((stopTokens.size() + 1) * sizeof(int64_t)));
  State &s = state();
  if (!ids || !stops) {
    _mlir_memref_to_llvm_free(ids);
    _mlir_memref_to_llvm_free(stops);
    error = "out of device memory for the prompt: " + s.takeError();
    return SPECRT_ERROR_OUT_OF_MEMORY;
  }
  std::copy(prompt, prompt + promptLength, ids);
  std::copy(stopTokens.begin(), stopTokens.end(), stops);
  specrt_status status =
      library.run(speculative, ids, promptLength, maxNewTokens, seed, stops,
                  stopTokens.size(), output, error);
  _mlir_memref_to_llvm_free(ids);
  _mlir_memref_to_llvm_free(stops);
  std::string failure = s.takeError();
  if (!failure.empty()) {
    // Later launches were skipped: the output means nothing.
    error = "on the GPU: " + failure;
    return failure.find("OUT_OF_MEMORY") != std::string::npos
               ? SPECRT_ERROR_OUT_OF_MEMORY
               : SPECRT_ERROR_DEVICE;
  }
  return status;
}

specrt_status specrt::openCUDADevice(const std::string &directory,
                                     const Manifest &manifest,
                                     bool verifyChecksums,
                                     std::unique_ptr<Device> &device,
                                     std::string &error) {
  auto cuda = std::make_unique<CUDADevice>();
  if (specrt_status status =
          cuda->open(directory, manifest, verifyChecksums, error))
    return status;
  device = std::move(cuda);
  return SPECRT_OK;
}

//===----------------------------------------------------------------------===//
// The mgpu* functions compiled code calls.
//===----------------------------------------------------------------------===//

extern "C" {

SPECRT_API void *mgpuModuleLoadJIT(void *data, int optLevel) {
  State &s = state();
  if (!s.ok())
    return nullptr;
  char log[8192] = {};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER,
                   CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
  CUmodule module = nullptr;
  CUresult result =
      s.driver.cuModuleLoadDataEx(&module, data, 2, options, values);
  if (result != CUDA_SUCCESS) {
    std::string what = "cuModuleLoadDataEx";
    if (log[0])
      what += std::string(" (") + log + ")";
    s.failed(result, what.c_str());
    return nullptr;
  }
  (void)optLevel; // the driver's default JIT optimization level is the highest
  return module;
}

SPECRT_API void *mgpuModuleLoad(void *data, size_t) {
  return mgpuModuleLoadJIT(data, 4);
}

SPECRT_API void mgpuModuleUnload(void *module) {
  State &s = state();
  s.functions.erase(module);
  if (module && s.active)
    s.driver.cuModuleUnload(static_cast<CUmodule>(module));
}

SPECRT_API void *mgpuModuleGetFunction(void *module, const char *name) {
  State &s = state();
  if (!module || !s.ok())
    return nullptr;
  std::vector<std::pair<const char *, CUfunction>> &known = s.functions[module];
  for (auto [knownName, function] : known)
    if (knownName == name)
      return function;
  CUfunction function = nullptr;
  if (s.failed(s.driver.cuModuleGetFunction(
                   &function, static_cast<CUmodule>(module), name),
               "cuModuleGetFunction"))
    return nullptr;
  known.emplace_back(name, function);
  return function;
}

SPECRT_API void mgpuLaunchKernel(void *function, intptr_t gridX,
                                 intptr_t gridY, intptr_t gridZ,
                                 intptr_t blockX, intptr_t blockY,
                                 intptr_t blockZ, int32_t sharedMemoryBytes,
                                 void *stream, void **params, void **extra,
                                 size_t /*paramsCount*/) {
  State &s = state();
  if (!function || !s.ok())
    return;
  // An empty grid (a loop over zero elements) launches nothing.
  if (gridX <= 0 || gridY <= 0 || gridZ <= 0)
    return;
  s.failed(s.driver.cuLaunchKernel(
               static_cast<CUfunction>(function), gridX, gridY, gridZ, blockX,
               blockY, blockZ, sharedMemoryBytes,
               stream ? static_cast<CUstream>(stream) : s.stream, params,
               extra),
           "cuLaunchKernel");
}

/// Host code creates a stream for each chain of launches (and, with
/// spec-to-cuda{async-launches=false}, for each launch), synchronizes and
/// destroys it; they all get the device's one stream.
SPECRT_API void *mgpuStreamCreate() { return state().stream; }

SPECRT_API void mgpuStreamDestroy(void *) {}

SPECRT_API void mgpuStreamSynchronize(void *stream) {
  State &s = state();
  if (!s.ok())
    return;
  if (!s.failed(s.driver.cuStreamSynchronize(
                    stream ? static_cast<CUstream>(stream) : s.stream),
                "cuStreamSynchronize"))
    reuseDeferredBlocks();
}

} // extern "C"
