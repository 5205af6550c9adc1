// The call path of functions with scalar or tensor results must not allocate, and should cost
// a few nanoseconds. malloc is interposed here (the executable's definition wins over libc's
// for the dlopen'ed library too) to count every allocation made during the calls.
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>

extern "C" void* __libc_malloc(size_t size);
static bool g_counting = false;
static long g_allocations = 0;

extern "C" void* malloc(size_t size) {
  if (g_counting) ++g_allocations;
  return __libc_malloc(size);
}

static TVMFFISafeCallType Entry(void* lib, const char* name) {
  std::string symbol = std::string("__tvm_ffi_") + name;
  return reinterpret_cast<TVMFFISafeCallType>(dlsym(lib, symbol.c_str()));
}

static TVMFFIAny Value(int32_t type_index) {
  TVMFFIAny a;
  std::memset(&a, 0, sizeof(a));
  a.type_index = type_index;
  return a;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::cout << "dlopen failed: " << dlerror() << std::endl;
    return 2;
  }
  float data[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  DLTensor t{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  TVMFFIAny tensors[3];
  for (TVMFFIAny& a : tensors) {
    a = Value(kTVMFFIDLTensorPtr);
    a.v_ptr = &t;
  }
  TVMFFIAny ints[2] = {Value(kTVMFFIInt), Value(kTVMFFIInt)};
  ints[0].v_int64 = 40;
  ints[1].v_int64 = 2;
  TVMFFIAny none = Value(kTVMFFINone);
  TVMFFISafeCallType noop3 = Entry(lib, "noop3");
  TVMFFISafeCallType add_int = Entry(lib, "add_int");
  TVMFFISafeCallType maybe = Entry(lib, "maybe");
  TVMFFISafeCallType greet = Entry(lib, "greet");
  if (!noop3 || !add_int || !maybe || !greet) return 2;
  TVMFFIAny result = Value(kTVMFFINone);
  int failures = 0;
  noop3(nullptr, tensors, 3, &result);  // warm up (first calls may bind lazily)
  add_int(nullptr, ints, 2, &result);
  maybe(nullptr, &none, 1, &result);
  g_counting = true;
  for (int i = 0; i < 10000; ++i) {
    result = Value(kTVMFFINone);
    failures += noop3(nullptr, tensors, 3, &result) != 0 || result.type_index != kTVMFFINone;
    failures += add_int(nullptr, ints, 2, &result) != 0 || result.v_int64 != 42;
    failures += maybe(nullptr, &none, 1, &result) != 0 || result.type_index != kTVMFFINone;
  }
  g_counting = false;
  std::cout << "allocations in scalar calls: " << g_allocations << std::endl;
  // The hook works: a string result longer than 7 bytes must allocate its object.
  TVMFFIAny strs[3] = {Value(kTVMFFIRawStr), Value(kTVMFFIRawStr), Value(kTVMFFIRawStr)};
  const char* words[3] = {"a longer name", "greetings", "!"};
  for (int i = 0; i < 3; ++i) strs[i].v_c_str = words[i];
  g_counting = true;
  long before = g_allocations;
  result = Value(kTVMFFINone);
  failures += greet(nullptr, strs, 3, &result) != 0;
  g_counting = false;
  if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
  std::cout << "allocations in a string call: " << (g_allocations - before) << std::endl;
  if (g_allocations - before == 0) ++failures;

  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    constexpr int kCalls = 1000000;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) noop3(nullptr, tensors, 3, &result);
    auto stop = std::chrono::steady_clock::now();
    double ns = std::chrono::duration<double, std::nano>(stop - start).count() / kCalls;
    if (ns < best) best = ns;
  }
  std::cout << "noop3 call: " << best << " ns" << std::endl;
  return failures == 0 ? 0 : 1;
}
