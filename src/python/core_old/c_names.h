/*
 * Python strs passed on as C strings: function names, type keys, kernel names. A NUL byte in
 * one would end the C string early, so that a lookup of 'a\0zzz' found 'a'; such a name names
 * nothing, and each caller refuses it in its own words.
 */
#ifndef TVM_FFI_PY_C_NAMES_H_
#define TVM_FFI_PY_C_NAMES_H_

#include <Python.h>

#include <cstring>
#include <string>

namespace tvm_ffi_py {

/*! \brief Appended to a lookup's "has no ..." message when the name holds a NUL byte. */
constexpr const char* kNulNameNote = " (the name holds a NUL byte)";

/*!
 * \brief The UTF-8 of the str `name` for a C API, or NULL: with the str's own error set when
 *  it has no UTF-8 form, else (no error set) when it holds a NUL byte.
 */
inline const char* CNameOf(PyObject* name) {
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr || std::memchr(text, '\0', static_cast<size_t>(size)) != nullptr) {
    return nullptr;
  }
  return text;
}

/*! \brief CNameOf for a name already in a std::string (pybind11's conversion). */
inline bool HoldsNul(const std::string& name) { return name.find('\0') != std::string::npos; }

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_C_NAMES_H_
