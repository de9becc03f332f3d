/* A stand-in for the CUDA driver (libcuda.so.1) that the runtime's CUDA
 * device loads, to test its error paths on machines without a GPU. It
 * reports one device; environment variables choose what goes wrong:
 *
 *   FAKE_CUDA_CC=80          the device's compute capability (default 90)
 *   FAKE_CUDA_DEVICES=0      no device
 *   FAKE_CUDA_LOAD_ERROR=222 cuModuleLoadDataEx fails with this code
 *   FAKE_CUDA_ALLOC_ERROR=2  cuMemAllocManaged fails with this code
 *   FAKE_CUDA_MANAGED=0      the device cannot allocate managed memory
 *
 * Memory comes from malloc; loading a module always fails (there is no GPU
 * to run kernels), with FAKE_CUDA_LOAD_ERROR or CUDA_ERROR_NO_BINARY_FOR_GPU.
 */
#include <stdlib.h>
#include <string.h>

/* The driver API's types as cuda.h declares them (the runtime calls these
 * functions through pointers of exactly these types). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

static int env(const char *name, int fallback) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *version) { *version = 12040; return 0; }
CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
  case 209: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return 0;
  case 222: *name = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; return 0;
  default: return 1;
  }
}
CUresult cuGetErrorString(CUresult error, const char **text) {
  (void)error;
  *text = "fake driver";
  return 0;
}
CUresult cuDeviceGetCount(int *count) {
  *count = env("FAKE_CUDA_DEVICES", 1);
  return 0;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) { *device = ordinal; return 0; }
CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  (void)device;
  strncpy(name, "Fake GPU", length);
  return 0;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
  (void)device;
  int cc = env("FAKE_CUDA_CC", 90);
  if (attribute == 75) *value = cc / 10;      /* major */
  else if (attribute == 76) *value = cc % 10; /* minor */
  else if (attribute == 83) *value = env("FAKE_CUDA_MANAGED", 1);
  else *value = 1;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  (void)device;
  *context = (CUcontext)1;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) { (void)device; return 0; }
CUresult cuCtxSetCurrent(CUcontext context) { (void)context; return 0; }
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  *free_bytes = 1 << 20;
  *total = 1 << 30;
  return 0;
}
CUresult cuMemAllocManaged(CUdeviceptr *pointer, size_t size,
                           unsigned flags) {
  (void)flags;
  int error = env("FAKE_CUDA_ALLOC_ERROR", 0);
  if (error)
    return error;
  void *block = aligned_alloc(256, (size + 255) / 256 * 256);
  *pointer = (unsigned long long)block;
  return block ? 0 : 2;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  free((void *)pointer);
  return 0;
}
CUresult cuMemHostAlloc(void **pointer, size_t size, unsigned flags) {
  unsigned long long p = 0;
  CUresult result = cuMemAllocManaged(&p, size, flags);
  *pointer = (void *)p;
  return result;
}
CUresult cuMemFreeHost(void *pointer) { free(pointer); return 0; }
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned count,
                            int *options, void **values) {
  (void)module; (void)image; (void)count; (void)options; (void)values;
  return env("FAKE_CUDA_LOAD_ERROR", 209);
}
CUresult cuModuleUnload(CUmodule module) { (void)module; return 0; }
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  (void)function; (void)module; (void)name;
  return 1;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        CUstream stream, void **params, void **extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
  (void)smem; (void)stream; (void)params; (void)extra;
  return 1;
}
CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
  (void)flags;
  *stream = (CUstream)1;
  return 0;
}
CUresult cuStreamSynchronize(CUstream stream) { (void)stream; return 0; }
CUresult cuStreamDestroy_v2(CUstream stream) { (void)stream; return 0; }
