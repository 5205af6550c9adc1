// The one table between error kinds (a tvm::ffi::Error's kind, "ValueError") and Python
// exception classes, read both ways: an error coming back from C++ is raised as the class of
// its kind, and a Python callback's exception goes to C++ under its class's kind.
// tvm_ffi.register_error adds entries; the builtin ones are there from the start.
#include <pybind11/pybind11.h>

#include <string>

#include "call_frame.h"

namespace py = pybind11;

namespace tvm_ffi_py {
namespace {

PyObject* g_kind_to_class = nullptr;  // dict: str -> exception class
PyObject* g_class_to_kind = nullptr;  // dict: exception class -> str

}  // namespace

PyObject* ExceptionForKind(const char* kind) {
  if (kind == nullptr) return PyExc_RuntimeError;
  if (g_kind_to_class != nullptr) {
    PyObject* type = PyDict_GetItemString(g_kind_to_class, kind);  // borrowed
    if (type != nullptr) return type;
  }
  // Any other builtin exception by name (a Python function's ZeroDivisionError that came back
  // through C++); only on the error path.
  PyObject* type = PyDict_GetItemString(PyEval_GetBuiltins(), kind);  // borrowed
  if (type != nullptr && PyType_Check(type) &&
      PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type),
                       reinterpret_cast<PyTypeObject*>(PyExc_Exception))) {
    return type;
  }
  return PyExc_RuntimeError;
}

std::string KindForException(PyObject* type) {
  if (type == nullptr) return "RuntimeError";
  if (g_class_to_kind != nullptr) {
    PyObject* kind = PyDict_GetItemWithError(g_class_to_kind, type);  // borrowed
    if (kind != nullptr) {
      const char* utf8 = PyUnicode_AsUTF8(kind);
      if (utf8 != nullptr) return utf8;
    }
    PyErr_Clear();
  }
  // An unregistered class goes under its own name, which comes back as that name's builtin
  // exception or as RuntimeError.
  std::string kind = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  const size_t dot = kind.rfind('.');
  return dot == std::string::npos ? kind : kind.substr(dot + 1);
}

void RegisterErrorKinds(py::module_& m) {
  g_kind_to_class = PyDict_New();
  g_class_to_kind = PyDict_New();
  if (g_kind_to_class == nullptr || g_class_to_kind == nullptr) throw py::error_already_set();
  auto add = [](py::str kind, py::handle cls) {
    if (PyDict_SetItem(g_kind_to_class, kind.ptr(), cls.ptr()) != 0 ||
        PyDict_SetItem(g_class_to_kind, cls.ptr(), kind.ptr()) != 0) {
      throw py::error_already_set();
    }
  };
  // The kinds C++ code throws (tvm::ffi::Error's documented kinds).
  add(py::str("RuntimeError"), PyExc_RuntimeError);
  add(py::str("ValueError"), PyExc_ValueError);
  add(py::str("TypeError"), PyExc_TypeError);
  add(py::str("IndexError"), PyExc_IndexError);
  add(py::str("KeyError"), PyExc_KeyError);
  add(py::str("AttributeError"), PyExc_AttributeError);
  add(py::str("NotImplementedError"), PyExc_NotImplementedError);
  add(py::str("MemoryError"), PyExc_MemoryError);
  m.def("_register_error", add, py::arg("kind"), py::arg("cls"),
        "Raise errors of `kind` as `cls`, and send `cls` raised in a callback as `kind`.");
  m.def(
      "_error_class",
      [](const std::string& kind) {
        return py::reinterpret_borrow<py::object>(ExceptionForKind(kind.c_str()));
      },
      py::arg("kind"), "The class an error of `kind` is raised as.");
}

}  // namespace tvm_ffi_py
