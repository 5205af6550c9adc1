// Function objects, calls and the global function table.
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// FunctionObj: the header, the TVMFFIFunctionCell at 24 (what callers read), then what the
// creator handed over. Callers call cell.safe_call with the object itself; the trampoline
// passes the creator's own `self` on.
struct FunctionObject {
  TVMFFIObject header;
  TVMFFIFunctionCell cell;
  TVMFFISafeCallType user_call;
  void* self;
  void (*self_deleter)(void*);
};

int Trampoline(void* obj, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  auto* f = static_cast<FunctionObject*>(obj);
  return f->user_call(f->self, args, n, result);
}

void FunctionDeleter(void* obj, int flags) {
  auto* f = static_cast<FunctionObject*>(obj);
  if ((flags & kTVMFFIObjectDeleterFlagBitMaskStrong) && f->self_deleter != nullptr) {
    f->self_deleter(f->self);
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(obj);
}

TVMFFIObject* NewFunction(void* self, TVMFFISafeCallType safe_call, void (*deleter)(void*)) {
  auto* f = static_cast<FunctionObject*>(
      AllocObject(sizeof(FunctionObject), kTVMFFIFunction, &FunctionDeleter));
  f->cell.safe_call = &Trampoline;
  f->cell.cpp_call = nullptr;  // never a C++ shortcut: no exception crosses a library
  f->user_call = safe_call;
  f->self = self;
  f->self_deleter = deleter;
  return &f->header;
}

int NativeSafeCall(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  TVM_FFI_RT_BEGIN();
  *result = (*static_cast<NativeFn*>(self))(args, n);
  TVM_FFI_RT_END();
}

void NativeDelete(void* self) { delete static_cast<NativeFn*>(self); }

struct GlobalTable {
  std::mutex mutex;
  std::map<std::string, TVMFFIObject*> functions;  // each holds one reference
};

GlobalTable& Globals() {
  static GlobalTable* table = new GlobalTable();  // never destroyed: see TypeTable
  return *table;
}

void SetGlobal(std::string name, TVMFFIObject* fn, bool allow_override) {
  if (fn == nullptr || fn->type_index != kTVMFFIFunction) {
    Throw("TypeError", "global function '" + name + "' must be a Function (got " +
                           (fn == nullptr ? std::string("None") : TypeName(fn->type_index)) + ")");
  }
  GlobalTable& g = Globals();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto it = g.functions.find(name);
  if (it != g.functions.end()) {
    if (!allow_override) {
      Throw("RuntimeError", "global function '" + name +
                                "' is already registered (by another library, or by an earlier "
                                "build of this one); a registration with override "
                                "(Function::SetGlobal(name, f, true)) replaces it");
    }
    IncRef(fn);
    DecRef(it->second);
    it->second = fn;
    return;
  }
  IncRef(fn);
  g.functions.emplace(std::move(name), fn);
}

}  // namespace

TVMFFIObject* MakeNativeFunction(NativeFn fn) {
  auto* self = new NativeFn(std::move(fn));
  try {
    return NewFunction(self, &NativeSafeCall, &NativeDelete);
  } catch (...) {
    delete self;
    throw;
  }
}

void RegisterGlobalNative(const char* name, NativeFn fn) {
  TVMFFIObject* f = MakeNativeFunction(std::move(fn));
  SetGlobal(name, f, true);
  DecRef(f);
}

void CheckArgCount(const char* fname, int32_t got, int32_t expected) {
  if (got != expected) {
    Throw("TypeError", std::string(fname) + " takes " + std::to_string(expected) + " argument" +
                           (expected == 1 ? "" : "s") + " (got " + std::to_string(got) + ")");
  }
}

int64_t IntArg(const char* fname, const TVMFFIAny* args, int32_t i) {
  if (args[i].type_index != kTVMFFIInt && args[i].type_index != kTVMFFIBool) {
    Throw("TypeError", std::string(fname) + ": argument " + std::to_string(i) +
                           " must be an int (got " + TypeName(args[i].type_index) + ")");
  }
  return args[i].v_int64;
}

TVMFFIAny CallFunction(TVMFFIObject* fn, const TVMFFIAny* args, int32_t n) {
  TVMFFIAny result = NoneValue();
  auto* cell = reinterpret_cast<TVMFFIFunctionCell*>(fn + 1);
  if (cell->safe_call(fn, args, n, &result) != 0) RethrowRaised();
  return result;
}

void RethrowRaised() {
  TVMFFIObjectHandle err = nullptr;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == nullptr) Throw("RuntimeError", "a function failed without raising an error");
  auto* ecell = reinterpret_cast<TVMFFIErrorCell*>(Header(err) + 1);
  RtError e{std::string(ecell->kind.data, ecell->kind.size),
            std::string(ecell->message.data, ecell->message.size)};
  DecRef(Header(err));
  throw e;
}

namespace {

// ffi.FunctionListGlobalNamesFunctor() returns a function f over a snapshot of the names:
// f(-1) is their number, f(i) the i-th name (apache's convention, used by its headers).
TVMFFIAny ListGlobalNamesFunctor(const TVMFFIAny*, int32_t n) {
  CheckArgCount("ffi.FunctionListGlobalNamesFunctor", n, 0);
  auto names = std::make_shared<std::vector<std::string>>();
  {
    GlobalTable& g = Globals();
    std::lock_guard<std::mutex> lock(g.mutex);
    for (const auto& kv : g.functions) names->push_back(kv.first);
  }
  TVMFFIObject* f = MakeNativeFunction([names](const TVMFFIAny* args, int32_t n) {
    CheckArgCount("ffi.FunctionListGlobalNamesFunctor()", n, 1);
    int64_t i = IntArg("ffi.FunctionListGlobalNamesFunctor()", args, 0);
    if (i == -1) return IntValue(static_cast<int64_t>(names->size()));
    if (i < 0 || i >= static_cast<int64_t>(names->size())) {
      Throw("IndexError", "global name index " + std::to_string(i) + " out of range for " +
                              std::to_string(names->size()) + " names");
    }
    return MakeStr((*names)[static_cast<size_t>(i)], false);
  });
  return ObjectValue(f);
}

// ffi.FunctionRemoveGlobal(name) -> bool: whether a function of that name was removed.
TVMFFIAny RemoveGlobal(const TVMFFIAny* args, int32_t n) {
  CheckArgCount("ffi.FunctionRemoveGlobal", n, 1);
  std::string name(StrView(args[0], "ffi.FunctionRemoveGlobal: name"));
  TVMFFIObject* removed = nullptr;
  {
    GlobalTable& g = Globals();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto it = g.functions.find(name);
    if (it != g.functions.end()) {
      removed = it->second;
      g.functions.erase(it);
    }
  }
  if (removed != nullptr) DecRef(removed);
  return BoolValue(removed != nullptr);
}

const bool registered = [] {
  RegisterGlobalNative("ffi.FunctionListGlobalNamesFunctor", &ListGlobalNamesFunctor);
  RegisterGlobalNative("ffi.FunctionRemoveGlobal", &RemoveGlobal);
  return true;
}();

}  // namespace
}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFIFunctionCreate(void* self, TVMFFISafeCallType safe_call, void (*deleter)(void* self),
                         TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  *out = NewFunction(self, safe_call, deleter);
  TVM_FFI_RT_END();
}

int TVMFFIFunctionCall(TVMFFIObjectHandle func, TVMFFIAny* args, int32_t num_args,
                       TVMFFIAny* result) {
  auto* cell = reinterpret_cast<TVMFFIFunctionCell*>(Header(func) + 1);
  return cell->safe_call(func, args, num_args, result);
}

int TVMFFIFunctionSetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle f, int allow_override) {
  TVM_FFI_RT_BEGIN();
  SetGlobal(std::string(name->data, name->size), Header(f), allow_override != 0);
  TVM_FFI_RT_END();
}

int TVMFFIFunctionSetGlobalFromMethodInfo(const TVMFFIMethodInfo* method_info, int allow_override) {
  TVM_FFI_RT_BEGIN();
  std::string name(method_info->name.data, method_info->name.size);
  if (method_info->method.type_index != kTVMFFIFunction) {
    Throw("TypeError", "global function '" + name + "' must be a Function (got " +
                           TypeName(method_info->method.type_index) + ")");
  }
  SetGlobal(std::move(name), method_info->method.v_obj, allow_override != 0);
  TVM_FFI_RT_END();
}

int TVMFFIFunctionGetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  GlobalTable& g = Globals();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto it = g.functions.find(std::string(name->data, name->size));
  if (it == g.functions.end()) {
    *out = nullptr;
    return 0;
  }
  IncRef(it->second);
  *out = it->second;
  TVM_FFI_RT_END();
}

}  // extern "C"
