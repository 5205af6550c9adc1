// A library that implements objects by hand on the tvm-ffi C ABI (c_api.h alone): a counter
// object type registered in the runtime's type table with a constructor and methods, function
// objects, and calls through global functions. The Python tests (test_core_objects.py,
// test_registry.py, test_libinfo.py) build it linked to libtvm_ffi.so; it needs no C++ header
// beyond the C ABI, so it tests _core and the runtime alone.
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<int> g_alive{0};  // live objects of this library (counters and functions)

int Fail(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}

void SetInt(TVMFFIAny* result, int64_t v) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = v;
}

void SetObject(TVMFFIAny* result, TVMFFIObject* obj) {
  result->type_index = obj->type_index;
  result->zero_padding = 0;
  result->v_obj = obj;
}

// ---- a counter: test.Counter ----

struct Counter {
  TVMFFIObject header;
  int64_t value;
};

int32_t CounterIndex() {
  static const int32_t index = [] {
    const TVMFFIByteArray key = {"test.Counter", 12};
    return TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 0, kTVMFFIObject);
  }();
  return index;
}

void CounterDelete(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) {
    std::free(self);
    --g_alive;
  }
}

TVMFFIObject* NewCounter(int64_t value) {
  auto* c = static_cast<Counter*>(std::calloc(1, sizeof(Counter)));
  c->header.combined_ref_count = (uint64_t{1} << 32) | 1;  // strong 1, weak 1
  c->header.type_index = CounterIndex();
  c->header.deleter = CounterDelete;
  c->value = value;
  ++g_alive;
  return &c->header;
}

Counter* AsCounter(const TVMFFIAny& v) {
  return v.type_index == CounterIndex() ? reinterpret_cast<Counter*>(v.v_obj) : nullptr;
}

// __ffi_init__(start), value(self), add(self, n): as registered methods.
int CounterInit(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    return Fail("TypeError", "test.Counter(int) takes one int");
  }
  SetObject(result, NewCounter(args[0].v_int64));
  return 0;
}

int CounterValue(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  Counter* c = n == 1 ? AsCounter(args[0]) : nullptr;
  if (c == nullptr) return Fail("TypeError", "value(Counter) takes one counter");
  SetInt(result, c->value);
  return 0;
}

int CounterAdd(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  Counter* c = n == 2 ? AsCounter(args[0]) : nullptr;
  if (c == nullptr || args[1].type_index != kTVMFFIInt) {
    return Fail("TypeError", "add(Counter, int) takes a counter and an int");
  }
  c->value += args[1].v_int64;
  SetInt(result, c->value);
  return 0;
}

int AddTwo(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 2 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt) {
    return Fail("TypeError", "test.add(int, int) takes two ints");
  }
  SetInt(result, args[0].v_int64 + args[1].v_int64);
  return 0;
}

// ---- function objects ----

// make_adder(k): a function object adding k, counted among the live objects.
int Adder(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 1 || args[0].type_index != kTVMFFIInt) return Fail("TypeError", "adder(int) takes one int");
  SetInt(result, args[0].v_int64 + *static_cast<int64_t*>(self));
  return 0;
}

void AdderDelete(void* self) {
  delete static_cast<int64_t*>(self);
  --g_alive;
}

TVMFFIObject* NewFunction(TVMFFISafeCallType call, void* self, void (*deleter)(void*)) {
  TVMFFIObjectHandle out = nullptr;
  if (TVMFFIFunctionCreate(self, call, deleter, &out) != 0) std::abort();
  return static_cast<TVMFFIObject*>(out);
}

int CallFunction(TVMFFIObject* f, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  return TVMFFIFunctionCall(f, const_cast<TVMFFIAny*>(args), n, result);
}

TVMFFIObject* g_kept = nullptr;  // keep(f) / call_kept / drop_kept

int RegisterMethod(int32_t index, const char* name, TVMFFISafeCallType call) {
  TVMFFIObject* f = NewFunction(call, nullptr, nullptr);
  TVMFFIMethodInfo info{};
  info.name = TVMFFIByteArray{name, std::strlen(name)};
  info.method.type_index = kTVMFFIFunction;
  info.method.v_obj = f;
  const int rc = TVMFFITypeRegisterMethod(index, &info);
  TVMFFIObjectDecRef(f);  // the type table holds its own reference
  return rc;
}

}  // namespace

#define OBJECTS_LIB_ENTRY(NAME)                                                       \
  extern "C" __attribute__((visibility("default"))) int __tvm_ffi_##NAME(             \
      void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result)

OBJECTS_LIB_ENTRY(alive) {
  SetInt(result, g_alive.load());
  return 0;
}

OBJECTS_LIB_ENTRY(make_counter) { return CounterInit(nullptr, args, n, result); }

OBJECTS_LIB_ENTRY(counter_value) { return CounterValue(nullptr, args, n, result); }

OBJECTS_LIB_ENTRY(type_key) {
  if (n != 1 || args[0].type_index < kTVMFFIStaticObjectBegin) {
    return Fail("TypeError", "type_key(obj) takes an object");
  }
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(args[0].type_index);
  return TVMFFIStringFromByteArray(&info->type_key, result);
}

OBJECTS_LIB_ENTRY(make_adder) {
  if (n != 1 || args[0].type_index != kTVMFFIInt) return Fail("TypeError", "make_adder(int) takes one int");
  ++g_alive;
  SetObject(result, NewFunction(Adder, new int64_t(args[0].v_int64), AdderDelete));
  return 0;
}

OBJECTS_LIB_ENTRY(call_with) {
  if (n < 1 || args[0].type_index != kTVMFFIFunction) {
    return Fail("TypeError", "call_with(f, *args) takes a function first");
  }
  return CallFunction(args[0].v_obj, args + 1, n - 1, result);
}

OBJECTS_LIB_ENTRY(call_global) {
  const TVMFFIByteArray* name = nullptr;
  TVMFFIByteArray small{};
  if (n >= 1 && args[0].type_index == kTVMFFISmallStr) {
    small = TVMFFIByteArray{args[0].v_bytes, args[0].small_str_len};
    name = &small;
  } else if (n >= 1 && args[0].type_index == kTVMFFIStr) {
    name = reinterpret_cast<const TVMFFIByteArray*>(args[0].v_obj + 1);
  }
  if (name == nullptr) return Fail("TypeError", "call_global(name, *args) takes a name first");
  TVMFFIObjectHandle f = nullptr;
  if (TVMFFIFunctionGetGlobal(name, &f) != 0) return -1;
  if (f == nullptr) return Fail("KeyError", "no such global function");
  const int rc = CallFunction(static_cast<TVMFFIObject*>(f), args + 1, n - 1, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

OBJECTS_LIB_ENTRY(register_things) {
  const int32_t index = CounterIndex();
  int rc = RegisterMethod(index, "__ffi_init__", CounterInit);
  rc |= RegisterMethod(index, "value", CounterValue);
  rc |= RegisterMethod(index, "add", CounterAdd);
  TVMFFIObject* add = NewFunction(AddTwo, nullptr, nullptr);
  const TVMFFIByteArray name = {"test.add", 8};
  rc |= TVMFFIFunctionSetGlobal(&name, add, 1);
  TVMFFIObjectDecRef(add);
  // The runtime's system library (ffi.SystemLib) then has a function test_add: a module object.
  rc |= TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_test_add", reinterpret_cast<void*>(AddTwo));
  SetInt(result, rc);
  return 0;
}

OBJECTS_LIB_ENTRY(keep) {
  if (n != 1 || args[0].type_index != kTVMFFIFunction) return Fail("TypeError", "keep(f) takes a function");
  if (g_kept != nullptr) TVMFFIObjectDecRef(g_kept);
  g_kept = args[0].v_obj;
  TVMFFIObjectIncRef(g_kept);
  result->type_index = kTVMFFINone;
  return 0;
}

OBJECTS_LIB_ENTRY(call_kept) {
  if (g_kept == nullptr) return Fail("RuntimeError", "nothing kept");
  return CallFunction(g_kept, args, n, result);
}

OBJECTS_LIB_ENTRY(drop_kept) {
  if (g_kept != nullptr) TVMFFIObjectDecRef(g_kept);
  g_kept = nullptr;
  result->type_index = kTVMFFINone;
  return 0;
}
