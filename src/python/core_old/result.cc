// Results and errors coming back from an entry.
#include <cstring>
#include <string>

#include "call_frame.h"
#include "function.h"
#include "object.h"
#include "tensor_result.h"

namespace tvm_ffi_py {
namespace {

constexpr int kMaxResultDepth = 64;

void AddNote(PyObject* exc, PyObject* note) {
#if PY_VERSION_HEX >= 0x030B0000
  PyObject* rc = PyObject_CallMethod(exc, "add_note", "O", note);
  Py_XDECREF(rc);
#else
  // Before 3.11 nothing prints notes, but __notes__ is where PEP 678 keeps them.
  PyObject* notes = PyList_New(1);
  if (notes != nullptr) {
    Py_INCREF(note);
    PyList_SET_ITEM(notes, 0, note);
    PyObject_SetAttrString(exc, "__notes__", notes);
    Py_DECREF(notes);
  }
#endif
  PyErr_Clear();  // a failed note must not replace the error itself
}

}  // namespace

// Replaces the pending error with `type`, formatted from `format` (with a %s the function
// name, then %S the pending error), and chains the pending one as its __cause__.
void RaiseFromCause(PyObject* type, const char* format, const char* name) {
  PyObject *cause_type, *cause, *cause_tb;
  PyErr_Fetch(&cause_type, &cause, &cause_tb);
  PyErr_NormalizeException(&cause_type, &cause, &cause_tb);
  if (cause != nullptr && cause_tb != nullptr) PyException_SetTraceback(cause, cause_tb);
  PyErr_Format(type, format, name, cause != nullptr ? cause : Py_None);
  PyObject *exc_type, *exc, *exc_tb;
  PyErr_Fetch(&exc_type, &exc, &exc_tb);
  PyErr_NormalizeException(&exc_type, &exc, &exc_tb);
  if (exc != nullptr && cause != nullptr) {
    PyException_SetCause(exc, cause);  // steals the reference
    cause = nullptr;
  }
  Py_XDECREF(cause_type);
  Py_XDECREF(cause);
  Py_XDECREF(cause_tb);
  PyErr_Restore(exc_type, exc, exc_tb);
}

namespace {

// Appends `text` to a PyErr_Format format, its % signs doubled.
void AppendEscaped(std::string& format, const char* text) {
  for (const char* c = text; *c != '\0'; ++c) {
    format += *c;
    if (*c == '%') format += '%';
  }
}

void RaiseError(const CallFrame& frame, const TVMFFIAny& value) {
  if (value.type_code != kTVMFFIError || value.v_ptr == nullptr) {
    PyErr_Format(PyExc_RuntimeError, "%s() failed without reporting an error (type code %d)",
                 frame.func->name, static_cast<int>(value.type_code));
    return;
  }
  const auto* info = static_cast<const TVMFFIErrorInfo*>(value.v_ptr);
  PyObject* type = ExceptionForKind(info->kind);
  const char* text = info->message != nullptr ? info->message : "";
  PyObject* message =
      PyUnicode_DecodeUTF8(text, static_cast<Py_ssize_t>(std::strlen(text)), "replace");
  if (message == nullptr) return;
  PyObject* exc = PyObject_CallOneArg(type, message);
  Py_DECREF(message);
  if (exc == nullptr) {
    PyObject *ctor_type, *ctor_value, *ctor_tb;
    PyErr_Fetch(&ctor_type, &ctor_value, &ctor_tb);
    // A registered class whose constructor does not take the message alone: say which.
    PyObject* qualname = PyObject_GetAttrString(type, "__qualname__");
    const char* cls = qualname != nullptr ? PyUnicode_AsUTF8(qualname) : nullptr;
    std::string head = "%s() raised an error of kind '";
    AppendEscaped(head, info->kind != nullptr ? info->kind : "");
    head += "', but its registered class ";
    AppendEscaped(head, cls != nullptr ? cls : "?");
    head += " could not be made from the message (%S)";
    Py_XDECREF(qualname);
    PyErr_Clear();  // only the constructor's error is the cause
    PyErr_Restore(ctor_type, ctor_value, ctor_tb);
    RaiseFromCause(PyExc_RuntimeError, head.c_str(), frame.func->name);
    return;
  }
  if (info->file != nullptr && info->file[0] != '\0') {
    PyObject* note = PyUnicode_FromFormat("raised at %s:%d", info->file, info->line);
    if (note != nullptr) {
      AddNote(exc, note);
      Py_DECREF(note);
    }
    PyErr_Clear();
  }
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
}

// Releases the managed tensors and objects of elements [from, n) of a container that failed
// part way.
void ReleaseRest(const TVMFFIAny* items, int64_t from, int64_t n) {
  for (int64_t i = from; i < n; ++i) ReleaseManagedTensors(items[i]);
}

// Converts a result value. Takes ownership of every managed tensor and object inside it, also
// when it fails (then the ones not converted are released).
PyObject* ToPython(const CallFrame& frame, const TVMFFIAny& v, int depth) {
  bool done;
  PyObject* scalar = ScalarToPython(v, &done);
  if (done) return scalar;
  switch (v.type_code) {
    case kTVMFFIStr: {
      PyObject* text = PyUnicode_DecodeUTF8(v.v_str, static_cast<Py_ssize_t>(v.size), "strict");
      if (text == nullptr && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        RaiseFromCause(PyExc_ValueError,
                       "%s() returned a str that is not valid UTF-8 (%S); text results must be "
                       "UTF-8: return tvm::ffi::Bytes for other bytes",
                       frame.func->name);
      }
      return text;
    }
    case kTVMFFIDLManagedTensor:
      return ManagedTensorToPython(frame, static_cast<DLManagedTensorVersioned*>(v.v_ptr));
    case kTVMFFIRefObject:  // a new reference, which the wrapper takes over
      return WrapRef(static_cast<TVMFFIRefObject*>(v.v_ptr), nullptr);
    case kTVMFFIDLTensorPtr:
      // A borrowed argument returned (`Tensor f(Tensor x) { return x; }`): hand back the
      // caller's own object. Only the pointers are compared; nothing is dereferenced.
      for (Py_ssize_t i = 0; v.v_tensor != nullptr && i < frame.nargs; ++i) {
        if (frame.packed[i].type_code == kTVMFFIDLTensorPtr &&
            frame.packed[i].v_tensor == v.v_tensor) {
          Py_INCREF(frame.py_args[i]);
          return frame.py_args[i];
        }
      }
      for (const auto& owner : frame.nested_owners) {
        if (v.v_tensor != nullptr && owner.first == v.v_tensor) {
          Py_INCREF(owner.second);
          return owner.second;
        }
      }
      PyErr_Format(PyExc_RuntimeError,
                   "%s() returned a borrowed tensor that is none of its tensor arguments; a "
                   "function returns a tensor it owns (e.g. from Tensor::FromEnvAlloc) or one "
                   "of the tensors it was passed",
                   frame.func->name);
      return nullptr;
    case kTVMFFIArray:
    case kTVMFFIMap: {
      const bool is_map = v.type_code == kTVMFFIMap;
      const int64_t count = is_map ? 2 * v.size : v.size;
      if (depth >= kMaxResultDepth) {
        ReleaseRest(v.v_array, 0, count);
        PyErr_Format(PyExc_RuntimeError, "%s() returned containers nested deeper than %d levels",
                     frame.func->name, kMaxResultDepth);
        return nullptr;
      }
      const bool is_tuple = !is_map && (v.flags & TVM_FFI_ARRAY_IS_TUPLE) != 0;
      const Py_ssize_t n = static_cast<Py_ssize_t>(v.size);
      PyObject* out = is_map ? PyDict_New() : is_tuple ? PyTuple_New(n) : PyList_New(n);
      if (out == nullptr) {
        ReleaseRest(v.v_array, 0, count);
        return nullptr;
      }
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (is_map) {
          PyObject* key = ToPython(frame, v.v_array[2 * i], depth + 1);
          PyObject* value = key ? ToPython(frame, v.v_array[2 * i + 1], depth + 1) : nullptr;
          if (key == nullptr) ReleaseManagedTensors(v.v_array[2 * i + 1]);
          const int rc = value ? PyDict_SetItem(out, key, value) : -1;
          Py_XDECREF(key);
          Py_XDECREF(value);
          if (rc != 0) {
            ReleaseRest(v.v_array, 2 * i + 2, count);
            Py_DECREF(out);
            return nullptr;
          }
          continue;
        }
        PyObject* item = ToPython(frame, v.v_array[i], depth + 1);
        if (item == nullptr) {
          ReleaseRest(v.v_array, i + 1, count);
          Py_DECREF(out);
          return nullptr;
        }
        if (is_tuple) {
          PyTuple_SET_ITEM(out, i, item);
        } else {
          PyList_SET_ITEM(out, i, item);
        }
      }
      return out;
    }
    default:
      break;
  }
  PyErr_Format(PyExc_RuntimeError,
               "%s() returned a value of type code %d, which has no Python equivalent",
               frame.func->name, static_cast<int>(v.type_code));
  return nullptr;
}

}  // namespace

PyObject* FinishCall(const CallFrame& frame, int rc, TVMFFIResult* result) {
  PyObject* out = nullptr;
  if (frame.stream_error || frame.alloc_error) {
    // The stream query's or the allocator's Python error is already set; it wins over the
    // callee's outcome (usually an error that only says the query or allocation failed).
    if (rc == 0) ReleaseManagedTensors(result->value);
  } else if (rc != 0) {
    RaiseError(frame, result->value);
  } else {
    out = ToPython(frame, result->value, 0);
  }
  if (result->owner != nullptr) result->owner->deleter(result->owner);
  return out;
}

}  // namespace tvm_ffi_py
