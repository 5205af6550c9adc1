// The environment a library asks its caller for: streams (per thread, per device, scoped to
// call frames), the DLPack tensor allocator, signal checks and the frontend's C functions.
#include <cstdlib>
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

// Call frames are pushed and popped around every call from Python with a CUDA tensor, and read
// by every TVMFFIEnvGetStream: their state is plain data (TVMFFICubinFrameStack, which the Python
// core also pushes and pops inline) in a constant-initialised thread_local, which compiled code
// reaches without the per-access initialisation check that a thread_local with constructors
// (ThreadEnv below) costs. Up to TVM_FFI_CUBIN_INLINE_FRAMES nest without an allocation; streams
// set inside a frame (rare: a callee's explicit choice) live in ThreadEnv.
constexpr uint32_t kInlineFrames = TVM_FFI_CUBIN_INLINE_FRAMES;
using FrameStack = TVMFFICubinFrameStack;

thread_local FrameStack frames{TVM_FFI_CUBIN_FRAME_LAYOUT, 0, 0, 0, nullptr, {}};

// This thread's frames, its address computed once per call: GCC otherwise calls
// __tls_get_addr again after each branch.
inline FrameStack& Frames() {
  FrameStack* f = &frames;
  asm("" : "+r"(f));
  return *f;
}

const TVMFFICubinStreamProvider*& FrameAt(FrameStack& f, uint32_t index) {
  return index < kInlineFrames ? f.inline_frames[index] : f.heap[index - kInlineFrames];
}

// A stream set inside the frame at depth `frame` (1: the outermost).
struct FramedStream {
  uint32_t frame;
  StreamSlot slot;
};

struct ThreadEnv {
  std::vector<StreamSlot> streams;   // set outside any frame
  std::vector<FramedStream> framed;  // set inside open frames, the innermost frame's last
  DLPackManagedTensorAllocator allocator = nullptr;
  bool has_allocator = false;
  ~ThreadEnv() {  // the deep frames' array, if the thread needed one
    std::free(frames.heap);
    frames.heap = nullptr;  // a later thread_local destructor's push grows a new one
    frames.heap_capacity = 0;
  }
};

thread_local ThreadEnv env;
std::atomic<DLPackManagedTensorAllocator> global_allocator{nullptr};

struct FrontendAPI {
  std::atomic<int (*)()> check_signals{nullptr};
  std::atomic<void* (*)()> gil_ensure{nullptr};
  std::atomic<void (*)(void*)> gil_release{nullptr};
} frontend;

// The stream set inside the frame at depth `frame` for the device, or NULL.
TVMFFIStreamHandle* FindFramed(uint32_t frame, int32_t type, int32_t id) {
  for (size_t i = env.framed.size(); i-- > 0;) {
    FramedStream& f = env.framed[i];
    if (f.frame != frame) break;  // the innermost frame's entries end here
    if (f.slot.device_type == type && f.slot.device_id == id) return &f.slot.stream;
  }
  return nullptr;
}

TVMFFIStreamHandle CurrentStream(int32_t type, int32_t id) {
  FrameStack& f = Frames();
  if (f.depth != 0) {
    if (f.framed_streams != 0) {
      if (TVMFFIStreamHandle* s = FindFramed(f.depth, type, id)) return *s;
    }
    const TVMFFICubinStreamProvider* provider = FrameAt(f, f.depth - 1);
    if (provider != nullptr && provider->get_stream != nullptr) {
      return provider->get_stream(provider->ctx, type, id);
    }
  }
  TVMFFIStreamHandle* s = Find(env.streams, type, id);
  return s == nullptr ? nullptr : *s;
}

// 0, or -1 with a MemoryError.
__attribute__((noinline, cold)) int GrowFrames() {
  TVM_FFI_RT_BEGIN();
  const uint32_t capacity = frames.heap_capacity == 0 ? 64 : 2 * frames.heap_capacity;
  void* grown = std::realloc(static_cast<void*>(frames.heap), capacity * sizeof(*frames.heap));
  if (grown == nullptr) throw std::bad_alloc();
  frames.heap = static_cast<const TVMFFICubinStreamProvider**>(grown);
  frames.heap_capacity = capacity;
  static_cast<void>(&env);  // constructs this thread's ThreadEnv, whose destructor frees the array
  TVM_FFI_RT_END();
}

void AllocSetError(void*, const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
}

}  // namespace
}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFICubinEnvPushFrame(const TVMFFICubinStreamProvider* provider) {
  FrameStack& f = Frames();
  if (f.depth >= kInlineFrames + f.heap_capacity) {
    if (int rc = GrowFrames(); rc != 0) return rc;
  }
  FrameAt(f, f.depth++) = provider;
  return 0;
}

TVMFFICubinFrameStack* TVMFFICubinEnvThreadFrames(void) { return &Frames(); }

int TVMFFICubinEnvPopFrame(void) {
  FrameStack& f = Frames();
  if (f.depth == 0) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "TVMFFICubinEnvPopFrame: no call frame is open");
    return -1;
  }
  if (f.framed_streams != 0) {  // forget the streams set inside this frame
    while (!env.framed.empty() && env.framed.back().frame == f.depth) {
      env.framed.pop_back();
      --f.framed_streams;
    }
  }
  --f.depth;
  return 0;
}

int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id, TVMFFIStreamHandle stream,
                       TVMFFIStreamHandle* opt_out_original_stream) {
  TVM_FFI_RT_BEGIN();
  if (opt_out_original_stream != nullptr) {
    *opt_out_original_stream = CurrentStream(device_type, device_id);
  }
  if (frames.depth == 0) {
    if (TVMFFIStreamHandle* s = Find(env.streams, device_type, device_id)) {
      *s = stream;
    } else {
      env.streams.push_back(StreamSlot{device_type, device_id, stream});
    }
  } else if (TVMFFIStreamHandle* s = FindFramed(frames.depth, device_type, device_id)) {
    *s = stream;
  } else {
    env.framed.push_back(FramedStream{frames.depth, StreamSlot{device_type, device_id, stream}});
    ++frames.framed_streams;
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
