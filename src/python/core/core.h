/*
 * The Python core on the tvm-ffi C ABI (16-byte TVMFFIAny): shared declarations.
 *
 * The core talks to the runtime only through the C functions of c_api.h / c_env_api.h and the
 * runtime's global functions ("ffi.Array", "ffi.ModuleLoadFromFile", ...), so it runs against
 * any libtvm_ffi.so of this ABI. Types are plain CPython heap types (vectorcall, no pybind11
 * dispatch on the call path); pybind11 only creates the module.
 */
#ifndef TVM_FFI_PYCORE_NEXT_CORE_H_
#define TVM_FFI_PYCORE_NEXT_CORE_H_

#include <Python.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

// The runtime's private call-frame entries (D4); resolved at init, absent on apache's runtime.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "../../lib/frame_api.h"

namespace tvm_ffi_next {

// ---- the DLPack C exchange API (`type(obj).__dlpack_c_exchange_api__`) ----------------------
struct ExchangeApiHeader {
  DLPackVersion version;
  ExchangeApiHeader* prev_api;  // an older table of the same producer, or NULL
};

// Every producer function returns 0, or -1 with a Python error set.
struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                  void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned* tensor, void** out);
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  int (*current_work_stream)(DLDeviceType device_type, int32_t device_id, void** out_stream);
};

// ---- object helpers ---------------------------------------------------------------------------
constexpr size_t kCellOffset = sizeof(TVMFFIObject);  // every cell follows the 24-byte header

template <typename Cell>
inline Cell* CellOf(TVMFFIObject* obj) {
  return reinterpret_cast<Cell*>(reinterpret_cast<char*>(obj) + kCellOffset);
}

inline void DecRef(TVMFFIObject* obj) {
  if (obj != nullptr) TVMFFIObjectDecRef(obj);
}

inline bool IsObjectIndex(int32_t index) { return index >= kTVMFFIStaticObjectBegin; }

// A vector that keeps its first N elements inline: a call's temporaries without malloc.
// Trivially constructed (no std::vector to build and destroy on every call).
template <typename T, int N>
class SmallVec {
 public:
  SmallVec() = default;
  SmallVec(const SmallVec&) = delete;
  SmallVec& operator=(const SmallVec&) = delete;
  ~SmallVec() {
    if (heap_ != nullptr) std::free(heap_);
  }
  void push_back(const T& v) {
    if (size_ < N) {
      inline_[size_++] = v;
      return;
    }
    if (size_ - N == heap_capacity_) {
      const int capacity = heap_capacity_ == 0 ? N : 2 * heap_capacity_;
      auto* grown = static_cast<T*>(std::realloc(heap_, sizeof(T) * capacity));
      if (grown == nullptr) std::abort();  // out of memory while holding references
      heap_ = grown;
      heap_capacity_ = capacity;
    }
    heap_[size_++ - N] = v;
  }
  int size() const { return size_; }
  T& operator[](int i) { return i < N ? inline_[i] : heap_[i - N]; }
  void clear() { size_ = 0; }

 private:
  T inline_[N];
  T* heap_ = nullptr;
  int heap_capacity_ = 0;
  int size_ = 0;
};

// ---- Python types -----------------------------------------------------------------------------
struct FunctionObject {
  PyObject ob_base;  // PyObject_HEAD
  vectorcallfunc vectorcall;
  TVMFFIObject* handle;     // a FunctionObj (strong reference), or NULL: an empty Function
  uint64_t view_params;     // bit i: parameter i is a DLTensor* (TensorView) per the metadata
  uint64_t pointer_params;  // bit i: parameter i is a void* (takes addresses up to 2**64 - 1)
  PyObject* name;           // str or NULL: for messages
  PyObject* library;        // str or NULL: the library the function came from
  PyObject* signature;      // str or NULL: "add(int, int) -> int", from the export's metadata
  int num_args;             // from the metadata; -1: not stated (any number)
  PyObject* doc;            // an assigned __doc__ (any object: the type takes part in GC), or NULL
};

// tvm_ffi_next.Object and its subclasses (Tensor, Module): one owned handle.
struct ObjectWrapper {
  PyObject ob_base;  // PyObject_HEAD
  TVMFFIObject* handle;
  PyObject* extra;      // Module: the path it was loaded from; else NULL
  PyObject* functions;  // Module: functions looked up so far (a dict), or NULL
};

extern PyTypeObject* g_function_type;
extern PyTypeObject* g_object_type;
extern PyTypeObject* g_tensor_type;
extern PyTypeObject* g_module_type;

int InitFunctionType(PyObject* module);
// The wrapper types' specs (tensor_type.cc, module_type.cc), made by InitObjectTypes.
extern PyType_Spec kTensorSpec;
extern PyType_Spec kModuleSpec;
/*! \brief Object(): an unconstructed object of a subclass (object_classes.cc). */
PyObject* ObjectNew(PyTypeObject* type, PyObject* args, PyObject* kwargs);
/*! \brief Attributes, then the type's registered methods (bound to the object). */
PyObject* ObjectGetAttr(PyObject* self, PyObject* name);
/*! \brief Assigning a registered field goes through its setter; other names as usual. */
int ObjectSetAttr(PyObject* self, PyObject* name, PyObject* value);
/*! \brief Object.__ffi_init__(*args): constructs through the type's "__ffi_init__". */
PyObject* FfiInit(PyObject* self, PyObject* const* args, Py_ssize_t nargs);
/*! \brief _register_object_class(type_key, cls). */
PyObject* RegisterObjectClass(PyObject* module, PyObject* const* args, Py_ssize_t nargs);
// Function's signature attributes (function_info.cc).
extern PyGetSetDef kFunctionInfoGetSet[];
/*! \brief The signature text: the metadata's, else the name. New reference. */
PyObject* FunctionSignatureText(PyObject* function);
/*! \brief Reads an export's metadata JSON into the function: TensorView parameters,
 *  signature text and argument count. Metadata that cannot be read only costs them. */
void ReadFunctionMetadata(PyObject* function, PyObject* metadata);
int InitObjectTypes(PyObject* module);

/*! \brief A Function taking ownership of `handle` (a FunctionObj); NULL with an error set. */
PyObject* NewFunction(TVMFFIObject* handle, PyObject* name, PyObject* library);
/*! \brief An Object/Tensor/Module wrapper taking ownership of `handle`. */
PyObject* NewObjectWrapper(PyTypeObject* type, TVMFFIObject* handle);
/*! \brief The handle behind one of our wrappers (Function or Object), or NULL. */
TVMFFIObject* WrapperHandle(PyObject* obj);
/*! \brief A wrapper of the class registered for the object's type (or an ancestor's); takes
 *  ownership of `handle`. */
PyObject* WrapObject(TVMFFIObject* handle);
/*! \brief The Module class (a registered subclass of Module, else Module); borrowed. */
PyTypeObject* ModuleClass();

// ---- calls ------------------------------------------------------------------------------------
struct PooledTensor;

/*! \brief State of one conversion of Python values to TVMFFIAny views: what to release after. */
struct ArgFrame {
  const char* name = "function";  // for messages: "<name>() argument <position>"
  PyObject* name_obj = nullptr;   // when set, the name (read only for messages)
  int position = 0;
  uint64_t view_params = 0;
  uint64_t pointer_params = 0;
  SmallVec<TVMFFIObject*, 4> owned;  // strings, arrays, callbacks made for this call
  SmallVec<PyObject*, 4> keep;       // Python objects to drop after the call
  // Tensors passed as TensorObjs, and their Python objects (borrowed: the call holds them).
  SmallVec<PooledTensor*, 8> tensors;
  SmallVec<PyObject*, 8> tensor_sources;
  SmallVec<const ExchangeApi*, 8> tensor_producers;  // their exchange APIs
  // Tensors of __dlpack__ producers (owning objects, in `owned`) and their Python objects.
  SmallVec<TVMFFIObject*, 4> dlpack_tensors;
  SmallVec<PyObject*, 4> dlpack_sources;
  const ExchangeApi* tensor_api = nullptr;  // first exchange API able to wrap a tensor result
  int32_t cuda_device = -1;                 // first CUDA tensor argument's device
  // The first CUDA tensor argument's producer that can say its current stream (its exchange
  // API has current_work_stream); NULL when none can.
  const ExchangeApi* stream_api = nullptr;
  // Containers holding containers, converted once per call however often they are reached
  // (x = [x, x] nested n deep is n arrays, not 2**n); made on the first such container.
  std::unordered_map<PyObject*, TVMFFIObject*>* converted = nullptr;

  ArgFrame() = default;
  ArgFrame(const ArgFrame&) = delete;
  ArgFrame& operator=(const ArgFrame&) = delete;
  ~ArgFrame() { Release(); }
  /*! \brief After the call: pool or promote tensors, drop temporaries. Keeps a pending error. */
  void Release();
};

/*! \brief "f() argument 2", or the frame's name for a value that is no argument (a result). */
const char* ArgLabel(const ArgFrame* frame);

/*! \brief Converts one argument into `out`; `view` is a stack DLTensor for a TensorView. */
int ConvertArg(ArgFrame* frame, PyObject* obj, TVMFFIAny* out, DLTensor* view, int depth);

/*!
 * \brief Converts an owned value to Python (the reference is consumed, also on failure).
 *  `frame` (may be NULL) gives the call's tensors: a result that is one of them comes back as
 *  the caller's object; tensors come back as the arguments' framework.
 */
PyObject* ToPython(TVMFFIAny* value, ArgFrame* frame);
// tvm_ffi.dtype (importing tvm_ffi._dtype, which registers it, on first use), or nullptr: the
// class of DLDataType results.
PyTypeObject* DTypeClass();
// tvm_ffi.Device (importing tvm_ffi._stream on first use), or nullptr: the class of DLDevice
// results.
PyObject* DeviceClass();

/*! \brief Converts a borrowed view (a callback's argument) to Python. */
PyObject* ViewToPython(const TVMFFIAny* view);

/*! \brief Raises the Python exception for a failed safe call (rc -1 or -2). */
void RaiseCallError(int rc, const char* name, PyObject* library);

/*! \brief The Python exception for an ErrorObj (not raised); consumes nothing. */
PyObject* ExceptionFromError(TVMFFIObject* error, const char* name, PyObject* library);

/*! \brief A global function by name, or NULL (no error) when absent. New reference. */
TVMFFIObject* GetGlobal(const char* name);

/*! \brief Calls a FunctionObj with views; 0 or -1 with a Python error set. */
int CallHandle(TVMFFIObject* func, const char* name, const TVMFFIAny* args, int32_t n,
               TVMFFIAny* result);

/*! \brief A Function wrapping a Python callable (TVMFFIFunctionCreate); new reference. */
TVMFFIObject* FunctionFromCallable(PyObject* callable);

/*! \brief An ffi.OpaquePyObject holding `obj` (TVMFFIObjectCreateOpaque); new reference. */
TVMFFIObject* OpaqueFromPython(PyObject* obj);

// ---- tensors (tensor_pool.cc) -----------------------------------------------------------------
/*! \brief A TensorObj for a framework tensor; pooled when it came through the exchange API. */
int TensorObjectArg(ArgFrame* frame, const ExchangeApi* api, PyObject* obj, TVMFFIAny* out);
/*! \brief ValueError naming the argument for a producer's corrupt DLTensor (ndim, shape). */
int CheckProducerTensor(const ArgFrame* frame, PyObject* obj, const DLTensor& t);
/*! \brief Returns a still-unique pooled tensor to the pool, else makes it own its memory. */
void FinishPooledTensor(PooledTensor* t, PyObject* source, const ExchangeApi* api);
/*! \brief The DLTensor of one of our TensorObjs. */
TVMFFIObject* PooledTensorHandle(PooledTensor* t);
/*! \brief A tensor result as a framework tensor (api's) or a Tensor wrapper; consumes it. */
PyObject* TensorToPython(TVMFFIObject* tensor, const ExchangeApi* api);

// ---- the stream around a call (env.cc) --------------------------------------------------------
class CudaDeviceGuard;  // cuda_guard.h
/*!
 * \brief The core's per-thread state of the call in progress, one thread-local for all of it:
 *  a call with tensors reaches it once (a thread-local access in a dlopen'd library is a
 *  __tls_get_addr call).
 */
struct CallThreadState {
  const ExchangeApi* alloc_api;   // TVMFFIEnvTensorAlloc's producer (AllocScope)
  TVMFFICubinFrameStack* frames;  // our runtime's frame stack of this thread, once asked
};
extern thread_local CallThreadState t_call_state;
inline CallThreadState* CallState() {
  CallThreadState* s = &t_call_state;
  asm("" : "+r"(s));  // one address computation per call, not one per use
  return s;
}
struct StreamScope {
  bool active = false;
  bool lazy = false;                        // a frame was pushed (our runtime)
  int32_t device_id = 0;                    // eager: the device whose stream was set
  void* previous = nullptr;                 // eager: its stream before the call
  const ExchangeApi* api = nullptr;         // the producer asked for the stream
  TVMFFICubinStreamProvider provider{};     // lazy: handed to the runtime for the call
  TVMFFICubinFrameStack* frames = nullptr;  // lazy: the thread's stack it was pushed on
  CudaDeviceGuard* guard = nullptr;         // lazy: the call's, entered per device asked
  PyObject* error_type = nullptr;           // lazy: the producer's failure, raised after the call
  PyObject* error_value = nullptr;
  PyObject* error_traceback = nullptr;
  StreamScope() = default;
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  ~StreamScope() {
    Py_XDECREF(error_type);
    Py_XDECREF(error_value);
    Py_XDECREF(error_traceback);
  }
  // 0, or -1 with a Python error set. `state`: the thread's (CallState()); `guard`: the
  // call's device guard, which a callee's stream query for a device moves to that device.
  int Enter(const ArgFrame& frame, CallThreadState* state, CudaDeviceGuard* guard);
  int Leave();  // 0, or -1 with the provider's Python error set
};
/*! \brief Finds our runtime's frame entries (module init); absent: the eager path. */
void InitLazyStream();
/*! \brief Installs the core's TVMFFIEnvTensorAlloc allocator process-wide (module init). */
void InitHostAllocator();
/*!
 * \brief For the scope of a call: TVMFFIEnvTensorAlloc allocates through `api` (the producer of
 *  the call's tensors); a call without one allocates as its caller does (from Python: in host
 *  memory), as does a producer without an allocator.
 */
class AllocScope {
 public:
  // A call without framework tensors changes nothing (`state` is NULL then: no thread-local
  // access on that path): it allocates as its caller does.
  AllocScope(CallThreadState* state, const ExchangeApi* api)
      : state_(api != nullptr ? state : nullptr) {
    if (state_ != nullptr) {
      previous_ = state_->alloc_api;
      state_->alloc_api = api;
    }
  }
  ~AllocScope() {
    if (state_ != nullptr) state_->alloc_api = previous_;
  }
  AllocScope(const AllocScope&) = delete;
  AllocScope& operator=(const AllocScope&) = delete;

 private:
  CallThreadState* state_;
  const ExchangeApi* previous_ = nullptr;
};
/*! \brief Whether calls run in lazy stream frames (our runtime). */
bool LazyStreamEnabled();
/*! \brief Whether push_raw_stream set this thread's stream for the device (the call keeps it). */
bool RawStreamPushed(int32_t device_type, int32_t device_id);
/*!
 * \brief The stream a call with a CUDA tensor of device `device_id` (from producer `api`, may be
 *  NULL) sees through TVMFFIEnvGetStream: a pushed raw stream, else the producer's current
 *  stream, else NULL (tvm_ffi.cuda's launches with stream=None). 0, or -1 with an error set.
 */
int CallStream(const ExchangeApi* api, int32_t device_id, void** stream);

// ---- errors (errors.cc) -----------------------------------------------------------------------
/*! \brief Replaces the kind -> class table consulted before the builtins (a dict, or None). */
PyObject* SetErrorTable(PyObject* table);
/*! \brief Adds kind -> cls (both ways); tvm_ffi.register_error's entry point. */
PyObject* RegisterError(PyObject* kind, PyObject* cls);
/*! \brief The class an error of `kind` is raised as. */
PyObject* ErrorClass(PyObject* kind);
/*! \brief Hands the pending Python exception to the runtime's error slot; returns -1. */
int SetRaisedFromPython();

}  // namespace tvm_ffi_next

#endif  // TVM_FFI_PYCORE_NEXT_CORE_H_
