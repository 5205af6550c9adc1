// The stream around a call from Python, when a CUDA tensor is among the arguments.
//
// On our runtime (it exports the private TVMFFICubinEnvPushFrame/PopFrame, D4) the call runs in
// a frame whose provider asks the tensor's producer for its current stream only if the callee
// calls TVMFFIEnvGetStream, so a call that never asks pays no query. On apache's runtime (no
// frames) the producer's current stream is set eagerly with TVMFFIEnvSetStream before the call
// and the previous one restored after.
#include <dlfcn.h>

#include "arg_types.h"
#include "core.h"
#include "cuda_guard.h"

namespace tvm_ffi_next {

namespace {

// The frame entries of the runtime this module is bound to; NULL on apache's runtime.
struct LazyFrameHook {
  int (*push)(const TVMFFICubinStreamProvider* provider) = nullptr;
  int (*pop)() = nullptr;
  // Set when the runtime's frame stack has this core's layout: frames are pushed and popped
  // inline on it (TVMFFICubinFramePush/Pop); else through push and pop.
  TVMFFICubinFrameStack* (*thread_frames)() = nullptr;
};
LazyFrameHook g_lazy_frame;

// push_raw_stream's entries on this thread: the device, its stream and the one it replaced.
struct RawStream {
  int32_t device_type;
  int32_t device_id;
  void* stream;
  void* previous;
};
thread_local std::vector<RawStream> t_raw_streams;
// Raw streams pushed on all threads (the GIL guards it): while none is, a call skips the
// thread-local lookup, which costs a TLS access per call.
size_t g_raw_stream_count = 0;

// This thread's innermost push_raw_stream entry for the device, or NULL.
const RawStream* FindRawStream(int32_t device_type, int32_t device_id) {
  for (size_t i = t_raw_streams.size(); i-- > 0;) {
    const RawStream& r = t_raw_streams[i];
    if (r.device_type == device_type && r.device_id == device_id) return &r;
  }
  return nullptr;
}

// The producer's current stream for CUDA device `device_id`: 0, or -1 with a Python error set
// (the producer's own, else one naming what failed).
int CurrentWorkStream(const ExchangeApi* api, int32_t device_id, void** stream) {
  if (api->current_work_stream(kDLCUDA, device_id, stream) == 0) return 0;
  if (!PyErr_Occurred()) {
    PyErr_Format(PyExc_RuntimeError,
                 "the tensor producer's current_work_stream failed for cuda:%d without an error",
                 static_cast<int>(device_id));
  }
  return -1;
}

// Asked by the runtime on the calling thread (which holds the GIL: calls keep it) when the
// callee calls TVMFFIEnvGetStream inside the frame. A producer's failure cannot cross the C
// function, so it is kept in the scope and raised after the call.
TVMFFIStreamHandle ProvideStream(void* ctx, int32_t device_type, int32_t device_id) {
  auto* scope = static_cast<StreamScope*>(ctx);
  if (device_type != kDLCUDA || scope->error_type != nullptr) return nullptr;
  // A stream of device d carries no device when it is the default (NULL) one, and a launch on
  // it goes to the current context: asking for d's stream makes d current for the rest of the
  // call, so a callee with tensors of several devices launches each on its own.
  if (scope->guard != nullptr && !scope->guard->Enter(device_id, false)) {
    PyErr_Fetch(&scope->error_type, &scope->error_value, &scope->error_traceback);
    return nullptr;
  }
  if (g_raw_stream_count != 0) {  // use_raw_stream for the device asked wins, as outside calls
    if (const RawStream* r = FindRawStream(kDLCUDA, device_id)) return r->stream;
  }
  if (scope->api == nullptr) return nullptr;  // no producer can say its stream
  void* stream = nullptr;
  if (CurrentWorkStream(scope->api, device_id, &stream) != 0) {
    PyErr_Fetch(&scope->error_type, &scope->error_value, &scope->error_traceback);
    return nullptr;
  }
  return stream;
}

}  // namespace

void InitLazyStream() {
  // The runtime that serves this module's TVMFFI* calls, asked by handle: the module and its
  // runtime may sit in a local scope that RTLD_DEFAULT does not search.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&TVMFFIEnvGetStream), &info) == 0) return;
  void* runtime = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (runtime == nullptr) return;
  auto push = reinterpret_cast<int (*)(const TVMFFICubinStreamProvider*)>(
      dlsym(runtime, "TVMFFICubinEnvPushFrame"));
  auto pop = reinterpret_cast<int (*)()>(dlsym(runtime, "TVMFFICubinEnvPopFrame"));
  auto thread_frames =
      reinterpret_cast<TVMFFICubinFrameStack* (*)()>(dlsym(runtime, "TVMFFICubinEnvThreadFrames"));
  if (thread_frames != nullptr && thread_frames()->layout != TVM_FFI_CUBIN_FRAME_LAYOUT) {
    thread_frames = nullptr;
  }
  if (push != nullptr && pop != nullptr) g_lazy_frame = LazyFrameHook{push, pop, thread_frames};
  dlclose(runtime);  // RTLD_NOLOAD took a reference; the module's own link keeps it loaded
}

bool LazyStreamEnabled() { return g_lazy_frame.push != nullptr; }

bool RawStreamPushed(int32_t device_type, int32_t device_id) {
  return FindRawStream(device_type, device_id) != nullptr;
}

int CallStream(const ExchangeApi* api, int32_t device_id, void** stream) {
  *stream = nullptr;
  if (g_raw_stream_count != 0 && RawStreamPushed(kDLCUDA, device_id)) {
    *stream = TVMFFIEnvGetStream(kDLCUDA, device_id);
    return 0;
  }
  if (api == nullptr || api->current_work_stream == nullptr) return 0;
  return CurrentWorkStream(api, device_id, stream);
}

// push_raw_stream(device_type, device_id, stream): the runtime's stream for the device on this
// thread until pop_raw_stream; calls keep it instead of asking the tensors' framework.
PyObject* PushRawStream(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_Format(PyExc_TypeError, "push_raw_stream() takes (device_type, device_id, stream)");
    return nullptr;
  }
  const long device_type = PyLong_AsLong(args[0]);
  const long device_id = PyLong_AsLong(args[1]);
  void* stream = PyLong_AsVoidPtr(args[2]);
  if (PyErr_Occurred()) return nullptr;
  RawStream entry{static_cast<int32_t>(device_type), static_cast<int32_t>(device_id), stream,
                  nullptr};
  if (TVMFFIEnvSetStream(entry.device_type, entry.device_id, stream, &entry.previous) != 0) {
    RaiseCallError(-1, "push_raw_stream", nullptr);
    return nullptr;
  }
  t_raw_streams.push_back(entry);
  ++g_raw_stream_count;
  Py_RETURN_NONE;
}

PyObject* PopRawStream(PyObject*, PyObject*) {
  if (t_raw_streams.empty()) {
    PyErr_SetString(PyExc_ValueError, "pop_raw_stream: no raw stream is set");
    return nullptr;
  }
  const RawStream entry = t_raw_streams.back();
  t_raw_streams.pop_back();
  --g_raw_stream_count;
  if (TVMFFIEnvSetStream(entry.device_type, entry.device_id, entry.previous, nullptr) != 0) {
    RaiseCallError(-1, "pop_raw_stream", nullptr);
    return nullptr;
  }
  Py_RETURN_NONE;
}

// The stream a call on this thread sees for the device: the runtime's (a pushed raw stream).
PyObject* GetRawStream(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "get_raw_stream() takes (device_type, device_id)");
    return nullptr;
  }
  const long device_type = PyLong_AsLong(args[0]);
  const long device_id = PyLong_AsLong(args[1]);
  if (PyErr_Occurred()) return nullptr;
  const auto type = static_cast<int32_t>(device_type);
  const auto id = static_cast<int32_t>(device_id);
  if (type == kDLCUDA && !RawStreamPushed(type, id)) {
    // A call with a torch CUDA tensor runs on torch's current stream (StreamScope::Enter):
    // while torch is loaded, that is the stream a call would see.
    PyObject* name = PyUnicode_FromString("torch");
    PyObject* torch = name != nullptr ? PyImport_GetModule(name) : nullptr;
    Py_XDECREF(name);
    PyObject* tensor = torch != nullptr ? PyObject_GetAttrString(torch, "Tensor") : nullptr;
    Py_XDECREF(torch);
    PyErr_Clear();
    const TypeEntry* entry = tensor != nullptr && PyType_Check(tensor)
                                 ? LookupType(reinterpret_cast<PyTypeObject*>(tensor))
                                 : nullptr;
    Py_XDECREF(tensor);
    if (entry != nullptr && entry->api != nullptr && entry->api->current_work_stream != nullptr) {
      void* stream = nullptr;
      if (CurrentWorkStream(entry->api, id, &stream) != 0) return nullptr;
      return PyLong_FromVoidPtr(stream);
    }
  }
  return PyLong_FromVoidPtr(TVMFFIEnvGetStream(type, id));
}

int StreamScope::Enter(const ArgFrame& frame, CallThreadState* state, CudaDeviceGuard* call_guard) {
  if (frame.cuda_device < 0) return 0;  // CPU-only calls: nothing to do, no query
  api = frame.stream_api;
  // Every call with a CUDA tensor gets a frame, also one whose producer cannot say its stream
  // (a __dlpack__ tensor's: the provider answers raw streams, else NULL): a callee's query must
  // never reach the frame, and the device guard, of the call this one is nested in.
  if (g_lazy_frame.push != nullptr) {
    guard = call_guard;
    provider = TVMFFICubinStreamProvider{this, &ProvideStream};
    if (g_lazy_frame.thread_frames != nullptr) {
      if (state->frames == nullptr) state->frames = g_lazy_frame.thread_frames();
      frames = state->frames;
    }
    const int rc = frames != nullptr ? TVMFFICubinFramePush(frames, &provider, g_lazy_frame.push)
                                     : g_lazy_frame.push(&provider);
    if (rc != 0) {
      RaiseCallError(-1, "TVMFFICubinEnvPushFrame", nullptr);
      return -1;
    }
    lazy = active = true;
    return 0;
  }
  if (api == nullptr) return 0;  // no producer can say its stream
  // A raw stream pushed for the device is the one the call sees (use_raw_stream).
  if (g_raw_stream_count != 0 && RawStreamPushed(kDLCUDA, frame.cuda_device)) return 0;
  void* stream = nullptr;
  if (CurrentWorkStream(api, frame.cuda_device, &stream) != 0) return -1;
  if (TVMFFIEnvSetStream(kDLCUDA, frame.cuda_device, stream, &previous) != 0) {
    RaiseCallError(-1, "TVMFFIEnvSetStream", nullptr);
    return -1;
  }
  device_id = frame.cuda_device;
  active = true;
  return 0;
}

int StreamScope::Leave() {
  if (!active) return 0;
  active = false;
  if (lazy) {
    const int rc =
        frames != nullptr ? TVMFFICubinFramePop(frames, g_lazy_frame.pop) : g_lazy_frame.pop();
    if (rc != 0) {  // only when no frame is open: the push above opened one
      TVMFFIObjectHandle error = nullptr;
      TVMFFIErrorMoveFromRaised(&error);
      DecRef(static_cast<TVMFFIObject*>(error));
    }
    if (error_type == nullptr) return 0;
    PyErr_Restore(error_type, error_value, error_traceback);
    error_type = error_value = error_traceback = nullptr;
    return -1;
  }
  if (TVMFFIEnvSetStream(kDLCUDA, device_id, previous, nullptr) != 0) {
    TVMFFIObjectHandle error = nullptr;  // restoring a slot the call set cannot fail in practice
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
  }
  return 0;
}

}  // namespace tvm_ffi_next
