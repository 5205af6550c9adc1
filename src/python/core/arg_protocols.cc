// apache-tvm-ffi's conversion protocols: an object that says how it travels. A CUDA stream
// (`__cuda_stream__()`, the CUDA Python protocol, or cuda-python's driver CUstream, which
// predates it) and `__tvm_ffi_opaque_ptr__()` travel as opaque pointers; `__dlpack_data_type__()`
// as a data type; `__tvm_ffi_int__()` / `__tvm_ffi_float__()` as numbers; `__tvm_ffi_value__()`
// in the place of the object. Code written for apache-tvm-ffi passes such objects (the CuTe
// DSL's compiled functions take a CUstream).
#include "arg_types.h"

namespace tvm_ffi_next {
namespace {

constexpr int kMaxProtocolDepth = 32;

// obj.<method>(), NULL with the error set.
PyObject* CallProtocol(PyObject* obj, const char* method) {
  return PyObject_CallMethod(obj, method, nullptr);
}

int Refuse(const ArgFrame* frame, PyObject* obj, const char* method, const char* expected,
           PyObject* got) {
  PyErr_Format(PyExc_TypeError, "%s: %s.%s() returned %s, not %s", ArgLabel(frame),
               Py_TYPE(obj)->tp_name, method, Py_TYPE(got)->tp_name, expected);
  return -1;
}

// An address from an int (or None: NULL); -1 with an error naming the method otherwise.
int PointerFrom(const ArgFrame* frame, PyObject* obj, const char* method, PyObject* value,
                TVMFFIAny* out) {
  if (value == Py_None) {
    SetPointer(out, nullptr);
    return 0;
  }
  if (!PyLong_Check(value)) return Refuse(frame, obj, method, "an int address", value);
  void* ptr = PyLong_AsVoidPtr(value);
  if (ptr == nullptr && PyErr_Occurred()) return -1;
  SetPointer(out, ptr);
  return 0;
}

int CudaStreamArg(ArgFrame* frame, PyObject* obj, TVMFFIAny* out) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  if (!PyObject_HasAttrString(type, "__cuda_stream__")) {  // a driver CUstream: int() is it
    PyObject* value = PyNumber_Long(obj);
    if (value == nullptr) return -1;
    const int rc = PointerFrom(frame, obj, "__int__", value, out);
    Py_DECREF(value);
    return rc;
  }
  PyObject* pair = CallProtocol(obj, "__cuda_stream__");  // (version, handle)
  if (pair == nullptr) return -1;
  int rc;
  if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
    rc = Refuse(frame, obj, "__cuda_stream__", "a (version, handle) tuple", pair);
  } else {
    rc = PointerFrom(frame, obj, "__cuda_stream__", PyTuple_GET_ITEM(pair, 1), out);
  }
  Py_DECREF(pair);
  return rc;
}

int DataTypeArg(ArgFrame* frame, PyObject* obj, TVMFFIAny* out) {
  PyObject* triple = CallProtocol(obj, "__dlpack_data_type__");
  if (triple == nullptr) return -1;
  int code = 0, bits = 0, lanes = 0;
  const bool ok = PyTuple_Check(triple) && PyTuple_GET_SIZE(triple) == 3 &&
                  PyArg_ParseTuple(triple, "iii", &code, &bits, &lanes);
  if (!ok) {
    PyErr_Clear();
    const int rc =
        Refuse(frame, obj, "__dlpack_data_type__", "a (code, bits, lanes) tuple", triple);
    Py_DECREF(triple);
    return rc;
  }
  Py_DECREF(triple);
  SetDataType(out, code, bits, lanes);
  return 0;
}

}  // namespace

int ProtocolArg(ArgFrame* frame, Kind kind, PyObject* obj, TVMFFIAny* out, DLTensor* view,
                int depth) {
  switch (kind) {
    case Kind::kCudaStream:
      return CudaStreamArg(frame, obj, out);
    case Kind::kDLPackDataType:
      return DataTypeArg(frame, obj, out);
    default:
      break;
  }
  const char* method = kind == Kind::kOpaquePtrProtocol ? "__tvm_ffi_opaque_ptr__"
                       : kind == Kind::kIntProtocol     ? "__tvm_ffi_int__"
                       : kind == Kind::kFloatProtocol   ? "__tvm_ffi_float__"
                                                        : "__tvm_ffi_value__";
  if (kind == Kind::kValueProtocol && depth >= kMaxProtocolDepth) {
    PyErr_Format(PyExc_ValueError, "%s: %s.__tvm_ffi_value__() nested deeper than %d levels",
                 ArgLabel(frame), Py_TYPE(obj)->tp_name, kMaxProtocolDepth);
    return -1;
  }
  PyObject* value = CallProtocol(obj, method);
  if (value == nullptr) return -1;
  frame->keep.push_back(value);  // the value's storage (a str's bytes) outlives the call
  switch (kind) {
    case Kind::kOpaquePtrProtocol:
      return PointerFrom(frame, obj, method, value, out);
    case Kind::kIntProtocol:
      if (!PyLong_Check(value) || PyBool_Check(value)) {
        return Refuse(frame, obj, method, "an int", value);
      }
      return ConvertArg(frame, value, out, nullptr, depth + 1);
    case Kind::kFloatProtocol: {
      const double v = PyFloat_AsDouble(value);
      if (v == -1.0 && PyErr_Occurred()) return -1;
      SetFloat(out, v);
      return 0;
    }
    default:
      return ConvertArg(frame, value, out, view, depth + 1);
  }
}

}  // namespace tvm_ffi_next
