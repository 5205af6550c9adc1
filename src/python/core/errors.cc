// Errors across the boundary: an ErrorObj's kind names the Python exception class (a
// registered class, else a builtin, else RuntimeError); Python exceptions raised inside
// callbacks go back as (kind = the registered kind or the class name, message).
#include "core.h"

namespace tvm_ffi_next {
namespace {

// The one table between kinds and classes, read both ways (tvm_ffi.register_error fills it):
// errors coming back are raised as the class of their kind; a callback's exception goes to C++
// under its class's kind. Unregistered kinds fall back to builtins by name, else RuntimeError.
// The error last made from a Python exception on this thread (a strong reference): when it comes
// back unchanged, the Python traceback already says where it came from, and no note is added.
thread_local TVMFFIObject* t_from_python = nullptr;

PyObject* g_kind_to_class = nullptr;  // dict: str -> exception class
PyObject* g_class_to_kind = nullptr;  // dict: exception class -> str

// The class for a kind: the table, then builtin exception classes; NULL: unknown.
PyObject* ClassForKind(PyObject* kind) {
  if (g_kind_to_class != nullptr) {
    PyObject* cls = PyDict_GetItemWithError(g_kind_to_class, kind);  // borrowed
    if (cls != nullptr) return cls;
    PyErr_Clear();
  }
  PyObject* cls = PyDict_GetItemWithError(PyEval_GetBuiltins(), kind);
  if (cls != nullptr && PyType_Check(cls) &&
      PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls),
                       reinterpret_cast<PyTypeObject*>(PyExc_Exception))) {
    return cls;
  }
  PyErr_Clear();
  return nullptr;
}

int AddEntry(PyObject* kind, PyObject* cls) {
  if (!PyUnicode_Check(kind) || PyUnicode_GET_LENGTH(kind) == 0) {
    PyErr_Format(PyExc_TypeError, "an error kind must be a non-empty str (got %R)", kind);
    return -1;
  }
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls),
                                              reinterpret_cast<PyTypeObject*>(PyExc_Exception))) {
    PyErr_Format(PyExc_TypeError, "error kind %R: expected an Exception subclass (got %R)", kind,
                 cls);
    return -1;
  }
  if (g_kind_to_class == nullptr) g_kind_to_class = PyDict_New();
  if (g_class_to_kind == nullptr) g_class_to_kind = PyDict_New();
  if (g_kind_to_class == nullptr || g_class_to_kind == nullptr) return -1;
  if (PyDict_SetItem(g_kind_to_class, kind, cls) != 0) return -1;
  return PyDict_SetItem(g_class_to_kind, cls, kind);
}

}  // namespace

PyObject* SetErrorTable(PyObject* table) {
  if (table != Py_None && !PyDict_Check(table)) {
    PyErr_Format(PyExc_TypeError, "set_error_table() expects a dict or None, got %s",
                 Py_TYPE(table)->tp_name);
    return nullptr;
  }
  Py_CLEAR(g_kind_to_class);
  Py_CLEAR(g_class_to_kind);
  Py_ssize_t pos = 0;
  PyObject *kind, *cls;
  while (table != Py_None && PyDict_Next(table, &pos, &kind, &cls)) {
    if (AddEntry(kind, cls) != 0) return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* RegisterError(PyObject* kind, PyObject* cls) {
  if (AddEntry(kind, cls) != 0) return nullptr;
  Py_RETURN_NONE;
}

PyObject* ErrorClass(PyObject* kind) {
  PyObject* cls = PyUnicode_Check(kind) ? ClassForKind(kind) : nullptr;
  return Py_NewRef(cls != nullptr ? cls : PyExc_RuntimeError);
}

namespace {

void AddNote(PyObject* exc, PyObject* note) {
  PyObject* added = note != nullptr ? PyObject_CallMethod(exc, "add_note", "O", note) : nullptr;
  Py_XDECREF(added);
  Py_XDECREF(note);
  PyErr_Clear();  // a note that cannot be added must not replace the error itself
}

}  // namespace

// The message stays the callee's (a registered class parses it, as under apache-tvm-ffi); where
// it was raised goes into a note (PEP 678), which tracebacks print.
PyObject* ExceptionFromError(TVMFFIObject* error, const char* name, PyObject* library) {
  const TVMFFIErrorCell* cell = CellOf<TVMFFIErrorCell>(error);
  PyObject* kind =
      PyUnicode_DecodeUTF8(cell->kind.data, static_cast<Py_ssize_t>(cell->kind.size), "replace");
  if (kind == nullptr) return nullptr;
  PyObject* cls = ClassForKind(kind);
  PyObject* message = PyUnicode_DecodeUTF8(cell->message.data,
                                           static_cast<Py_ssize_t>(cell->message.size), "replace");
  PyObject* exc = message != nullptr
                      ? PyObject_CallOneArg(cls != nullptr ? cls : PyExc_RuntimeError, message)
                      : nullptr;
  if (exc == nullptr && message != nullptr && cls != nullptr) {
    // A registered class whose constructor does not take the message alone: say which, with
    // its own error as the cause.
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyObject* qualname = PyObject_GetAttrString(cls, "__qualname__");
    PyErr_Clear();
    exc = PyObject_CallFunction(
        PyExc_RuntimeError, "N",
        PyUnicode_FromFormat("%s() raised an error of kind '%U', but its registered class %S "
                             "could not be made from the message (%S)",
                             name != nullptr ? name : "function", kind,
                             qualname != nullptr ? qualname : cls,
                             value != nullptr ? value : Py_None));
    Py_XDECREF(qualname);
    if (exc != nullptr && value != nullptr) PyException_SetCause(exc, Py_NewRef(value));
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
  }
  Py_XDECREF(message);
  if (exc == nullptr) {
    Py_DECREF(kind);
    return nullptr;
  }
  Py_DECREF(kind);
  // One note: the C++ frames (when the error has them), then the function and library it came
  // from. A Python exception coming back unchanged gets none: its traceback says where.
  if (error == t_from_python || name == nullptr) return exc;
  PyObject* frames = PyUnicode_DecodeUTF8(cell->backtrace.data,
                                          static_cast<Py_ssize_t>(cell->backtrace.size), "replace");
  const Py_ssize_t length = frames != nullptr ? PyUnicode_GET_LENGTH(frames) : 0;
  const char* sep = length == 0 || PyUnicode_READ_CHAR(frames, length - 1) == '\n' ? "" : "\n";
  if (frames != nullptr && name != nullptr && library != nullptr) {
    Py_SETREF(frames, PyUnicode_FromFormat("%U%sin function '%s' of library '%U'", frames, sep,
                                           name, library));
  } else if (frames != nullptr) {
    Py_SETREF(frames, PyUnicode_FromFormat("%U%sin function '%s'", frames, sep, name));
  }
  AddNote(exc, frames);
  return exc;
}

void RaiseCallError(int rc, const char* name, PyObject* library) {
  const char* label = name != nullptr ? name : "function";
  if (rc == -2) {
    // A legacy callee that left the Python error in place.
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_RuntimeError, "%s() returned -2 (Python error set) but none is set",
                   label);
    }
    return;
  }
  TVMFFIObjectHandle handle = nullptr;
  TVMFFIErrorMoveFromRaised(&handle);
  auto* error = static_cast<TVMFFIObject*>(handle);
  if (error == nullptr) {
    PyErr_Format(PyExc_RuntimeError, "%s() failed (return code %d) without raising an error", label,
                 rc);
    return;
  }
  const TVMFFIErrorCell* cell = CellOf<TVMFFIErrorCell>(error);
  if (cell->kind.size == 18 && std::memcmp(cell->kind.data, "EnvErrorAlreadySet", 18) == 0) {
    TVMFFIObjectDecRef(error);
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_RuntimeError, "%s() reported a pending Python error; none is set", label);
    }
    return;
  }
  PyObject* exc = ExceptionFromError(error, name, library);
  TVMFFIObjectDecRef(error);
  if (exc == nullptr) return;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
  Py_DECREF(exc);
}

int SetRaisedFromPython() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  const char* kind = "RuntimeError";
  PyObject* kind_obj = nullptr;
  if (type != nullptr && g_class_to_kind != nullptr) {
    kind_obj = PyDict_GetItemWithError(g_class_to_kind, type);  // a registered class's kind
    Py_XINCREF(kind_obj);
    PyErr_Clear();
  }
  if (type != nullptr && kind_obj == nullptr) kind_obj = PyObject_GetAttrString(type, "__name__");
  const char* kind_text = kind_obj != nullptr ? PyUnicode_AsUTF8(kind_obj) : nullptr;
  if (kind_text != nullptr) kind = kind_text;
  // The one str argument when there is one: str(KeyError("k")) would add quotes each crossing.
  PyObject* exc_args = value != nullptr ? PyObject_GetAttrString(value, "args") : nullptr;
  PyObject* message = nullptr;
  if (exc_args != nullptr && PyTuple_Check(exc_args) && PyTuple_GET_SIZE(exc_args) == 1 &&
      PyUnicode_Check(PyTuple_GET_ITEM(exc_args, 0))) {
    message = Py_NewRef(PyTuple_GET_ITEM(exc_args, 0));
  } else if (value != nullptr) {
    PyErr_Clear();
    message = PyObject_Str(value);
  }
  Py_XDECREF(exc_args);
  const char* text = message != nullptr ? PyUnicode_AsUTF8(message) : nullptr;
  PyErr_Clear();
  if (text == nullptr) text = "(the message could not be read)";
  const TVMFFIByteArray kind_bytes{kind, std::strlen(kind)};
  const TVMFFIByteArray text_bytes{text, std::strlen(text)};
  const TVMFFIByteArray no_backtrace{"", 0};
  TVMFFIObjectHandle error = nullptr;
  if (TVMFFIErrorCreate(&kind_bytes, &text_bytes, &no_backtrace, &error) == 0) {
    TVMFFIErrorSetRaised(error);  // adds its own reference: ours is the thread's record
    DecRef(t_from_python);
    t_from_python = static_cast<TVMFFIObject*>(error);
  } else {
    TVMFFIErrorSetRaisedFromCStr(kind, text);
  }
  Py_XDECREF(message);
  Py_XDECREF(kind_obj);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return -1;
}

}  // namespace tvm_ffi_next
