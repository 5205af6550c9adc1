// tvm_ffi.dtype's reach into the one dtype grammar (include/tvm/ffi/detail/dtype.h): Python
// parses and prints data types through these, so a string means the same thing as a
// `tvm_ffi.dtype`, as a DLDataType parameter's argument and in a C++ message.
#include <pybind11/pybind11.h>
#include <tvm/ffi/detail/dtype.h>

#include <string>
#include <tuple>

#include "type_cache.h"

namespace py = pybind11;

namespace tvm_ffi_py {
namespace {

std::tuple<int, int, int> ParseDType(const py::str& obj) {
  // Text that is not UTF-8 (a lone surrogate) is no data type either: it is parsed, and
  // quoted in the message, with the bad code points escaped.
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(obj.ptr(), &size);
  std::string text;
  if (utf8 != nullptr) {
    text.assign(utf8, static_cast<size_t>(size));
  } else {
    PyErr_Clear();
    py::object escaped = py::reinterpret_steal<py::object>(
        PyUnicode_AsEncodedString(obj.ptr(), "utf-8", "backslashreplace"));
    if (!escaped) throw py::error_already_set();
    text = escaped.cast<std::string>();
  }
  try {
    const DLDataType dtype = tvm::ffi::StringToDLDataType(text);
    return {dtype.code, dtype.bits, dtype.lanes};
  } catch (const tvm::ffi::Error& e) {
    // Set from the whole std::string: the text it quotes may hold a NUL.
    PyErr_SetObject(PyExc_ValueError, py::str(e.message()).ptr());
    throw py::error_already_set();
  }
}

// The string form of (code, bits, lanes), or None when it has none that parses back to the
// same triple (an unknown code, "bool" of 1 bit, a float8 of 16 bits, ...).
py::object FormatDType(int code, int bits, int lanes) {
  if (code < 0 || code > 255 || bits < 1 || bits > 255 || lanes < 1 || lanes > 65535) {
    return py::none();
  }
  const DLDataType dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits),
                         static_cast<uint16_t>(lanes)};
  std::string text;
  tvm::ffi::detail::AppendDType(text, dtype);
  try {
    if (tvm::ffi::StringToDLDataType(text) != dtype) return py::none();
  } catch (const tvm::ffi::Error&) {
    return py::none();
  }
  return py::str(text);
}

}  // namespace

void RegisterDType(py::module_& m) {
  m.def("_parse_dtype", &ParseDType, py::arg("text"),
        "(code, bits, lanes) of a data type's string form; ValueError names the string.");
  m.def("_format_dtype", &FormatDType, py::arg("code"), py::arg("bits"), py::arg("lanes"),
        "The string form of a DLPack (code, bits, lanes) triple, or None when it has none.");
  m.def(
      "_set_dtype_class",
      [](py::type cls) {
        // Held for the process's life: instances of it are passed as DLDataType arguments.
        Py_INCREF(cls.ptr());
        Py_XDECREF(reinterpret_cast<PyObject*>(g_dtype_class));
        g_dtype_class = reinterpret_cast<PyTypeObject*>(cls.ptr());
      },
      py::arg("cls"), "Make instances of `cls` (tvm_ffi.dtype) convert as data types.");
}

}  // namespace tvm_ffi_py
