// Tensor arguments as TensorObjs (kTVMFFITensor) without an allocation per call, and tensor
// results back to Python.
//
// A call borrows a TensorObj from a pool: header preset (strong 1, weak 1, index
// 70), DLTensor at offset 24 filled by the producer's dltensor_from_py_object_no_sync, shape and
// strides copied into the object so it never points into the Python tensor. After the call a
// still-unique object goes back to the pool; one the callee kept is made to own its memory
// (a managed tensor of the producer) before our reference is dropped.
#include <cstdint>

#include "core.h"

namespace tvm_ffi_next {

constexpr int kInlineDims = 8;

struct PooledTensor {
  TVMFFIObject header;
  DLTensor dl;  // at offset 24, where TensorObj keeps it
  DLManagedTensorVersioned* owner_versioned;
  DLManagedTensor* owner_legacy;
  PyObject* owner_py;  // the Python tensor itself, when its producer cannot export a DLPack owner
  int64_t* heap_dims;  // shape and strides of tensors of more than kInlineDims dimensions
  int64_t dims[2 * kInlineDims];
};
static_assert(offsetof(PooledTensor, dl) == 24, "DLTensor at offset 24, as in TensorObj");

namespace {

constexpr uint64_t kUniqueCount = (uint64_t{1} << 32) | 1;  // strong 1, weak 1

// Frees what the tensor owns; the memory once no weak reference is left.
void TensorDeleter(void* self, int flags) {
  auto* t = static_cast<PooledTensor*>(self);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    if (t->owner_versioned != nullptr && t->owner_versioned->deleter != nullptr) {
      t->owner_versioned->deleter(t->owner_versioned);
    }
    if (t->owner_legacy != nullptr && t->owner_legacy->deleter != nullptr) {
      t->owner_legacy->deleter(t->owner_legacy);
    }
    if (t->owner_py != nullptr && Py_IsInitialized()) {
      PyGILState_STATE gil = PyGILState_Ensure();  // the last reference may go on any thread
      Py_DECREF(t->owner_py);
      PyGILState_Release(gil);
    }
    std::free(t->heap_dims);
    t->owner_versioned = nullptr;
    t->owner_legacy = nullptr;
    t->owner_py = nullptr;
    t->heap_dims = nullptr;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) std::free(t);
}

PooledTensor* NewTensor() {
  auto* t = static_cast<PooledTensor*>(std::malloc(sizeof(PooledTensor)));
  if (t == nullptr) return nullptr;
  t->header.combined_ref_count = kUniqueCount;
  t->header.type_index = kTVMFFITensor;
  t->header.__padding = 0;
  t->header.deleter = TensorDeleter;
  t->owner_versioned = nullptr;
  t->owner_legacy = nullptr;
  t->owner_py = nullptr;
  t->heap_dims = nullptr;
  return t;
}

// The free list. Every access holds the GIL, so one list serves all threads; a thread-local
// one would cost a __tls_get_addr call per access from a shared library. Free-threaded builds
// have no GIL to serialise on and get a list per thread.
constexpr int kMaxPooled = 64;
#ifdef Py_GIL_DISABLED
#define TVM_FFI_PYCORE_POOL_STORAGE thread_local
#else
#define TVM_FFI_PYCORE_POOL_STORAGE
#endif
TVM_FFI_PYCORE_POOL_STORAGE PooledTensor* t_free[kMaxPooled];
TVM_FFI_PYCORE_POOL_STORAGE int t_free_count = 0;
#undef TVM_FFI_PYCORE_POOL_STORAGE

PooledTensor* Acquire() {
  if (t_free_count > 0) return t_free[--t_free_count];
  return NewTensor();
}

// Copies shape and strides into the object (compact strides when the producer gave none).
int OwnDims(PooledTensor* t) {
  const int32_t ndim = t->dl.ndim;
  int64_t* dims = t->dims;
  if (ndim > kInlineDims) {
    std::free(t->heap_dims);
    t->heap_dims = static_cast<int64_t*>(std::malloc(sizeof(int64_t) * 2 * ndim));
    if (t->heap_dims == nullptr) {
      PyErr_NoMemory();
      return -1;
    }
    dims = t->heap_dims;
  }
  const int64_t* shape = t->dl.shape;
  const int64_t* strides = t->dl.strides;
  int64_t* own_strides = dims + (ndim > kInlineDims ? ndim : kInlineDims);
  for (int32_t i = 0; i < ndim; ++i) dims[i] = shape[i];
  if (strides != nullptr) {
    for (int32_t i = 0; i < ndim; ++i) own_strides[i] = strides[i];
  } else {
    int64_t step = 1;
    for (int32_t i = ndim; i-- > 0;) {
      own_strides[i] = step;
      step *= shape[i];
    }
  }
  t->dl.shape = dims;
  t->dl.strides = own_strides;
  return 0;
}

PyObject* g_max_version = nullptr;  // (1, 1): the newest DLPack we consume
PyObject* g_max_version_kwnames = nullptr;

// obj.__dlpack__(max_version=(1, 1)), falling back to a pre-1.0 producer's signature. Stores
// the managed tensor in t as its owner. 0, or -1 with an error set.
int OwnerFromDLPack(ArgFrame* frame, PyObject* obj, PooledTensor* t) {
  if (g_max_version == nullptr) {
    g_max_version = Py_BuildValue("(ii)", 1, 1);
    g_max_version_kwnames = Py_BuildValue("(s)", "max_version");
    if (g_max_version == nullptr || g_max_version_kwnames == nullptr) return -1;
  }
  PyObject* call_args[2] = {obj, g_max_version};
  PyObject* name = PyUnicode_FromString("__dlpack__");
  if (name == nullptr) return -1;
  PyObject* capsule = PyObject_VectorcallMethod(name, call_args, 1, g_max_version_kwnames);
  if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    capsule = PyObject_VectorcallMethod(name, call_args, 1, nullptr);
  }
  Py_DECREF(name);
  if (capsule == nullptr) return -1;
  int rc = 0;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* mt =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    PyCapsule_SetName(capsule, "used_dltensor_versioned");  // ours now
    t->owner_versioned = mt;
    t->dl = mt->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    PyCapsule_SetName(capsule, "used_dltensor");
    t->owner_legacy = mt;
    t->dl = mt->dl_tensor;
  } else {
    PyErr_Format(PyExc_TypeError, "%s: %s.__dlpack__() returned %s, not a DLPack capsule",
                 ArgLabel(frame), Py_TYPE(obj)->tp_name, Py_TYPE(capsule)->tp_name);
    rc = -1;
  }
  Py_DECREF(capsule);
  return rc;
}

}  // namespace

namespace {

// The dimension at which the bytes a (non-empty) tensor spans stop fitting in int64, or -1.
int32_t ExtentOverflowDim(const DLTensor& t) {
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return -1;  // no element: no extent
  }
  const int64_t item = (static_cast<int64_t>(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  int64_t extent = item;  // the last element's bytes
  int64_t contiguous = 1;
  for (int32_t d = t.ndim; d-- > 0;) {
    int64_t stride = contiguous;
    if (t.strides != nullptr) {
      if (t.strides[d] == INT64_MIN) return d;
      stride = t.strides[d] < 0 ? -t.strides[d] : t.strides[d];
    }
    int64_t span = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, stride, &span) ||
        __builtin_mul_overflow(span, item, &span) ||
        __builtin_add_overflow(extent, span, &extent)) {
      return d;
    }
    if (__builtin_mul_overflow(contiguous, t.shape[d], &contiguous)) {
      contiguous = INT64_MAX;  // an overflow only if a dimension before steps by it
    }
  }
  return -1;
}

}  // namespace

int CheckProducerTensor(const ArgFrame* frame, PyObject* obj, const DLTensor& t) {
  // Readers walk shape[0..ndim): a producer's corrupt field must stop here. Every tensor
  // argument passes this, so the accepted path only compares; the producer's name is
  // formatted on the error path alone.
  constexpr int32_t kMaxDims = 1024;
  int32_t negative = -1;  // the first dimension with a negative size
  int32_t overflow = -1;  // the dimension at which the extent overflows
  if (t.ndim >= 0 && t.ndim <= kMaxDims && (t.ndim == 0 || t.shape != nullptr)) {
    for (int32_t d = 0; d < t.ndim && negative < 0; ++d) {
      if (t.shape[d] < 0) negative = d;
    }
    if (negative < 0) {
      overflow = ExtentOverflowDim(t);
      if (overflow < 0) return 0;
    }
  }
  // For an argument the producer is named by its type; for from_dlpack (no position) by its
  // __dlpack__().
  char type[200];
  PyOS_snprintf(type, sizeof(type), frame->position > 0 ? "%s" : "%s.__dlpack__()",
                Py_TYPE(obj)->tp_name);
  if (t.ndim < 0) {
    PyErr_Format(PyExc_ValueError, "%s: %s gave a DLTensor with a negative ndim (ndim %d)",
                 ArgLabel(frame), type, t.ndim);
  } else if (t.ndim > kMaxDims) {
    PyErr_Format(PyExc_ValueError,
                 "%s: %s gave a DLTensor with too many dimensions (ndim %d, at most %d)",
                 ArgLabel(frame), type, t.ndim, kMaxDims);
  } else if (t.shape == nullptr) {
    PyErr_Format(PyExc_ValueError, "%s: %s gave a DLTensor with no shape (ndim %d)",
                 ArgLabel(frame), type, t.ndim);
  } else if (negative >= 0) {
    PyErr_Format(PyExc_ValueError,
                 "%s: %s gave a DLTensor with a negative size (%lld) in dimension %d",
                 ArgLabel(frame), type, static_cast<long long>(t.shape[negative]), negative);
  } else {
    PyErr_Format(PyExc_ValueError,
                 "%s: %s gave a DLTensor with a shape and strides whose extent overflows 64 bits "
                 "(at dimension %d)",
                 ArgLabel(frame), type, overflow);
  }
  return -1;
}

TVMFFIObject* PooledTensorHandle(PooledTensor* t) { return &t->header; }

int TensorObjectArg(ArgFrame* frame, const ExchangeApi* api, PyObject* obj, TVMFFIAny* out) {
  PooledTensor* t = api != nullptr ? Acquire() : NewTensor();
  if (t == nullptr) {
    PyErr_NoMemory();
    return -1;
  }
  int rc;
  if (api != nullptr && api->dltensor_from_py_object_no_sync != nullptr) {
    rc = api->dltensor_from_py_object_no_sync(obj, &t->dl);
  } else if (api != nullptr) {
    DLManagedTensorVersioned* mt = nullptr;
    rc = api->managed_tensor_from_py_object_no_sync(obj, &mt);
    if (rc == 0) {
      t->owner_versioned = mt;
      t->dl = mt->dl_tensor;
    }
  } else {
    rc = OwnerFromDLPack(frame, obj, t);
  }
  if (rc == 0) rc = CheckProducerTensor(frame, obj, t->dl);
  if (rc == 0) rc = OwnDims(t);
  if (rc != 0) {
    // The producer's deleter may run Python code: with no error pending, and the error kept.
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    TensorDeleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    PyErr_Restore(type, value, traceback);
    return -1;
  }
  if (t->owner_versioned != nullptr || t->owner_legacy != nullptr) {
    frame->owned.push_back(&t->header);  // owns its memory already: a plain reference
    frame->dlpack_tensors.push_back(&t->header);
    frame->dlpack_sources.push_back(obj);
  } else {
    frame->tensors.push_back(t);
    frame->tensor_sources.push_back(obj);
    frame->tensor_producers.push_back(api);
  }
  out->type_index = kTVMFFITensor;
  out->zero_padding = 0;
  out->v_obj = &t->header;
  return 0;
}

void FinishPooledTensor(PooledTensor* t, PyObject* source, const ExchangeApi* api) {
  if (__atomic_load_n(&t->header.combined_ref_count, __ATOMIC_ACQUIRE) == kUniqueCount) {
    if (t_free_count < kMaxPooled) {
      t_free[t_free_count++] = t;
    } else {
      TensorDeleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    }
    return;
  }
  // The callee kept a reference: the object must own the memory before ours goes. The shape
  // and strides are the object's own already; only the data needs an owner.
  DLManagedTensorVersioned* mt = nullptr;
  if (api->managed_tensor_from_py_object_no_sync != nullptr &&
      api->managed_tensor_from_py_object_no_sync(source, &mt) == 0) {
    t->owner_versioned = mt;
  } else {
    PyErr_Clear();
    ArgFrame probe;
    PooledTensor scratch{};
    if (OwnerFromDLPack(&probe, source, &scratch) == 0) {
      t->owner_versioned = scratch.owner_versioned;
      t->owner_legacy = scratch.owner_legacy;
    } else {
      // No DLPack owner to be had: the Python tensor itself keeps the memory alive.
      PyErr_Clear();
      t->owner_py = Py_NewRef(source);
    }
  }
  TVMFFIObjectDecRef(&t->header);
}

// ---- results ------------------------------------------------------------------------------------

PyObject* TensorToPython(TVMFFIObject* tensor, const ExchangeApi* api) {
  if (api != nullptr && api->managed_tensor_to_py_object_no_sync != nullptr) {
    DLManagedTensorVersioned* mt = nullptr;
    if (TVMFFITensorToDLPackVersioned(tensor, &mt) == 0) {
      DecRef(tensor);  // the managed tensor holds its own reference
      void* out = nullptr;
      if (api->managed_tensor_to_py_object_no_sync(mt, &out) != 0) return nullptr;
      return static_cast<PyObject*>(out);
    }
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);  // fall back to the wrapper below
    DecRef(static_cast<TVMFFIObject*>(error));
  }
  return NewObjectWrapper(g_tensor_type, tensor);
}

}  // namespace tvm_ffi_next
