// The environment a library asks its caller for: streams (per thread, per device, scoped to
// call frames), the DLPack tensor allocator, signal checks and the frontend's C functions.
#include <mutex>
#include <vector>

#include "frame_api.h"
#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

struct StreamSlot {
  int32_t device_type;
  int32_t device_id;
  TVMFFIStreamHandle stream;
};

// A short list beats a map: a call touches one or two devices.
TVMFFIStreamHandle* Find(std::vector<StreamSlot>& slots, int32_t type, int32_t id) {
  for (StreamSlot& s : slots) {
    if (s.device_type == type && s.device_id == id) return &s.stream;
  }
  return nullptr;
}

struct Frame {
  const TVMFFICubinStreamProvider* provider;
  std::vector<StreamSlot> streams;  // set inside this frame
};

struct ThreadEnv {
  std::vector<StreamSlot> streams;  // set outside any frame
  std::vector<Frame> frames;
  DLPackManagedTensorAllocator allocator = nullptr;
  bool has_allocator = false;
};

thread_local ThreadEnv env;
std::atomic<DLPackManagedTensorAllocator> global_allocator{nullptr};

struct FrontendAPI {
  std::atomic<int (*)()> check_signals{nullptr};
  std::atomic<void* (*)()> gil_ensure{nullptr};
  std::atomic<void (*)(void*)> gil_release{nullptr};
} frontend;

TVMFFIStreamHandle CurrentStream(int32_t type, int32_t id) {
  if (!env.frames.empty()) {
    Frame& f = env.frames.back();
    if (TVMFFIStreamHandle* s = Find(f.streams, type, id)) return *s;
    if (f.provider != nullptr && f.provider->get_stream != nullptr) {
      return f.provider->get_stream(f.provider->ctx, type, id);
    }
  }
  TVMFFIStreamHandle* s = Find(env.streams, type, id);
  return s == nullptr ? nullptr : *s;
}

void AllocSetError(void*, const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
}

}  // namespace
}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFICubinEnvPushFrame(const TVMFFICubinStreamProvider* provider) {
  TVM_FFI_RT_BEGIN();
  env.frames.push_back(Frame{provider, {}});
  TVM_FFI_RT_END();
}

int TVMFFICubinEnvPopFrame(void) {
  TVM_FFI_RT_BEGIN();
  if (env.frames.empty()) Throw("RuntimeError", "TVMFFICubinEnvPopFrame: no call frame is open");
  env.frames.pop_back();
  TVM_FFI_RT_END();
}

int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id, TVMFFIStreamHandle stream,
                       TVMFFIStreamHandle* opt_out_original_stream) {
  TVM_FFI_RT_BEGIN();
  if (opt_out_original_stream != nullptr) {
    *opt_out_original_stream = CurrentStream(device_type, device_id);
  }
  std::vector<StreamSlot>& slots = env.frames.empty() ? env.streams : env.frames.back().streams;
  if (TVMFFIStreamHandle* s = Find(slots, device_type, device_id)) {
    *s = stream;
  } else {
    slots.push_back(StreamSlot{device_type, device_id, stream});
  }
  TVM_FFI_RT_END();
}

TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id) {
  return CurrentStream(device_type, device_id);
}

int TVMFFIEnvSetDLPackManagedTensorAllocator(DLPackManagedTensorAllocator allocator,
                                             int write_to_global_context,
                                             DLPackManagedTensorAllocator* opt_out_original) {
  if (opt_out_original != nullptr) {
    *opt_out_original = write_to_global_context ? global_allocator.load()
                                                : TVMFFIEnvGetDLPackManagedTensorAllocator();
  }
  if (write_to_global_context) {
    global_allocator.store(allocator);
  } else {
    env.allocator = allocator;
    env.has_allocator = allocator != nullptr;
  }
  return 0;
}

DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator(void) {
  return env.has_allocator ? env.allocator : global_allocator.load();
}

int TVMFFIEnvTensorAlloc(DLTensor* prototype, TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  DLPackManagedTensorAllocator alloc = TVMFFIEnvGetDLPackManagedTensorAllocator();
  if (alloc == nullptr) {
    Throw("RuntimeError",
          "TVMFFIEnvTensorAlloc: no tensor allocator is set on this thread or globally "
          "(TVMFFIEnvSetDLPackManagedTensorAllocator)");
  }
  DLManagedTensorVersioned* m = nullptr;
  if (int rc = alloc(prototype, &m, nullptr, &AllocSetError); rc != 0) return rc;
  if (m == nullptr) {
    Throw("RuntimeError", "TVMFFIEnvTensorAlloc: the allocator returned success but no tensor");
  }
  try {
    *out = TensorFromManagedVersioned(m);
  } catch (...) {
    if (m->deleter != nullptr) m->deleter(m);
    throw;
  }
  TVM_FFI_RT_END();
}

int TVMFFIEnvCheckSignals(void) {
  int (*check)() = frontend.check_signals.load();
  if (check == nullptr) return 0;
  // The frontend's check needs its interpreter lock; a C++ thread may not hold it.
  void* (*ensure)() = frontend.gil_ensure.load();
  void (*release)(void*) = frontend.gil_release.load();
  void* state = ensure != nullptr ? ensure() : nullptr;
  int rc = check();
  if (release != nullptr && ensure != nullptr) release(state);
  // Nonzero: the frontend has its own exception pending (-2 is not used: apache returns -1).
  return rc != 0 ? -1 : 0;
}

int TVMFFIEnvRegisterCAPI(const char* name, void* symbol) {
  TVM_FFI_RT_BEGIN();
  std::string_view n(name);
  if (n == "PyErr_CheckSignals") {
    frontend.check_signals.store(reinterpret_cast<int (*)()>(symbol));
  } else if (n == "PyGILState_Ensure") {
    frontend.gil_ensure.store(reinterpret_cast<void* (*)()>(symbol));
  } else if (n == "PyGILState_Release") {
    frontend.gil_release.store(reinterpret_cast<void (*)(void*)>(symbol));
  } else {
    Throw("ValueError", "TVMFFIEnvRegisterCAPI: unknown C API name '" + std::string(n) +
                            "' (expected PyErr_CheckSignals, PyGILState_Ensure or "
                            "PyGILState_Release)");
  }
  TVM_FFI_RT_END();
}

}  // extern "C"
