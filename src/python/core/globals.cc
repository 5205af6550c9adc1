// The runtime's global functions from Python (get, register, list) and its dtype grammar
// (TVMFFIDataTypeFromString / ToString: a string means the same data type in Python as in C++).
#include "core.h"

namespace tvm_ffi_next {
namespace {

PyTypeObject* g_dtype_class = nullptr;  // tvm_ffi.dtype, held for the process's life

const char* StrArg(PyObject* obj, const char* what, Py_ssize_t* size) {
  const char* text = PyUnicode_Check(obj) ? PyUnicode_AsUTF8AndSize(obj, size) : nullptr;
  if (text == nullptr && !PyErr_Occurred()) {
    PyErr_Format(PyExc_TypeError, "%s expects a str, got %s", what, Py_TYPE(obj)->tp_name);
  }
  return text;
}

}  // namespace

PyObject* GetGlobalFunc(PyObject*, PyObject* name) {
  Py_ssize_t size = 0;
  if (StrArg(name, "get_global_func()", &size) == nullptr) return nullptr;
  TVMFFIObject* handle = GetGlobal(PyUnicode_AsUTF8(name));
  if (handle == nullptr) Py_RETURN_NONE;
  return NewFunction(handle, name, nullptr);
}

// _register_global_func(name, f, override) -> the Function registered (a Function's own handle,
// or a new one calling the Python callable).
PyObject* RegisterGlobalFunc(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_Format(PyExc_TypeError, "_register_global_func() takes (name, f, override), got %zd",
                 nargs);
    return nullptr;
  }
  Py_ssize_t size = 0;
  const char* name = StrArg(args[0], "_register_global_func()", &size);
  const int override = name != nullptr ? PyObject_IsTrue(args[2]) : -1;
  if (override < 0) return nullptr;
  TVMFFIObject* handle = nullptr;
  if (PyObject_TypeCheck(args[1], g_function_type)) {
    handle = WrapperHandle(args[1]);
    if (handle == nullptr) {
      PyErr_SetString(PyExc_ValueError, "_register_global_func(): the Function is empty");
      return nullptr;
    }
    TVMFFIObjectIncRef(handle);
  } else if ((handle = FunctionFromCallable(args[1])) == nullptr) {
    return nullptr;
  }
  TVMFFIByteArray array{name, static_cast<size_t>(size)};
  if (TVMFFIFunctionSetGlobal(&array, handle, override) != 0) {
    DecRef(handle);
    RaiseCallError(-1, "register_global_func", nullptr);
    return nullptr;
  }
  return NewFunction(handle, args[0], nullptr);
}

PyObject* ListGlobalFuncNames(PyObject*, PyObject*) {
  // The runtime's functor: called with no argument, it returns a function of (i) answering
  // the count (i = -1) and the i-th name.
  TVMFFIObject* functor = GetGlobal("ffi.FunctionListGlobalNamesFunctor");
  if (functor == nullptr) {
    PyErr_SetString(PyExc_RuntimeError,
                    "the runtime has no global 'ffi.FunctionListGlobalNamesFunctor'");
    return nullptr;
  }
  PyObject* args = PyTuple_New(0);
  PyObject* fn = NewFunction(functor, nullptr, nullptr);
  PyObject* lister = fn != nullptr && args != nullptr ? PyObject_Call(fn, args, nullptr) : nullptr;
  Py_XDECREF(args);
  Py_XDECREF(fn);
  if (lister == nullptr) return nullptr;
  PyObject* count = PyObject_CallFunction(lister, "i", -1);
  const long n = count != nullptr ? PyLong_AsLong(count) : -1;
  Py_XDECREF(count);
  PyObject* names = n >= 0 ? PyList_New(0) : nullptr;
  for (long i = 0; names != nullptr && i < n; ++i) {
    PyObject* name = PyObject_CallFunction(lister, "l", i);
    if (name == nullptr || PyList_Append(names, name) != 0) Py_CLEAR(names);
    Py_XDECREF(name);
  }
  Py_DECREF(lister);
  if (names != nullptr && PyList_Sort(names) != 0) Py_CLEAR(names);
  return names;
}

PyObject* ParseDType(PyObject*, PyObject* text) {
  Py_ssize_t size = 0;
  const char* utf8 = StrArg(text, "_parse_dtype()", &size);
  if (utf8 == nullptr) return nullptr;
  TVMFFIByteArray array{utf8, static_cast<size_t>(size)};
  DLDataType dtype{};
  if (TVMFFIDataTypeFromString(&array, &dtype) != 0) {
    RaiseCallError(-1, nullptr, nullptr);  // the grammar's own words (a ValueError)
    return nullptr;
  }
  return Py_BuildValue("(iii)", dtype.code, dtype.bits, dtype.lanes);
}

// The string form of (code, bits, lanes), or None when it has none that parses back to the same
// triple (an unknown code, "bool" of 1 bit, a float8 of 16 bits, ...).
PyObject* FormatDType(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_Format(PyExc_TypeError, "_format_dtype() takes (code, bits, lanes), got %zd", nargs);
    return nullptr;
  }
  const long code = PyLong_AsLong(args[0]);
  const long bits = PyLong_AsLong(args[1]);
  const long lanes = PyLong_AsLong(args[2]);
  if (PyErr_Occurred()) return nullptr;
  if (code < 0 || code > 255 || bits < 1 || bits > 255 || lanes < 1 || lanes > 65535) {
    Py_RETURN_NONE;
  }
  TVMFFIAny text{};
  const DLDataType dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits),
                         static_cast<uint16_t>(lanes)};
  if (TVMFFIDataTypeToString(&dtype, &text) != 0) {
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
    Py_RETURN_NONE;
  }
  PyObject* out = ToPython(&text, nullptr);
  if (out == nullptr) return nullptr;
  PyObject* back = ParseDType(nullptr, out);
  PyObject* same = back != nullptr ? Py_BuildValue("(lll)", code, bits, lanes) : nullptr;
  const int equal = same != nullptr ? PyObject_RichCompareBool(back, same, Py_EQ) : 0;
  Py_XDECREF(back);
  Py_XDECREF(same);
  PyErr_Clear();
  if (equal != 1) Py_SETREF(out, Py_NewRef(Py_None));
  return out;
}

PyTypeObject* DTypeClass() {
  if (g_dtype_class == nullptr) {
    // tvm_ffi._dtype registers the class when imported; a result may come before anything
    // imported it. A core built under another name (tests' _core_next) stays without it.
    PyObject* module = PyImport_ImportModule("tvm_ffi._dtype");
    if (module == nullptr) PyErr_Clear();
    Py_XDECREF(module);
  }
  return g_dtype_class;
}

PyObject* DeviceClass() {
  static PyObject* device_class = nullptr;  // held for the process's life
  if (device_class == nullptr) {
    PyObject* module = PyImport_ImportModule("tvm_ffi._stream");
    device_class = module != nullptr ? PyObject_GetAttrString(module, "Device") : nullptr;
    Py_XDECREF(module);
    if (device_class == nullptr) PyErr_Clear();
  }
  return device_class;
}

PyObject* SetDTypeClass(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_Format(PyExc_TypeError, "_set_dtype_class() expects a class, got %s",
                 Py_TYPE(cls)->tp_name);
    return nullptr;
  }
  Py_INCREF(cls);
  Py_XSETREF(g_dtype_class, reinterpret_cast<PyTypeObject*>(cls));
  Py_RETURN_NONE;
}

}  // namespace tvm_ffi_next
