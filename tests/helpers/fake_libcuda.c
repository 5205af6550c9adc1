/*
 * A stand-in libcuda.so.1 for tests on machines without a GPU (test_cuda_fake_driver.py):
 * just the entry points cubin_launcher.h resolves through cuGetProcAddress, with one device
 * of fixed limits. It loads any image, knows the kernels named in kKernels, and records each
 * launch (grid, block, shared memory, stream, attributes and the parameter bytes) so that a
 * test can check what tvm_ffi.cuda handed the driver. Launches fail on purpose where a real
 * driver would: too many threads or too much shared memory (CUDA_ERROR_INVALID_VALUE); and
 * grid.x == 7 gives CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
 */
#include <cuda.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* kKernels[] = {"mixed", "add", "no_params", "_Z7mangledPiy"};
enum { kNumKernels = 4, kMaxParams = 32 };
static int g_ctx_token, g_lib_token;
static int g_max_dynamic_smem = 48 * 1024 - 1024; /* the kernel's, on "device 0" */
static atomic_long g_launches;

/* What the last launch was given, as JSON (read through fake_last_launch). */
static char g_last[8192];
static int g_param_sizes[kMaxParams];
static int g_num_params;

void fake_expect_params(int n, const int* sizes) {
  g_num_params = n < kMaxParams ? n : kMaxParams;
  memcpy(g_param_sizes, sizes, sizeof(int) * g_num_params);
}
const char* fake_last_launch(void) { return g_last; }
long fake_launch_count(void) { return atomic_load(&g_launches); }
int fake_max_dynamic_smem(void) { return g_max_dynamic_smem; }

// Name and text of the errors the tests provoke; anything else reads as unknown.
static const struct {
  CUresult code;
  const char* name;
  const char* text;
} kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
};
static CUresult DescribeError(CUresult e, const char** s, int text) {
  *s = text ? "unknown error" : "CUDA_ERROR_UNKNOWN";
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i) {
    if (kErrors[i].code == e) *s = text ? kErrors[i].text : kErrors[i].name;
  }
  return CUDA_SUCCESS;
}
static CUresult GetErrorName(CUresult e, const char** s) { return DescribeError(e, s, 0); }
static CUresult GetErrorString(CUresult e, const char** s) { return DescribeError(e, s, 1); }
static CUresult DriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
static CUresult Init(unsigned f) {
  (void)f;
  return CUDA_SUCCESS;
}
static CUresult DeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
static CUresult DeviceGet(CUdevice* d, int i) {
  *d = i;
  return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
static CUresult DeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *v = 64;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *v = 2147483647;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      *v = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *v = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 0;
      break;
    default:
      *v = 0;
  }
  return CUDA_SUCCESS;
}
static CUresult PrimaryCtxRetain(CUcontext* c, CUdevice d) {
  (void)d;
  *c = (CUcontext)&g_ctx_token;
  return CUDA_SUCCESS;
}
static CUresult PrimaryCtxRelease(CUdevice d) {
  (void)d;
  return CUDA_SUCCESS;
}
static CUresult CtxGetCurrent(CUcontext* c) {
  *c = (CUcontext)&g_ctx_token;
  return CUDA_SUCCESS;
}
static CUresult CtxSetCurrent(CUcontext c) {
  (void)c;
  return CUDA_SUCCESS;
}
static CUresult CtxPushCurrent(CUcontext c) {
  (void)c;
  return CUDA_SUCCESS;
}
static CUresult CtxPopCurrent(CUcontext* c) {
  *c = (CUcontext)&g_ctx_token;
  return CUDA_SUCCESS;
}
static CUresult CtxGetDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
static CUresult StreamGetCtx(CUstream s, CUcontext* c) {
  (void)s;
  *c = (CUcontext)&g_ctx_token;
  return CUDA_SUCCESS;
}
static CUresult LibraryLoadData(CUlibrary* lib, const void* code, CUjit_option* jo, void** jv,
                                unsigned nj, CUlibraryOption* lo, void** lv, unsigned nl) {
  (void)code, (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
  *lib = (CUlibrary)&g_lib_token;
  return CUDA_SUCCESS;
}
static CUresult LibraryUnload(CUlibrary lib) {
  (void)lib;
  return CUDA_SUCCESS;
}
static CUresult LibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  (void)lib;
  for (int i = 0; i < kNumKernels; ++i) {
    if (strcmp(name, kKernels[i]) == 0) {
      *k = (CUkernel)&kKernels[i];
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
static CUresult LibraryGetKernelCount(unsigned* n, CUlibrary lib) {
  (void)lib;
  *n = kNumKernels;
  return CUDA_SUCCESS;
}
static CUresult LibraryEnumerateKernels(CUkernel* ks, unsigned n, CUlibrary lib) {
  (void)lib;
  for (unsigned i = 0; i < n && i < kNumKernels; ++i) ks[i] = (CUkernel)&kKernels[i];
  return CUDA_SUCCESS;
}
static CUresult KernelGetName(const char** name, CUkernel k) {
  *name = *(const char**)k;
  return CUDA_SUCCESS;
}
/* Only "add" answers (a PTX image's kernels have no layout in the image): 3 pointers + int. */
static CUresult KernelGetParamInfo(CUkernel k, size_t i, size_t* offset, size_t* size) {
  if (strcmp(*(const char**)k, "add") != 0 || i >= 4) return CUDA_ERROR_INVALID_VALUE;
  *offset = 8 * i;
  *size = i == 3 ? 4 : 8;
  return CUDA_SUCCESS;
}
static CUresult KernelGetAttribute(int* v, CUfunction_attribute a, CUkernel k, CUdevice d) {
  (void)k, (void)d;
  if (a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    *v = 1024;
  else if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    *v = g_max_dynamic_smem;
  else
    *v = 0;
  return CUDA_SUCCESS;
}
static CUresult KernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) {
  (void)k, (void)d;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) g_max_dynamic_smem = v;
  return CUDA_SUCCESS;
}

static int g_quiet; /* count launches only: for timing the caller's side */
void fake_set_quiet(int quiet) { g_quiet = quiet; }

static CUresult Record(CUfunction f, const unsigned* dims, unsigned smem, CUstream stream,
                       void** params, const CUlaunchAttribute* attrs, unsigned num_attrs) {
  if ((unsigned long long)dims[3] * dims[4] * dims[5] > 1024 || dims[5] > 64 ||
      smem > (unsigned)g_max_dynamic_smem) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (dims[0] == 7) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (g_quiet) {
    atomic_fetch_add(&g_launches, 1);
    return CUDA_SUCCESS;
  }
  char* p = g_last;
  char* end = g_last + sizeof(g_last);
  p += snprintf(p, end - p,
                "{\"kernel\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
                "\"smem\": %u, \"stream\": %llu, \"attrs\": [",
                *(const char**)f, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], smem,
                (unsigned long long)(size_t)stream);
  for (unsigned i = 0; i < num_attrs; ++i) {
    const unsigned* v = (const unsigned*)&attrs[i].value;
    p += snprintf(p, end - p, "%s[%d, %u, %u, %u]", i ? ", " : "", (int)attrs[i].id, v[0], v[1],
                  v[2]);
  }
  p += snprintf(p, end - p, "], \"params\": [");
  for (int i = 0; i < g_num_params; ++i) {
    p += snprintf(p, end - p, "%s\"", i ? ", " : "");
    for (int b = 0; b < g_param_sizes[i]; ++b) {
      p += snprintf(p, end - p, "%02x", ((const unsigned char*)params[i])[b]);
    }
    p += snprintf(p, end - p, "\"");
  }
  snprintf(p, end - p, "]}");
  atomic_fetch_add(&g_launches, 1);
  return CUDA_SUCCESS;
}

static CUresult LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned smem, CUstream s, void** params,
                             void** extra) {
  (void)extra;
  const unsigned dims[6] = {gx, gy, gz, bx, by, bz};
  return Record(f, dims, smem, s, params, NULL, 0);
}
static CUresult LaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  (void)extra;
  const unsigned dims[6] = {c->gridDimX,  c->gridDimY,  c->gridDimZ,
                            c->blockDimX, c->blockDimY, c->blockDimZ};
  return Record(f, dims, c->sharedMemBytes, c->hStream, params, c->attrs, c->numAttrs);
}

struct Entry {
  const char* name;
  void* fn;
};
static const struct Entry kEntries[] = {
    {"cuGetErrorName", (void*)GetErrorName},
    {"cuGetErrorString", (void*)GetErrorString},
    {"cuDriverGetVersion", (void*)DriverGetVersion},
    {"cuInit", (void*)Init},
    {"cuDeviceGetCount", (void*)DeviceGetCount},
    {"cuDeviceGet", (void*)DeviceGet},
    {"cuDeviceGetAttribute", (void*)DeviceGetAttribute},
    {"cuDevicePrimaryCtxRetain", (void*)PrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", (void*)PrimaryCtxRelease},
    {"cuCtxGetCurrent", (void*)CtxGetCurrent},
    {"cuCtxSetCurrent", (void*)CtxSetCurrent},
    {"cuCtxPushCurrent", (void*)CtxPushCurrent},
    {"cuCtxPopCurrent", (void*)CtxPopCurrent},
    {"cuCtxGetDevice", (void*)CtxGetDevice},
    {"cuStreamGetCtx", (void*)StreamGetCtx},
    {"cuLibraryLoadData", (void*)LibraryLoadData},
    {"cuLibraryUnload", (void*)LibraryUnload},
    {"cuLibraryGetKernel", (void*)LibraryGetKernel},
    {"cuLibraryGetKernelCount", (void*)LibraryGetKernelCount},
    {"cuLibraryEnumerateKernels", (void*)LibraryEnumerateKernels},
    {"cuKernelGetName", (void*)KernelGetName},
    {"cuKernelGetParamInfo", (void*)KernelGetParamInfo},
    {"cuKernelGetAttribute", (void*)KernelGetAttribute},
    {"cuKernelSetAttribute", (void*)KernelSetAttribute},
    {"cuLaunchKernel", (void*)LaunchKernel},
    {"cuLaunchKernelEx", (void*)LaunchKernelEx},
};

__attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char* name, void** fn, int version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i) {
    if (strcmp(name, kEntries[i].name) == 0) {
      *fn = kEntries[i].fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *fn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

/* Exported by name for the extension's device guard (src/python/core/cuda_guard.cc), which binds
 * these with dlsym when a CUDA tensor is passed. */
__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) { return Init(flags); }
__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice* d, int i) {
  return DeviceGet(d, i);
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  return PrimaryCtxRetain(c, d);
}
__attribute__((visibility("default"))) CUresult cuCtxGetCurrent(CUcontext* c) {
  return CtxGetCurrent(c);
}
__attribute__((visibility("default"))) CUresult cuCtxSetCurrent(CUcontext c) {
  return CtxSetCurrent(c);
}
__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult e, const char** s) {
  return GetErrorName(e, s);
}
