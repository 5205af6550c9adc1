// TVMFFIAny -> Python: call results (owned) and callback arguments (views).
#include "core.h"

namespace tvm_ffi_next {
namespace {

constexpr int kMaxDepth = 32;

// A call's text result must be UTF-8: bytes that are not are refused with the function's name
// (tvm::ffi::Bytes is the type for them). Without a call (callback arguments) they decode with
// surrogateescape, as Python decodes file names.
PyObject* TextOf(const TVMFFIByteArray* bytes, bool text, const ArgFrame* frame = nullptr) {
  const auto size = static_cast<Py_ssize_t>(bytes->size);
  if (!text) return PyBytes_FromStringAndSize(bytes->data, size);
  if (frame == nullptr) return PyUnicode_DecodeUTF8(bytes->data, size, "surrogateescape");
  PyObject* out = PyUnicode_DecodeUTF8(bytes->data, size, nullptr);
  if (out != nullptr || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return out;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  const char* name = frame->name_obj != nullptr ? PyUnicode_AsUTF8(frame->name_obj) : nullptr;
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError,
               "%s() returned a str that is not valid UTF-8 (%S); text results must be UTF-8: "
               "return tvm::ffi::Bytes for other bytes",
               name != nullptr ? name : frame->name, value);
  PyObject *new_type, *new_value, *new_traceback;
  PyErr_Fetch(&new_type, &new_value, &new_traceback);
  PyErr_NormalizeException(&new_type, &new_value, &new_traceback);
  PyException_SetCause(new_value, value);  // steals value
  PyException_SetContext(new_value, Py_NewRef(value));
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  PyErr_Restore(new_type, new_value, new_traceback);
  return nullptr;
}

PyObject* ToPythonAt(TVMFFIAny* value, ArgFrame* frame, int depth);

// A void* as apache-tvm-ffi returns it: a ctypes.c_void_p (NULL: c_void_p(None)), which passes
// back as the same pointer and is told apart from an int. ctypes loads on the first pointer.
PyObject* VoidPointer(void* ptr) {
  static PyObject* c_void_p = nullptr;
  if (c_void_p == nullptr) {
    PyObject* ctypes = PyImport_ImportModule("ctypes");
    c_void_p = ctypes != nullptr ? PyObject_GetAttrString(ctypes, "c_void_p") : nullptr;
    Py_XDECREF(ctypes);
    if (c_void_p == nullptr) return nullptr;
  }
  if (ptr == nullptr) return PyObject_CallNoArgs(c_void_p);
  PyObject* address = PyLong_FromVoidPtr(ptr);
  PyObject* out = address != nullptr ? PyObject_CallOneArg(c_void_p, address) : nullptr;
  Py_XDECREF(address);
  return out;
}

// Borrowed elements of an Array or List.
PyObject* SequenceToList(TVMFFIObject* seq, ArgFrame* frame, int depth) {
  const TVMFFISeqCell* cell = CellOf<TVMFFISeqCell>(seq);
  PyObject* list = PyList_New(cell->size);
  if (list == nullptr) return nullptr;
  const auto* items = static_cast<const TVMFFIAny*>(cell->data);
  for (int64_t i = 0; i < cell->size; ++i) {
    TVMFFIAny owned;
    if (TVMFFIAnyViewToOwnedAny(&items[i], &owned) != 0) {
      Py_DECREF(list);
      RaiseCallError(-1, "TVMFFIAnyViewToOwnedAny", nullptr);
      return nullptr;
    }
    PyObject* item = ToPythonAt(&owned, frame, depth + 1);
    if (item == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

// A Map or Dict through the runtime's globals (the layout belongs to the runtime's one
// implementation); each through its own, as a Map global may refuse a Dict.
PyObject* MapToDict(TVMFFIObject* map, ArgFrame* frame, int depth) {
  const bool is_dict = map->type_index == kTVMFFIDict;
  const char* size_name = is_dict ? "ffi.DictSize" : "ffi.MapSize";
  const char* iter_name = is_dict ? "ffi.DictForwardIterFunctor" : "ffi.MapForwardIterFunctor";
  TVMFFIObject* size_fn = GetGlobal(size_name);
  TVMFFIObject* iter_fn = GetGlobal(iter_name);
  PyObject* dict = nullptr;
  TVMFFIAny arg{}, out{}, iter_any{};
  arg.type_index = map->type_index;
  arg.v_obj = map;
  TVMFFIObject* iter = nullptr;
  if (size_fn == nullptr || iter_fn == nullptr) {
    PyErr_Format(PyExc_TypeError, "the runtime has no '%s'/'%s' to read a %s", size_name, iter_name,
                 is_dict ? "Dict" : "Map");
  } else if (CallHandle(size_fn, size_name, &arg, 1, &out) == 0 &&
             CallHandle(iter_fn, iter_name, &arg, 1, &iter_any) == 0) {
    const int64_t size = out.v_int64;
    iter = iter_any.v_obj;
    dict = PyDict_New();
    for (int64_t i = 0; dict != nullptr && i < size; ++i) {
      TVMFFIAny op{}, key{}, val{}, more{};
      op.type_index = kTVMFFIInt;
      op.v_int64 = 0;
      if (CallHandle(iter, "map iterator", &op, 1, &key) != 0) {
        Py_CLEAR(dict);
        break;
      }
      op.v_int64 = 1;
      if (CallHandle(iter, "map iterator", &op, 1, &val) != 0) {
        if (IsObjectIndex(key.type_index)) DecRef(key.v_obj);
        Py_CLEAR(dict);
        break;
      }
      PyObject* k = ToPythonAt(&key, frame, depth + 1);
      PyObject* v = ToPythonAt(&val, frame, depth + 1);
      if (k == nullptr || v == nullptr || PyDict_SetItem(dict, k, v) != 0) Py_CLEAR(dict);
      Py_XDECREF(k);
      Py_XDECREF(v);
      op.v_int64 = 2;
      if (dict != nullptr && CallHandle(iter, "map iterator", &op, 1, &more) != 0) Py_CLEAR(dict);
    }
  }
  DecRef(size_fn);
  DecRef(iter_fn);
  DecRef(iter);
  return dict;
}

PyObject* ObjectToPython(TVMFFIObject* obj, ArgFrame* frame, int depth) {
  PyObject* out = nullptr;
  switch (obj->type_index) {
    case kTVMFFIStr:
    case kTVMFFIBytes:
      out = TextOf(CellOf<TVMFFIByteArray>(obj), obj->type_index == kTVMFFIStr, frame);
      break;
    case kTVMFFIShape: {
      const TVMFFIShapeCell* cell = CellOf<TVMFFIShapeCell>(obj);
      out = PyTuple_New(static_cast<Py_ssize_t>(cell->size));
      for (size_t i = 0; out != nullptr && i < cell->size; ++i) {
        PyObject* dim = PyLong_FromLongLong(cell->data[i]);
        if (dim == nullptr) Py_CLEAR(out);
        if (out != nullptr) PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), dim);
      }
      break;
    }
    case kTVMFFIArray:
    case kTVMFFIList:
      out = SequenceToList(obj, frame, depth);
      break;
    case kTVMFFIMap:
    case kTVMFFIDict:
      out = MapToDict(obj, frame, depth);
      break;
    case kTVMFFIError:
      out = ExceptionFromError(obj, nullptr, nullptr);
      break;
    case kTVMFFIOpaquePyObject:
      out = static_cast<PyObject*>(CellOf<TVMFFIOpaqueObjectCell>(obj)->handle);
      Py_XINCREF(out);
      if (out == nullptr) out = Py_NewRef(Py_None);
      break;
    case kTVMFFIFunction:
      return NewFunction(obj, nullptr, nullptr);  // takes the reference
    case kTVMFFIModule:
      return NewObjectWrapper(ModuleClass(), obj);
    case kTVMFFITensor:
      // One of the call's own tensors comes back as the caller's object.
      for (int i = 0; frame != nullptr && i < frame->tensors.size(); ++i) {
        if (PooledTensorHandle(frame->tensors[i]) == obj) {
          TVMFFIObjectDecRef(obj);
          return Py_NewRef(frame->tensor_sources[i]);
        }
      }
      for (int i = 0; frame != nullptr && i < frame->dlpack_tensors.size(); ++i) {
        if (frame->dlpack_tensors[i] == obj) {
          TVMFFIObjectDecRef(obj);
          return Py_NewRef(frame->dlpack_sources[i]);
        }
      }
      return TensorToPython(obj, frame != nullptr ? frame->tensor_api : nullptr);
    default:
      return WrapObject(obj);
  }
  TVMFFIObjectDecRef(obj);
  return out;
}

PyObject* ToPythonAt(TVMFFIAny* v, ArgFrame* frame, int depth) {
  if (depth > kMaxDepth) {
    if (IsObjectIndex(v->type_index)) TVMFFIObjectDecRef(v->v_obj);
    PyErr_Format(PyExc_ValueError, "result containers nested deeper than %d levels", kMaxDepth);
    return nullptr;
  }
  switch (v->type_index) {
    case kTVMFFINone:
      Py_RETURN_NONE;
    case kTVMFFIInt:
      return PyLong_FromLongLong(v->v_int64);
    case kTVMFFIBool:
      return PyBool_FromLong(v->v_int64 != 0);
    case kTVMFFIFloat:
      return PyFloat_FromDouble(v->v_float64);
    case kTVMFFIOpaquePtr:
      return VoidPointer(v->v_ptr);
    case kTVMFFIDataType: {
      TVMFFIAny text{};
      if (TVMFFIDataTypeToString(&v->v_dtype, &text) != 0) {
        RaiseCallError(-1, "TVMFFIDataTypeToString", nullptr);
        return nullptr;
      }
      PyObject* name = ToPythonAt(&text, frame, depth);
      PyObject* cls = reinterpret_cast<PyObject*>(DTypeClass());
      if (name == nullptr || cls == nullptr) return name;
      // A tvm_ffi.dtype (a str with type_code, bits and lanes), as the guide promises.
      PyObject* out = PyObject_CallOneArg(cls, name);
      Py_DECREF(name);
      return out;
    }
    case kTVMFFIDevice: {
      // A tvm_ffi.Device (a (device_type, index) tuple with apache's `type` and
      // `dlpack_device_type()`); a plain tuple where the package's Python is not importable.
      PyObject* cls = DeviceClass();
      PyObject* pair = Py_BuildValue("(ii)", static_cast<int>(v->v_device.device_type),
                                     static_cast<int>(v->v_device.device_id));
      if (pair == nullptr || cls == nullptr) return pair;
      PyObject* out = PyObject_Call(cls, pair, nullptr);
      Py_DECREF(pair);
      return out;
    }
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes: {
      TVMFFIByteArray bytes{v->v_bytes, v->small_str_len};
      return TextOf(&bytes, v->type_index == kTVMFFISmallStr, frame);
    }
    default:
      break;
  }
  if (IsObjectIndex(v->type_index)) return ObjectToPython(v->v_obj, frame, depth);
  const char* name =
      frame != nullptr && frame->name_obj != nullptr ? PyUnicode_AsUTF8(frame->name_obj) : nullptr;
  PyErr_Clear();
  if (name != nullptr && v->type_index >= kTVMFFIDLTensorPtr &&
      v->type_index <= kTVMFFIObjectRValueRef) {
    PyErr_Format(PyExc_TypeError,
                 "%s() returned a value of type index %d, which is an argument-only kind (a "
                 "borrowed DLTensor*, raw string or byte array owns nothing) and has no Python "
                 "equivalent",
                 name, static_cast<int>(v->type_index));
    return nullptr;
  }
  if (name != nullptr) {
    PyErr_Format(PyExc_TypeError,
                 "%s() returned a value of type index %d, which Python has no "
                 "equivalent for",
                 name, static_cast<int>(v->type_index));
    return nullptr;
  }
  PyErr_Format(PyExc_TypeError, "cannot convert a value of type index %d to Python",
               static_cast<int>(v->type_index));
  return nullptr;
}

}  // namespace

PyObject* ToPython(TVMFFIAny* value, ArgFrame* frame) { return ToPythonAt(value, frame, 0); }

PyObject* ViewToPython(const TVMFFIAny* view) {
  switch (view->type_index) {
    case kTVMFFIRawStr:
      return PyUnicode_DecodeUTF8(
          view->v_c_str, static_cast<Py_ssize_t>(std::strlen(view->v_c_str)), "surrogateescape");
    case kTVMFFIByteArrayPtr:
      return TextOf(static_cast<const TVMFFIByteArray*>(view->v_ptr), false);
    case kTVMFFIDLTensorPtr:
      PyErr_SetString(PyExc_TypeError,
                      "a DLTensor* argument cannot reach a Python function (it owns nothing); "
                      "pass a Tensor");
      return nullptr;
    default:
      break;
  }
  TVMFFIAny owned;
  if (TVMFFIAnyViewToOwnedAny(view, &owned) != 0) {
    RaiseCallError(-1, "TVMFFIAnyViewToOwnedAny", nullptr);
    return nullptr;
  }
  return ToPythonAt(&owned, nullptr, 0);
}

}  // namespace tvm_ffi_next
