/*
 * State of one call while its arguments are converted and the entry runs. Lives on the C
 * stack of the vectorcall; its vectors stay empty (no allocation) unless an argument needs
 * them (a nested list, a tensor that came through a capsule).
 */
#ifndef TVM_FFI_PY_CALL_FRAME_H_
#define TVM_FFI_PY_CALL_FRAME_H_

#include <Python.h>
#include <tvm/ffi/c_api.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda_guard.h"
#include "dlpack_exchange.h"

namespace tvm_ffi_py {

struct FunctionObject;

/*!
 * \brief Puts the pending Python error aside for its lifetime and restores it after. For code
 *  that must run while an error is pending (a deleter, a dropped reference: they may run
 *  Python code, which must not start with an error set) and must not lose or replace it.
 */
class PendingErrorStash {
 public:
#if PY_VERSION_HEX >= 0x030C0000
  PendingErrorStash() : raised_(PyErr_GetRaisedException()) {}
  ~PendingErrorStash() { PyErr_SetRaisedException(raised_); }
#else
  PendingErrorStash() { PyErr_Fetch(&type_, &value_, &traceback_); }
  ~PendingErrorStash() { PyErr_Restore(type_, value_, traceback_); }
#endif
  PendingErrorStash(const PendingErrorStash&) = delete;
  PendingErrorStash& operator=(const PendingErrorStash&) = delete;

 private:
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* raised_;
#else
  PyObject* type_;
  PyObject* value_;
  PyObject* traceback_;
#endif
};

/*! \brief Something to undo after the call: a producer's deleter, a reference to drop. */
struct Cleanup {
  void (*release)(void* ptr);
  void* ptr;
  PyObject* keep_alive;  // dropped after release runs
};

struct CallFrame {
  const FunctionObject* func;
  int position = 0;  // 1-based top-level argument being converted, for error messages
  // The call's arguments: a tensor result that is one of them comes back as that object.
  PyObject* const* py_args = nullptr;
  const TVMFFIAny* packed = nullptr;
  Py_ssize_t nargs = 0;
  // Exchange API of the first tensor argument that had one: its current_work_stream
  // answers the callee's stream query.
  const ExchangeApi* stream_api = nullptr;
  int32_t cuda_device = -1;          // device of the first CUDA tensor argument, -1 when none
  CudaDeviceGuard* guard = nullptr;  // switched by stream queries, restored after the call
  bool stream_error = false;         // get_stream failed and left a Python error to raise
  bool alloc_error = false;          // alloc_tensor failed and left a Python error to raise
  // Exchange API of the first tensor argument whose producer can also allocate and wrap
  // tensors: Tensor::FromEnvAlloc allocates there and returned tensors go back as its type.
  const ExchangeApi* tensor_api = nullptr;
  std::vector<Cleanup> cleanups;
  std::vector<std::unique_ptr<TVMFFIAny[]>> arrays;       // storage of list/tuple args
  std::vector<std::unique_ptr<DLTensor>> nested_tensors;  // tensors inside list/tuple args
  // Tensors inside list/tuple/dict args and their Python objects (owned references, kept
  // past the cleanups): a callee that returns one gets the caller's object back.
  std::vector<std::pair<const DLTensor*, PyObject*>> nested_owners;
  // Lists, tuples and dicts already converted that hold containers, by identity: a shared
  // sub-list (x = [x, x], repeated) is converted once, not once per path to it.
  std::unique_ptr<std::unordered_map<PyObject*, TVMFFIAny>> converted;

  explicit CallFrame(const FunctionObject* f) : func(f) {}
  CallFrame(const CallFrame&) = delete;
  CallFrame& operator=(const CallFrame&) = delete;
  ~CallFrame() {
    RunCleanups();
    for (auto& owner : nested_owners) Py_DECREF(owner.second);
  }

  void RunCleanups() {
    if (cleanups.empty()) return;
    // The call's error is put aside, and any error a cleanup leaves is reported as
    // unraisable, like __del__'s.
    PendingErrorStash stash;
    for (Cleanup& c : cleanups) {
      if (c.release != nullptr) c.release(c.ptr);
      Py_XDECREF(c.keep_alive);
      if (PyErr_Occurred()) PyErr_WriteUnraisable(nullptr);
    }
    cleanups.clear();
  }
};

/*!
 * \brief The class an error of `kind` ("ValueError", ...) is raised as (error_kinds.cc):
 *  a registered class, else the builtin exception of that name, else RuntimeError. Borrowed.
 */
PyObject* ExceptionForKind(const char* kind);

/*! \brief The kind an exception class is sent to C++ as: its registered kind, else its name. */
std::string KindForException(PyObject* type);

/*!
 * \brief Replaces the pending error with one of `type` whose message is `format` with `name`
 *  (%s) and the pending error (%S), which becomes its __cause__.
 */
void RaiseFromCause(PyObject* type, const char* format, const char* name);

/*!
 * \brief Turn a finished call into its Python result: the converted value, or the raised
 *        exception. Releases result->owner either way.
 */
PyObject* FinishCall(const CallFrame& frame, int rc, TVMFFIResult* result);

/*!
 * \brief The values that convert alike as call results and as arguments of Python callbacks:
 * None, int, float, bool, bytes and pointers. Sets *done and returns the object (nullptr with
 * a Python error on failure); *done false for every other type code.
 */
inline PyObject* ScalarToPython(const TVMFFIAny& v, bool* done) {
  *done = true;
  switch (v.type_code) {
    case kTVMFFINone:
      Py_RETURN_NONE;
    case kTVMFFIInt:
      if (v.flags & TVM_FFI_INT_IS_UNSIGNED) {
        return PyLong_FromUnsignedLongLong(static_cast<unsigned long long>(v.v_int64));
      }
      return PyLong_FromLongLong(v.v_int64);
    case kTVMFFIFloat:
      return PyFloat_FromDouble(v.v_float64);
    case kTVMFFIBool:
      return PyBool_FromLong(v.v_int64 != 0);
    case kTVMFFIBytes:
      return PyBytes_FromStringAndSize(v.v_str, static_cast<Py_ssize_t>(v.size));
    case kTVMFFIOpaquePtr:
      if (v.v_ptr == nullptr) Py_RETURN_NONE;
      return PyLong_FromVoidPtr(v.v_ptr);
    default:
      *done = false;
      return nullptr;
  }
}

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_CALL_FRAME_H_
