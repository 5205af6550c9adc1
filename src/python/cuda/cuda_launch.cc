// tvm_ffi.cuda.CubinKernel and its launcher: the hot path of a Python launch. Arguments are
// packed against the kernel's cached layout into a stack buffer, the stream is found as an
// exported function's TVMFFIEnvGetStream finds it, and cubin_launcher.h launches.
#include "cuda_launch.h"

#include <structmember.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/cuda_guard.h"

namespace tvm_ffi_next {
namespace cuda {
namespace {

namespace detail = tvm::ffi::details;

// Parameter buffers up to this size live on the stack (the classic 4 KiB parameter limit).
constexpr size_t kInlineBuffer = 4096;
constexpr Py_ssize_t kInlineArgs = 64;

struct KernelData {
  std::shared_ptr<const tvm::ffi::CubinKernel> kernel;
  Layout layout;
  std::string name;
  std::string module_label;  // 'module "k.cubin"', 'module <1234-byte image>'
  std::string who;           // 'kernel "add" in module <1234-byte image>', the prefix of messages
};

struct KernelObject {
  PyObject_HEAD KernelData* data;
};

struct LauncherObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  KernelObject* kernel;  // strong reference
  uint32_t grid[3];
  uint32_t block[3];
  CUstream stream;
  bool has_stream;
  uint32_t shared_mem;
};

PyTypeObject* g_kernel_type = nullptr;
PyTypeObject* g_launcher_type = nullptr;
PyObject* g_str_packed = nullptr;  // "_packed", LaunchConfig's attribute tuple
PyObject* g_str_cuda_stream_proto = nullptr;
PyObject* g_str_cuda_stream = nullptr;
PyObject* g_str_ptr = nullptr;

PyObject* Intern(const char* s, PyObject** slot) {
  if (*slot == nullptr) *slot = PyUnicode_InternFromString(s);
  return *slot;
}

// An int handle, an object with __cuda_stream__ (returns (version, handle)), a torch stream
// (.cuda_stream) or a CuPy stream (.ptr). None leaves *has false.
bool ParseStream(PyObject* obj, bool* has, CUstream* out) {
  *has = false;
  *out = nullptr;
  if (obj == nullptr || obj == Py_None) return true;
  PyObject* handle = nullptr;
  if (PyLong_Check(obj) && !PyBool_Check(obj)) {
    Py_INCREF(obj);
    handle = obj;
  } else {
    PyObject* proto = PyObject_GetAttr(obj, Intern("__cuda_stream__", &g_str_cuda_stream_proto));
    if (proto != nullptr) {
      PyObject* pair = PyObject_CallNoArgs(proto);
      Py_DECREF(proto);
      if (pair == nullptr) return false;
      if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
        handle = PyTuple_GET_ITEM(pair, 1);
        Py_INCREF(handle);
      }
      Py_DECREF(pair);
    } else {
      PyErr_Clear();
      for (PyObject** slot : {&g_str_cuda_stream, &g_str_ptr}) {
        const char* name = slot == &g_str_cuda_stream ? "cuda_stream" : "ptr";
        handle = PyObject_GetAttr(obj, Intern(name, slot));
        if (handle != nullptr) break;
        PyErr_Clear();
      }
    }
  }
  if (handle == nullptr || !PyLong_Check(handle)) {
    Py_XDECREF(handle);
    PyErr_Format(PyExc_TypeError,
                 "stream must be an int handle, an object with __cuda_stream__, or a torch or "
                 "CuPy stream (got %s)",
                 Py_TYPE(obj)->tp_name);
    return false;
  }
  void* ptr = PyLong_AsVoidPtr(handle);
  Py_DECREF(handle);
  if (ptr == nullptr && PyErr_Occurred()) return false;
  *has = true;
  *out = static_cast<CUstream>(ptr);
  return true;
}

bool ParseSharedMem(PyObject* obj, uint32_t* out) {
  *out = 0;
  if (obj == nullptr) return true;
  if (!PyLong_Check(obj) || PyBool_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "shared_mem must be an int (got %s)", Py_TYPE(obj)->tp_name);
    return false;
  }
  const long long v = PyLong_AsLongLong(obj);
  if (v < 0 || v > UINT32_MAX) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "shared_mem must be 0 to 4294967295 bytes (got %R)", obj);
    return false;
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

// LaunchConfig._packed: (cluster_x, cluster_y, cluster_z, scheduling, pdl, cooperative,
// priority), 0 or -1 where unset; validated by the Python class.
bool ApplyConfig(PyObject* config, tvm::ffi::LaunchConfig* out) {
  PyObject* packed = PyObject_GetAttr(config, Intern("_packed", &g_str_packed));
  if (packed == nullptr || !PyTuple_Check(packed) || PyTuple_GET_SIZE(packed) != 7) {
    Py_XDECREF(packed);
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "config must be a tvm_ffi.cuda.LaunchConfig (got %s)",
                 Py_TYPE(config)->tp_name);
    return false;
  }
  long long v[7];
  for (int i = 0; i < 7; ++i) v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(packed, i));
  Py_DECREF(packed);
  if (PyErr_Occurred()) return false;
  try {
    if (v[0] > 0) {
      out->SetCluster(tvm::ffi::dim3(static_cast<unsigned>(v[0]), static_cast<unsigned>(v[1]),
                                     static_cast<unsigned>(v[2])));
    }
    if (v[3] >= 0) {
      out->SetClusterSchedulingPolicy(static_cast<CUclusterSchedulingPolicy>(v[3]));
    }
    if (v[4] > 0) out->SetProgrammaticStreamSerialization(true);
    if (v[5] > 0) out->SetCooperative(true);
    if (v[6] != INT64_MIN) out->SetPriority(static_cast<int>(v[6]));
  } catch (const tvm::ffi::Error& e) {
    RaiseFfiError(e);
    return false;
  }
  return true;
}

int DeviceAttr(const detail::DriverApi& api, CUdevice_attribute attr, int dev) {
  int v = 0;
  if (api.DeviceGetAttribute(&v, attr, dev) != CUDA_SUCCESS) return -1;
  return v;
}

// CUDA_ERROR_INVALID_VALUE from a launch: say which launch value the device refuses.
// True with a ValueError set when one is out of the device's (or kernel's) limits.
bool DiagnoseInvalidLaunch(const KernelData& k, int dev, const uint32_t grid[3],
                           const uint32_t block[3], uint32_t shared_mem) {
  if (dev < 0) return false;
  const detail::DriverApi& api = detail::DriverApi::Get();
  const std::string on = "device " + std::to_string(dev);
  const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
  const int max_threads = DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
  if (max_threads > 0 && threads > static_cast<uint64_t>(max_threads)) {
    PyErr_Format(PyExc_ValueError, "%s: block %s has %llu threads; %s allows at most %d per block",
                 k.who.c_str(), Dim3Text(block).c_str(), static_cast<unsigned long long>(threads),
                 on.c_str(), max_threads);
    return true;
  }
  const uint32_t block_max[3] = {
      static_cast<uint32_t>(DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, dev)),
      static_cast<uint32_t>(DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, dev)),
      static_cast<uint32_t>(DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, dev))};
  const uint32_t grid_max[3] = {
      static_cast<uint32_t>(DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, dev)),
      static_cast<uint32_t>(DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, dev)),
      static_cast<uint32_t>(DeviceAttr(api, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, dev))};
  for (int i = 0; i < 3; ++i) {
    if (block[i] > block_max[i]) {
      PyErr_Format(PyExc_ValueError, "%s: block %s exceeds %s's limit of %s", k.who.c_str(),
                   Dim3Text(block).c_str(), on.c_str(), Dim3Text(block_max).c_str());
      return true;
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (grid[i] > grid_max[i]) {
      PyErr_Format(PyExc_ValueError, "%s: grid %s exceeds %s's limit of %s", k.who.c_str(),
                   Dim3Text(grid).c_str(), on.c_str(), Dim3Text(grid_max).c_str());
      return true;
    }
  }
  if (shared_mem > 0) {
    int allowed = 0;
    if (api.KernelGetAttribute(&allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               k.kernel->GetHandle(), dev) == CUDA_SUCCESS &&
        shared_mem > static_cast<uint32_t>(allowed)) {
      PyErr_Format(PyExc_ValueError,
                   "%s: shared_mem=%u exceeds the kernel's limit of %d bytes on %s; raise it "
                   "with kernel.set_max_dynamic_shared_memory()",
                   k.who.c_str(), shared_mem, allowed, on.c_str());
      return true;
    }
  }
  return false;
}

PyObject* Launch(KernelObject* self, const uint32_t grid[3], const uint32_t block[3],
                 bool has_stream, CUstream stream, uint32_t shared_mem, PyObject* config,
                 PyObject* const* args, Py_ssize_t n) {
  const KernelData& k = *self->data;
  if (TVM_FFI_UNLIKELY(!k.layout.known)) {
    PyErr_Format(PyExc_TypeError, "%s: %s; give it with kernel.with_signature(\"float*, int\")",
                 k.who.c_str(), k.layout.unknown_reason.c_str());
    return nullptr;
  }
  alignas(16) char inline_buffer[kInlineBuffer];
  void* inline_pointers[kInlineArgs];
  std::unique_ptr<char[]> heap_buffer;
  std::unique_ptr<void*[]> heap_pointers;
  char* buffer = inline_buffer;
  void** pointers = inline_pointers;
  const size_t size = BufferSize(k.layout);
  if (TVM_FFI_UNLIKELY(size > kInlineBuffer)) {
    heap_buffer.reset(new char[size]);
    buffer = heap_buffer.get();
  }
  if (TVM_FFI_UNLIKELY(n > kInlineArgs)) {
    heap_pointers.reset(new void*[n]);
    pointers = heap_pointers.get();
  }
  ArgFrame frame;               // holds producers' tensors until the launch is queued
  frame.name = k.name.c_str();  // the core's tensor messages: "add() argument 1: ..."
  LaunchTarget target;
  if (PackArgs(k.who, k.layout, args, n, buffer, pointers, &target, &frame) != 0) return nullptr;

  CudaDeviceGuard guard;  // the tensors' device, restored on return
  if (target.device >= 0 && !guard.Enter(target.device)) return nullptr;
  if (!has_stream && target.device >= 0) {
    // The stream an exported function called with these tensors sees (TVMFFIEnvGetStream).
    void* s = nullptr;
    if (CallStream(target.stream_api, target.device, &s) != 0) return nullptr;
    stream = static_cast<CUstream>(s);
  }
  tvm::ffi::LaunchResult r = CUDA_SUCCESS;
  if (config == nullptr || config == Py_None) {
    r = k.kernel->Launch(pointers, tvm::ffi::dim3(grid[0], grid[1], grid[2]),
                         tvm::ffi::dim3(block[0], block[1], block[2]), stream, shared_mem);
  } else {
    tvm::ffi::LaunchConfig cfg(tvm::ffi::dim3(grid[0], grid[1], grid[2]),
                               tvm::ffi::dim3(block[0], block[1], block[2]), stream, shared_mem);
    if (!ApplyConfig(config, &cfg)) return nullptr;
    r = k.kernel->Launch(pointers, cfg);
  }
  if (TVM_FFI_UNLIKELY(!r.ok())) {
    const int code = r.code();
    if (code == CUDA_ERROR_INVALID_VALUE) {
      const int dev = target.device >= 0 ? target.device
                                         : detail::LaunchDevice(detail::DriverApi::Get(), stream);
      if (DiagnoseInvalidLaunch(k, dev, grid, block, shared_mem)) {
        detail::TakeLaunchFailureNote(code);
        return nullptr;
      }
    }
    const std::string message = detail::DriverErrorText(code) + detail::TakeLaunchFailureNote(code);
    PyErr_SetString(PyExc_RuntimeError, message.c_str());
    return nullptr;
  }
  Py_RETURN_NONE;
}

// ---- CubinKernel ---------------------------------------------------------------------------

void KernelDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<KernelObject*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  delete self->data;
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* KernelRepr(PyObject* obj) {
  return PyUnicode_FromFormat("<tvm_ffi.cuda.CubinKernel %s>",
                              reinterpret_cast<KernelObject*>(obj)->data->who.c_str());
}

// kernel.launch(grid, block, args, *, stream=None, shared_mem=0, config=None)
PyObject* KernelLaunchMethod(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                             PyObject* kwnames) {
  auto* self = reinterpret_cast<KernelObject*>(obj);
  PyObject* stream = nullptr;
  PyObject* shared = nullptr;
  PyObject* config = nullptr;
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    if (PyUnicode_CompareWithASCIIString(key, "stream") == 0) {
      stream = value;
    } else if (PyUnicode_CompareWithASCIIString(key, "shared_mem") == 0) {
      shared = value;
    } else if (PyUnicode_CompareWithASCIIString(key, "config") == 0) {
      config = value;
    } else {
      PyErr_Format(PyExc_TypeError, "launch() got an unexpected keyword argument '%U'", key);
      return nullptr;
    }
  }
  if (nargs != 3) {
    PyErr_Format(PyExc_TypeError,
                 "launch() takes 3 positional arguments (grid, block, args) but %zd were given",
                 nargs);
    return nullptr;
  }
  uint32_t grid[3], block[3], smem = 0;
  bool has_stream = false;
  CUstream handle = nullptr;
  if (!ParseDim3(args[0], "grid", grid) || !ParseDim3(args[1], "block", block) ||
      !ParseStream(stream, &has_stream, &handle) || !ParseSharedMem(shared, &smem)) {
    return nullptr;
  }
  PyObject* seq = args[2];
  if (PyTuple_CheckExact(seq)) {
    return Launch(self, grid, block, has_stream, handle, smem, config, &PyTuple_GET_ITEM(seq, 0),
                  PyTuple_GET_SIZE(seq));
  }
  // A tuple snapshot: packing may run Python code (__dlpack__) that could mutate a list.
  PyObject* items = PySequence_Tuple(seq);
  if (items == nullptr) return nullptr;
  PyObject* out = Launch(self, grid, block, has_stream, handle, smem, config,
                         &PyTuple_GET_ITEM(items, 0), PyTuple_GET_SIZE(items));
  Py_DECREF(items);
  return out;
}

PyObject* LauncherVectorcall(PyObject* obj, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  auto* self = reinterpret_cast<LauncherObject*>(obj);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "%s: a launch takes no keyword arguments",
                 self->kernel->data->who.c_str());
    return nullptr;
  }
  return Launch(self->kernel, self->grid, self->block, self->has_stream, self->stream,
                self->shared_mem, nullptr, args, PyVectorcall_NARGS(nargsf));
}

// kernel[grid, block] / kernel[grid, block, stream] / kernel[grid, block, stream, shared_mem]
PyObject* KernelSubscript(PyObject* obj, PyObject* key) {
  auto* self = reinterpret_cast<KernelObject*>(obj);
  const Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 0;
  if (n < 2 || n > 4) {
    PyErr_SetString(PyExc_TypeError,
                    "kernel[...] takes grid, block and optionally stream and shared_mem: "
                    "kernel[grid, block](*args)");
    return nullptr;
  }
  auto* out = PyObject_New(LauncherObject, g_launcher_type);
  if (out == nullptr) return nullptr;
  out->vectorcall = LauncherVectorcall;
  Py_INCREF(obj);
  out->kernel = self;
  PyObject* item = PyTuple_GET_ITEM(key, 0);
  if (!ParseDim3(item, "grid", out->grid) ||
      !ParseDim3(PyTuple_GET_ITEM(key, 1), "block", out->block) ||
      !ParseStream(n > 2 ? PyTuple_GET_ITEM(key, 2) : nullptr, &out->has_stream, &out->stream) ||
      !ParseSharedMem(n > 3 ? PyTuple_GET_ITEM(key, 3) : nullptr, &out->shared_mem)) {
    Py_DECREF(out);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(out);
}

PyObject* KernelWithSignature(PyObject* obj, PyObject* arg) {
  auto* self = reinterpret_cast<KernelObject*>(obj);
  const char* text = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : nullptr;
  if (text == nullptr) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "with_signature takes a str (got %s)", Py_TYPE(arg)->tp_name);
    }
    return nullptr;
  }
  Layout layout;
  std::string error;
  const KernelData& k = *self->data;
  if (!ParseSignature(text, &layout, &error)) {
    PyErr_Format(PyExc_ValueError, "%s: cannot read the signature '%s': %s", k.who.c_str(), text,
                 error.c_str());
    return nullptr;
  }
  if (k.layout.known) {
    bool same = layout.params.size() == k.layout.params.size();
    for (size_t i = 0; same && i < layout.params.size(); ++i) {
      same = layout.params[i].offset == k.layout.params[i].offset &&
             layout.params[i].size == k.layout.params[i].size;
    }
    if (!same) {
      auto describe = [](const Layout& l) {
        std::string s;
        for (size_t i = 0; i < l.params.size(); ++i) {
          s += (i ? ", " : "") + std::to_string(l.params[i].size);
        }
        return std::to_string(l.params.size()) + " parameters (sizes " + s + ")";
      };
      PyErr_Format(PyExc_ValueError, "%s: the signature '%s' gives %s but the kernel takes %s",
                   k.who.c_str(), text, describe(layout).c_str(), describe(k.layout).c_str());
      return nullptr;
    }
  }
  return NewKernel(k.kernel, std::move(layout), k.name, k.module_label);
}

PyObject* KernelSetMaxDynamicSharedMemory(PyObject* obj, PyObject* const* args, Py_ssize_t nargs) {
  auto* self = reinterpret_cast<KernelObject*>(obj);
  long long bytes = -1;
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "set_max_dynamic_shared_memory takes one argument");
    return nullptr;
  }
  if (nargs == 1) {
    bytes = PyLong_AsLongLong(args[0]);
    if (bytes == -1 && PyErr_Occurred()) return nullptr;
  }
  try {
    self->data->kernel->SetMaxDynamicSharedMemory(bytes);
  } catch (const tvm::ffi::Error& e) {
    return RaiseFfiError(e);
  }
  Py_RETURN_NONE;
}

PyObject* KernelName(PyObject* obj, void*) {
  return PyUnicode_FromString(reinterpret_cast<KernelObject*>(obj)->data->name.c_str());
}

PyObject* KernelLayout(PyObject* obj, void*) {
  const Layout& layout = reinterpret_cast<KernelObject*>(obj)->data->layout;
  if (!layout.known) Py_RETURN_NONE;
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(layout.params.size()));
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < layout.params.size(); ++i) {
    PyObject* pair = Py_BuildValue("(II)", layout.params[i].offset, layout.params[i].size);
    if (pair == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), pair);
  }
  return out;
}

PyObject* KernelHandle(PyObject* obj, void*) {
  return PyLong_FromVoidPtr(reinterpret_cast<KernelObject*>(obj)->data->kernel->GetHandle());
}

PyMethodDef kKernelMethods[] = {
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(KernelLaunchMethod)),
     METH_FASTCALL | METH_KEYWORDS,
     "launch(grid, block, args, *, stream=None, shared_mem=0, config=None)"},
    {"with_signature", KernelWithSignature, METH_O,
     "This kernel with its parameters given as C types: 'float*, float*, int'."},
    {"set_max_dynamic_shared_memory",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(KernelSetMaxDynamicSharedMemory)),
     METH_FASTCALL,
     "Allow this many bytes of dynamic shared memory per block (-1: the device maximum)."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kKernelGetSet[] = {
    {"name", KernelName, nullptr, "The kernel's name as looked up.", nullptr},
    {"param_layout", KernelLayout, nullptr,
     "(offset, size) of each parameter, or None when unknown.", nullptr},
    {"handle", KernelHandle, nullptr, "The CUkernel handle, as an int.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot kKernelSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(KernelDealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(KernelRepr)},
    {Py_tp_methods, kKernelMethods},
    {Py_tp_getset, kKernelGetSet},
    {Py_mp_subscript, reinterpret_cast<void*>(KernelSubscript)},
    {0, nullptr},
};

PyType_Spec kKernelSpec = {"tvm_ffi.cuda.CubinKernel", sizeof(KernelObject), 0, Py_TPFLAGS_DEFAULT,
                           kKernelSlots};

// ---- the launcher of kernel[grid, block] -----------------------------------------------------

void LauncherDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<LauncherObject*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  Py_XDECREF(reinterpret_cast<PyObject*>(self->kernel));
  type->tp_free(obj);
  Py_DECREF(type);
}

PyMemberDef kLauncherMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(LauncherObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot kLauncherSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(LauncherDealloc)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_members, kLauncherMembers},
    {0, nullptr},
};

PyType_Spec kLauncherSpec = {"tvm_ffi.cuda.KernelLauncher", sizeof(LauncherObject), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, kLauncherSlots};

PyTypeObject* MakeType(PyType_Spec* spec) {
  auto* type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(spec));
  if (type == nullptr) return nullptr;
  type->tp_new = nullptr;  // made only by CubinModule.get_kernel and kernel[...]
  PyType_Modified(type);
  return type;
}

}  // namespace

PyObject* RaiseFfiError(const tvm::ffi::Error& e) {
  const std::string kind = e.kind();
  PyObject* kind_str =
      PyUnicode_FromStringAndSize(kind.data(), static_cast<Py_ssize_t>(kind.size()));
  if (kind_str == nullptr) return nullptr;
  PyObject* cls = ErrorClass(kind_str);  // the core's: registered, builtin, else RuntimeError
  Py_DECREF(kind_str);
  PyErr_SetString(cls, e.message().c_str());
  Py_DECREF(cls);
  return nullptr;
}

PyTypeObject* InitKernelTypes() {
  if (g_kernel_type == nullptr) {
    g_launcher_type = MakeType(&kLauncherSpec);
    if (g_launcher_type == nullptr) return nullptr;
    g_kernel_type = MakeType(&kKernelSpec);
  }
  return g_kernel_type;
}

PyObject* NewKernel(std::shared_ptr<const tvm::ffi::CubinKernel> kernel, Layout layout,
                    const std::string& name, const std::string& module_label) {
  if (InitKernelTypes() == nullptr) return nullptr;
  auto* self = PyObject_New(KernelObject, g_kernel_type);
  if (self == nullptr) return nullptr;
  self->data = new KernelData();
  KernelData& k = *self->data;
  k.kernel = std::move(kernel);
  k.layout = std::move(layout);
  k.name = name;
  k.module_label = module_label;
  k.who = "kernel \"" + name + "\" in " + module_label;
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace cuda
}  // namespace tvm_ffi_next
