// A library that implements ABI version 3's objects by hand, on c_api.h alone: a counter
// object type, function objects, a module object, and calls into the registry through its
// weak symbols. The Python tests (test_core_objects.py, test_registry.py, test_libinfo.py)
// build it; it needs no C++ header beyond the C ABI, so it tests _core and libtvm_ffi.so alone.
#include <tvm/ffi/c_api.h>

#include <atomic>
#include <cstring>
#include <string>

namespace {

std::atomic<int> g_alive{0};  // live objects of this library (counters and functions)

void SetError(TVMFFIResult* result, const char* kind, const char* message) {
  static thread_local TVMFFIErrorInfo info;
  info = TVMFFIErrorInfo{kind, message, "", 0};
  result->value.type_code = kTVMFFIError;
  result->value.v_ptr = &info;
  result->owner = nullptr;
}

void SetInt(TVMFFIResult* result, int64_t v) {
  result->value.type_code = kTVMFFIInt;
  result->value.flags = 0;
  result->value.v_int64 = v;
  result->owner = nullptr;
}

void SetObject(TVMFFIResult* result, TVMFFIRefObject* obj) {
  result->value.type_code = kTVMFFIRefObject;
  result->value.flags = 0;
  result->value.v_ptr = obj;
  result->owner = nullptr;
}

// ---- a counter: test.Counter ----

struct Counter : TVMFFIRefObject {
  std::atomic<int> refs{1};
  int64_t value = 0;
};

void CounterIncRef(TVMFFIRefObject* self) { ++static_cast<Counter*>(self)->refs; }
void CounterDecRef(TVMFFIRefObject* self) {
  auto* c = static_cast<Counter*>(self);
  if (--c->refs == 0) {
    delete c;
    --g_alive;
  }
}

const TVMFFIObjectType kCounterType = {
    TVM_FFI_ABI_VERSION, 0, "test.Counter", CounterIncRef, CounterDecRef, nullptr, nullptr,
};

Counter* NewCounter(int64_t value) {
  auto* c = new Counter();
  c->type = &kCounterType;
  c->value = value;
  ++g_alive;
  return c;
}

Counter* AsCounter(const TVMFFIAny& v) {
  if (v.type_code != kTVMFFIRefObject) return nullptr;
  auto* obj = static_cast<TVMFFIRefObject*>(v.v_ptr);
  return obj->type == &kCounterType ? static_cast<Counter*>(obj) : nullptr;
}

// ---- function objects over a C++ function and one captured int ----

using Impl = int (*)(int64_t captured, const TVMFFIAny* args, int32_t num_args,
                     TVMFFIResult* result);

struct Fn : TVMFFIRefObject {
  std::atomic<int> refs{1};
  Impl impl;
  int64_t captured;
};

void FnIncRef(TVMFFIRefObject* self) { ++static_cast<Fn*>(self)->refs; }
void FnDecRef(TVMFFIRefObject* self) {
  auto* f = static_cast<Fn*>(self);
  if (--f->refs == 0) {
    delete f;
    --g_alive;
  }
}
int FnCall(TVMFFIRefObject* self, const TVMFFICallContext*, const TVMFFIAny* args,
           int32_t num_args, TVMFFIResult* result) {
  auto* f = static_cast<Fn*>(self);
  return f->impl(f->captured, args, num_args, result);
}

const TVMFFIObjectType kFnType = {
    TVM_FFI_ABI_VERSION, TVM_FFI_OBJECT_IS_FUNCTION, "ffi.Function", FnIncRef, FnDecRef, FnCall,
    nullptr,
};

TVMFFIRefObject* NewFn(Impl impl, int64_t captured = 0) {
  auto* f = new Fn();
  f->type = &kFnType;
  f->impl = impl;
  f->captured = captured;
  ++g_alive;
  return f;
}

int AddCaptured(int64_t k, const TVMFFIAny* args, int32_t n, TVMFFIResult* result) {
  if (n != 1 || args[0].type_code != kTVMFFIInt) {
    SetError(result, "TypeError", "adder(int) takes one int");
    return -1;
  }
  SetInt(result, args[0].v_int64 + k);
  return 0;
}

int AddTwo(int64_t, const TVMFFIAny* args, int32_t n, TVMFFIResult* result) {
  if (n != 2 || args[0].type_code != kTVMFFIInt || args[1].type_code != kTVMFFIInt) {
    SetError(result, "TypeError", "add(int, int) takes two ints");
    return -1;
  }
  SetInt(result, args[0].v_int64 + args[1].v_int64);
  return 0;
}

// test.Counter's registered members: __ffi_init__(int), value(self), add(self, int).
int CounterInit(int64_t, const TVMFFIAny* args, int32_t n, TVMFFIResult* result) {
  if (n != 1 || args[0].type_code != kTVMFFIInt) {
    SetError(result, "TypeError", "Counter(start: int) takes one int");
    return -1;
  }
  SetObject(result, NewCounter(args[0].v_int64));
  return 0;
}

int CounterValue(int64_t, const TVMFFIAny* args, int32_t n, TVMFFIResult* result) {
  Counter* c = n == 1 ? AsCounter(args[0]) : nullptr;
  if (c == nullptr) {
    SetError(result, "TypeError", "value(self) takes a test.Counter");
    return -1;
  }
  SetInt(result, c->value);
  return 0;
}

int CounterAdd(int64_t, const TVMFFIAny* args, int32_t n, TVMFFIResult* result) {
  Counter* c = n == 2 ? AsCounter(args[0]) : nullptr;
  if (c == nullptr || args[1].type_code != kTVMFFIInt) {
    SetError(result, "TypeError", "add(self, int) takes a test.Counter and an int");
    return -1;
  }
  c->value += args[1].v_int64;
  SetInt(result, c->value);
  return 0;
}

// ---- a module object: test.Module, with the function "add" ----

struct Mod : TVMFFIRefObject {
  std::atomic<int> refs{1};
};

void ModIncRef(TVMFFIRefObject* self) { ++static_cast<Mod*>(self)->refs; }
void ModDecRef(TVMFFIRefObject* self) {
  auto* m = static_cast<Mod*>(self);
  if (--m->refs == 0) {
    delete m;
    --g_alive;
  }
}
int ModGetFunction(TVMFFIRefObject*, const char* name, TVMFFIResult* result) {
  if (std::strcmp(name, "broken") == 0) {
    SetError(result, "ValueError", "the function 'broken' cannot be made");
    return -1;
  }
  if (std::strcmp(name, "add") == 0) {
    SetObject(result, NewFn(AddTwo));
  } else {
    result->value.type_code = kTVMFFINone;
    result->owner = nullptr;
  }
  return 0;
}

const TVMFFIObjectType kModType = {
    TVM_FFI_ABI_VERSION, TVM_FFI_OBJECT_IS_MODULE, "test.Module", ModIncRef, ModDecRef, nullptr,
    ModGetFunction,
};

TVMFFIRefObject* g_kept = nullptr;  // a function object kept beyond the call that passed it

}  // namespace

// Exported entries (the plain ABI of c_api.h). Each answers the info query first.
#define OBJECTS_LIB_ENTRY(NAME)                                                              \
  static int NAME##_impl(const TVMFFICallContext* ctx, const TVMFFIAny* args, int32_t n,     \
                         TVMFFIResult* result);                                              \
  extern "C" __attribute__((visibility("default"))) int __tvm_ffi_##NAME(                    \
      const TVMFFICallContext* ctx, const TVMFFIAny* args, int32_t n, TVMFFIResult* result) { \
    static const TVMFFIFunctionInfo info = {TVM_FFI_ABI_VERSION, -1, #NAME, #NAME "(...)"};  \
    if (n == TVM_FFI_QUERY_INFO) {                                                           \
      result->value.type_code = kTVMFFIOpaquePtr;                                            \
      result->value.v_ptr = const_cast<TVMFFIFunctionInfo*>(&info);                          \
      result->owner = nullptr;                                                               \
      return 0;                                                                              \
    }                                                                                        \
    return NAME##_impl(ctx, args, n, result);                                                \
  }                                                                                          \
  static int NAME##_impl(const TVMFFICallContext* ctx, const TVMFFIAny* args, int32_t n,     \
                         TVMFFIResult* result)

OBJECTS_LIB_ENTRY(alive) {
  SetInt(result, g_alive.load());
  return 0;
}

OBJECTS_LIB_ENTRY(make_counter) {
  return CounterInit(0, args, n, result);
}

OBJECTS_LIB_ENTRY(counter_value) {
  return CounterValue(0, args, n, result);
}

OBJECTS_LIB_ENTRY(make_adder) {
  if (n != 1 || args[0].type_code != kTVMFFIInt) {
    SetError(result, "TypeError", "make_adder(int) takes one int");
    return -1;
  }
  SetObject(result, NewFn(AddCaptured, args[0].v_int64));
  return 0;
}

OBJECTS_LIB_ENTRY(make_module) {
  auto* m = new Mod();
  m->type = &kModType;
  ++g_alive;
  SetObject(result, m);
  return 0;
}

// call_with(f, *args): f(*args) through its type->call; the result is passed through.
OBJECTS_LIB_ENTRY(call_with) {
  if (n < 1 || args[0].type_code != kTVMFFIRefObject) {
    SetError(result, "TypeError", "call_with(f, *args) takes a function first");
    return -1;
  }
  auto* f = static_cast<TVMFFIRefObject*>(args[0].v_ptr);
  if ((f->type->flags & TVM_FFI_OBJECT_IS_FUNCTION) == 0) {
    SetError(result, "TypeError", "call_with: the first argument is not a function");
    return -1;
  }
  return f->type->call(f, ctx, args + 1, n - 1, result);
}

// call_global(name, *args): the registry's function `name`, called with args.
OBJECTS_LIB_ENTRY(call_global) {
  if (n < 1 || args[0].type_code != kTVMFFIStr) {
    SetError(result, "TypeError", "call_global(name, *args) takes a name first");
    return -1;
  }
  if (TVMFFIFunctionGetGlobal == nullptr) {
    SetError(result, "RuntimeError", "the registry is not loaded");
    return -1;
  }
  TVMFFIRefObject* f = TVMFFIFunctionGetGlobal(args[0].v_str);
  if (f == nullptr) {
    SetError(result, "KeyError", "no such global function");
    return -1;
  }
  const int rc = f->type->call(f, ctx, args + 1, n - 1, result);
  f->type->dec_ref(f);
  return rc;
}

// What sglang's register_once() does: the type's constructor and methods, a global function.
OBJECTS_LIB_ENTRY(register_things) {
  if (TVMFFITypeSetMember == nullptr || TVMFFIFunctionSetGlobal == nullptr) {
    SetError(result, "RuntimeError", "the registry is not loaded");
    return -1;
  }
  TVMFFIRefObject* members[] = {NewFn(CounterInit), NewFn(CounterValue), NewFn(CounterAdd),
                                NewFn(AddTwo)};
  int rc = TVMFFITypeSetMember("test.Counter", "__ffi_init__", members[0], 1);
  rc |= TVMFFITypeSetMember("test.Counter", "value", members[1], 1);
  rc |= TVMFFITypeSetMember("test.Counter", "add", members[2], 1);
  rc |= TVMFFIFunctionSetGlobal("test.add", members[3], 1);
  for (TVMFFIRefObject* m : members) m->type->dec_ref(m);  // the registry holds its own
  SetInt(result, rc);
  return 0;
}

OBJECTS_LIB_ENTRY(keep) {
  if (n != 1 || args[0].type_code != kTVMFFIRefObject) {
    SetError(result, "TypeError", "keep(f) takes a function");
    return -1;
  }
  if (g_kept != nullptr) g_kept->type->dec_ref(g_kept);
  g_kept = static_cast<TVMFFIRefObject*>(args[0].v_ptr);
  g_kept->type->inc_ref(g_kept);
  result->value.type_code = kTVMFFINone;
  result->owner = nullptr;
  return 0;
}

OBJECTS_LIB_ENTRY(call_kept) {
  if (g_kept == nullptr) {
    SetError(result, "RuntimeError", "nothing kept");
    return -1;
  }
  return g_kept->type->call(g_kept, ctx, args, n, result);
}

OBJECTS_LIB_ENTRY(drop_kept) {
  if (g_kept != nullptr) g_kept->type->dec_ref(g_kept);
  g_kept = nullptr;
  result->value.type_code = kTVMFFINone;
  result->owner = nullptr;
  return 0;
}

// type_key(obj): the type key of any object argument.
OBJECTS_LIB_ENTRY(type_key) {
  if (n != 1 || args[0].type_code != kTVMFFIRefObject) {
    SetError(result, "TypeError", "type_key(obj) takes an object");
    return -1;
  }
  const char* key = static_cast<TVMFFIRefObject*>(args[0].v_ptr)->type->type_key;
  result->value.type_code = kTVMFFIStr;
  result->value.v_str = key;
  result->value.size = static_cast<int64_t>(std::strlen(key));
  result->owner = nullptr;
  return 0;
}
