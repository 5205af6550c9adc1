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

static TVMFFIFunctionEntry Entry(void* lib, const char* name) {
  std::string symbol = std::string(TVM_FFI_SYMBOL_PREFIX) + name;
  return reinterpret_cast<TVMFFIFunctionEntry>(dlsym(lib, symbol.c_str()));
}

static void* CallerStream(void*, int32_t, int32_t) { return nullptr; }

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
    std::memset(&a, 0, sizeof(a));
    a.type_code = kTVMFFIDLTensorPtr;
    a.v_tensor = &t;
  }
  TVMFFIAny ints[2];
  std::memset(ints, 0, sizeof(ints));
  ints[0].type_code = ints[1].type_code = kTVMFFIInt;
  ints[0].v_int64 = 40;
  ints[1].v_int64 = 2;
  TVMFFIAny none;
  std::memset(&none, 0, sizeof(none));
  none.type_code = kTVMFFINone;
  TVMFFICallContext ctx{TVM_FFI_ABI_VERSION, nullptr, CallerStream, nullptr};

  TVMFFIFunctionEntry noop3 = Entry(lib, "noop3");
  TVMFFIFunctionEntry add_int = Entry(lib, "add_int");
  TVMFFIFunctionEntry maybe = Entry(lib, "maybe");
  TVMFFIFunctionEntry greet = Entry(lib, "greet");
  if (!noop3 || !add_int || !maybe || !greet) return 2;

  TVMFFIResult result;
  int failures = 0;
  noop3(&ctx, tensors, 3, &result);  // warm up (first calls may bind lazily)
  add_int(&ctx, ints, 2, &result);
  maybe(&ctx, &none, 1, &result);

  g_counting = true;
  for (int i = 0; i < 10000; ++i) {
    failures += noop3(&ctx, tensors, 3, &result) != 0 || result.owner != nullptr;
    failures += add_int(&ctx, ints, 2, &result) != 0 || result.value.v_int64 != 42;
    failures += maybe(nullptr, &none, 1, &result) != 0 || result.owner != nullptr;
  }
  g_counting = false;
  std::cout << "allocations in scalar calls: " << g_allocations << std::endl;

  // The hook works: a string result must allocate its owner.
  TVMFFIAny strs[3];
  std::memset(strs, 0, sizeof(strs));
  const char* words[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    strs[i].type_code = kTVMFFIStr;
    strs[i].v_str = words[i];
    strs[i].size = 1;
  }
  g_counting = true;
  long before = g_allocations;
  failures += greet(&ctx, strs, 3, &result) != 0;
  g_counting = false;
  std::cout << "allocations in a string call: " << (g_allocations - before) << std::endl;
  if (result.owner != nullptr) result.owner->deleter(result.owner);
  if (g_allocations - before == 0) ++failures;

  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    constexpr int kCalls = 1000000;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) noop3(&ctx, tensors, 3, &result);
    auto stop = std::chrono::steady_clock::now();
    double ns = std::chrono::duration<double, std::nano>(stop - start).count() / kCalls;
    if (ns < best) best = ns;
  }
  std::cout << "noop3 call: " << best << " ns" << std::endl;
  return failures == 0 ? 0 : 1;
}
