/*
 * What the runtime's source files share: object allocation, reference counting, values,
 * strings and the error slot. Nothing here is exported (the library is built with hidden
 * visibility and a version script that keeps only the TVMFFI* C functions).
 */
#ifndef TVM_FFI_RUNTIME_INTERNAL_H_
#define TVM_FFI_RUNTIME_INTERNAL_H_

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <utility>

namespace tvm_ffi_runtime {

// ---- errors: runtime code throws RtError; every C entry point catches it into the slot ----

struct RtError {
  std::string kind;
  std::string message;
};

[[noreturn]] inline void Throw(const char* kind, std::string message) {
  throw RtError{kind, std::move(message)};
}

// Puts kind/message into the calling thread's slot (error.cc); returns -1 for `return`.
int RaiseInSlot(std::string_view kind, std::string_view message);

// Wraps the body of a C entry point that returns 0 / -1.
#define TVM_FFI_RT_BEGIN() try {
#define TVM_FFI_RT_END()                                                   \
  }                                                                        \
  catch (const ::tvm_ffi_runtime::RtError& e) {                            \
    return ::tvm_ffi_runtime::RaiseInSlot(e.kind, e.message);              \
  }                                                                        \
  catch (const std::bad_alloc&) {                                          \
    return ::tvm_ffi_runtime::RaiseInSlot("MemoryError", "out of memory"); \
  }                                                                        \
  catch (const std::exception& e) {                                        \
    return ::tvm_ffi_runtime::RaiseInSlot("InternalError", e.what());      \
  }                                                                        \
  return 0;

// ---- objects ----

inline TVMFFIObject* Header(void* obj) { return static_cast<TVMFFIObject*>(obj); }
void IncRef(TVMFFIObject* obj);
void DecRef(TVMFFIObject* obj);

// Memory for an object of `size` bytes from the current custom allocator (object.cc); the
// header is set to strong 1 / weak 1, `type_index` and `deleter`. A deleter frees the memory
// with FreeObjectSpace.
void* AllocObject(size_t size, int32_t type_index, void (*deleter)(void*, int));
void FreeObjectSpace(void* obj);

// The deleter of objects whose contents need no destruction (flat memory).
void FlatDeleter(void* obj, int flags);

// ---- values ----

inline bool IsObject(const TVMFFIAny& v) { return v.type_index >= kTVMFFIStaticObjectBegin; }
inline TVMFFIAny NoneValue() {
  TVMFFIAny v;
  v.type_index = kTVMFFINone;
  v.zero_padding = 0;
  v.v_int64 = 0;
  return v;
}
inline TVMFFIAny IntValue(int64_t x) {
  TVMFFIAny v = NoneValue();
  v.type_index = kTVMFFIInt;
  v.v_int64 = x;
  return v;
}
inline TVMFFIAny BoolValue(bool x) {
  TVMFFIAny v = NoneValue();
  v.type_index = kTVMFFIBool;
  v.v_int64 = x ? 1 : 0;
  return v;
}
inline TVMFFIAny ObjectValue(TVMFFIObject* obj) {
  TVMFFIAny v = NoneValue();
  v.type_index = obj->type_index;
  v.v_obj = obj;
  return v;
}
inline void ReleaseValue(TVMFFIAny* v) {
  if (IsObject(*v)) DecRef(v->v_obj);
  *v = NoneValue();
}
// An owned copy of a view (raw strings and byte arrays become String/Bytes).
TVMFFIAny OwnedCopy(const TVMFFIAny& view);

// ---- type registration (types.cc) ----

// While the loader runs a library's static initialisers, a registration that disagrees with
// an earlier one (D6) is recorded instead of failed: an error there would be thrown inside the
// library's initialiser, where nothing catches it and the process ends. The loader then
// refuses the library with the recorded message (the first conflict).
void BeginLoadChecks();
std::string EndLoadChecks();

// ---- strings (string.cc) ----

TVMFFIAny MakeStr(std::string_view s, bool bytes);
// The characters of a string-like value: small str/bytes, raw str, byte array pointer,
// String/Bytes object. Throws TypeError naming `what` otherwise.
std::string_view StrView(const TVMFFIAny& v, const char* what);
bool IsStrLike(const TVMFFIAny& v);
// A printable name of a value's type, for messages.
std::string TypeName(int32_t type_index);

// ---- functions (function.cc) ----

// A function object over a C++ callable taking (args, n) and returning the result (owned);
// an RtError it throws becomes the call's error.
using NativeFn = std::function<TVMFFIAny(const TVMFFIAny* args, int32_t n)>;
TVMFFIObject* MakeNativeFunction(NativeFn fn);
// Registers a runtime global at load time (static initialisers of the runtime's files).
void RegisterGlobalNative(const char* name, NativeFn fn);
void CheckArgCount(const char* fname, int32_t got, int32_t expected);
int64_t IntArg(const char* fname, const TVMFFIAny* args, int32_t i);
// Calls a function object; an error it raises is rethrown as RtError.
TVMFFIAny CallFunction(TVMFFIObject* fn, const TVMFFIAny* args, int32_t n);
// Moves the error raised on this thread (a C function returned -1) into an RtError.
[[noreturn]] void RethrowRaised();

// ---- containers (containers.cc) ----

// A new Array holding owned copies of items.
TVMFFIAny MakeArray(const TVMFFIAny* items, int32_t n);
// The elements of an Array or List object.
const TVMFFIAny* SeqItems(TVMFFIObject* seq, int64_t* size);

// ---- tensors (tensor.cc) ----

// A TensorObj owning m (its deleter runs when the object dies).
TVMFFIObject* TensorFromManagedVersioned(DLManagedTensorVersioned* m);

}  // namespace tvm_ffi_runtime

#endif  // TVM_FFI_RUNTIME_INTERNAL_H_
