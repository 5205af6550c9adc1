// The only place the extension talks to the CUDA driver.
#include "cuda_guard.h"

#include <Python.h>
#include <dlfcn.h>

#include <vector>

namespace tvm_ffi_next {
namespace {

// Driver types reduced to what their ABI is: CUresult is an int enum, CUcontext a pointer,
// CUdevice an int.
using CUresult = int;
using CUcontext = void*;
using CUdevice = int;

struct Driver {
  CUresult (*cuInit)(unsigned int flags) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext* ctx) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  bool ok = false;
  const char* load_error = nullptr;
  // Primary context per device ordinal, retained once and kept for the process.
  std::vector<CUcontext> primary;
};

template <typename T>
bool Bind(void* lib, const char* name, T* fn) {
  *fn = reinterpret_cast<T>(dlsym(lib, name));
  return *fn != nullptr;
}

// Loaded on the first CUDA tensor argument; the GIL serialises this.
Driver* GetDriver() {
  static Driver* driver = nullptr;
  if (driver != nullptr) return driver;
  driver = new Driver();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    driver->load_error = "libcuda.so.1 could not be loaded";
    return driver;
  }
  if (!Bind(lib, "cuInit", &driver->cuInit) || !Bind(lib, "cuDeviceGet", &driver->cuDeviceGet) ||
      !Bind(lib, "cuDevicePrimaryCtxRetain", &driver->cuDevicePrimaryCtxRetain) ||
      !Bind(lib, "cuCtxGetCurrent", &driver->cuCtxGetCurrent) ||
      !Bind(lib, "cuCtxSetCurrent", &driver->cuCtxSetCurrent) ||
      !Bind(lib, "cuGetErrorName", &driver->cuGetErrorName)) {
    driver->load_error = "libcuda.so.1 lacks a driver API function";
    return driver;
  }
  // cuCtxGetCurrent answers CUDA_ERROR_NOT_INITIALIZED before cuInit; a producer's CUDA tensor
  // does not imply that the process initialised the driver.
  if (driver->cuInit(0) != 0) {
    driver->load_error = "cuInit failed (no usable CUDA device)";
    return driver;
  }
  driver->ok = true;
  return driver;
}

bool SetDriverError(Driver* d, const char* what, CUresult err, int32_t device) {
  const char* name = nullptr;
  if (d->cuGetErrorName == nullptr || d->cuGetErrorName(err, &name) != 0) name = nullptr;
  PyErr_Format(PyExc_RuntimeError, "%s for CUDA device %d failed: %s (%d)", what,
               static_cast<int>(device), name ? name : "unknown CUDA error", static_cast<int>(err));
  return false;
}

}  // namespace

bool CudaDeviceGuard::Switch(int32_t device, bool require_driver) {
  Driver* d = GetDriver();
  if (!d->ok) {
    if (!require_driver) return true;
    PyErr_Format(PyExc_RuntimeError,
                 "a CUDA tensor was passed, but the CUDA driver is unusable: %s", d->load_error);
    return false;
  }
  if (device < 0) {
    PyErr_Format(PyExc_ValueError, "invalid CUDA device id %d in a tensor argument",
                 static_cast<int>(device));
    return false;
  }
  CUcontext current = nullptr;
  CUresult err = d->cuCtxGetCurrent(&current);
  if (err != 0) return SetDriverError(d, "cuCtxGetCurrent", err, device);
  if (static_cast<size_t>(device) < d->primary.size() && d->primary[device] == current &&
      current != nullptr) {
    return true;  // the common case: the tensor's device is already current
  }
  if (static_cast<size_t>(device) >= d->primary.size()) d->primary.resize(device + 1, nullptr);
  if (d->primary[device] == nullptr) {
    CUdevice handle = 0;  // GetDriver initialised the driver
    if ((err = d->cuDeviceGet(&handle, device)) != 0) {
      return SetDriverError(d, "cuDeviceGet", err, device);
    }
    CUcontext ctx = nullptr;
    if ((err = d->cuDevicePrimaryCtxRetain(&ctx, handle)) != 0) {
      return SetDriverError(d, "cuDevicePrimaryCtxRetain", err, device);
    }
    d->primary[device] = ctx;
  }
  if (d->primary[device] == current) return true;
  if ((err = d->cuCtxSetCurrent(d->primary[device])) != 0) {
    return SetDriverError(d, "cuCtxSetCurrent", err, device);
  }
  if (!switched_) saved_ = current;  // a second switch in one call keeps the caller's context
  switched_ = true;
  return true;
}

void CudaDeviceGuard::Restore() {
  // Cannot fail for a context that was current a moment ago; nothing useful to report.
  GetDriver()->cuCtxSetCurrent(saved_);
  switched_ = false;
}

}  // namespace tvm_ffi_next
