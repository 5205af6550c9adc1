// Calls the functions of export_lib.cc through the C ABI, as a loader does: dlsym of
// __tvm_ffi_<name> (the safe-call signature), arguments as TVMFFIAny views, the result owned
// by the caller, errors taken from the runtime's per-thread slot. Values are built and read
// with the headers' Any/AnyView, so this driver is itself a client of them.
#include <dlfcn.h>
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#define main testing_main
#include "testing.h"
#undef main

using tvm::ffi::Any;
using tvm::ffi::AnyView;
using tvm::ffi::Array;
using tvm::ffi::String;

static void* g_lib = nullptr;

/*! \brief One call: rc, the owned result, and "Kind: message" when it failed. */
struct Call {
  int rc = 0;
  Any value;
  std::string error;
  Call(const std::string& name, std::vector<AnyView> args) {
    auto entry = reinterpret_cast<TVMFFISafeCallType>(dlsym(g_lib, ("__tvm_ffi_" + name).c_str()));
    if (entry == nullptr) {
      rc = -100;
      error = "no entry __tvm_ffi_" + name;
      return;
    }
    std::vector<TVMFFIAny> raw;
    for (const AnyView& a : args) raw.push_back(tvm::ffi::details::AnyUnsafe::View(a));
    TVMFFIAny result{};
    result.type_index = kTVMFFINone;
    rc = entry(nullptr, raw.data(), static_cast<int32_t>(raw.size()), &result);
    if (rc == 0) {
      value = tvm::ffi::details::AnyUnsafe::FromOwned(result);
    } else {
      tvm::ffi::Error e = tvm::ffi::details::MoveFromRaised(name.c_str());
      error = e.kind() + ": " + e.message();
    }
  }
  template <typename T>
  T as() const {
    return value.cast<T>();
  }
};

#define EXPECT_CALL_ERROR(name, args, text) EXPECT_EQ(Call(name, args).error, std::string(text))
#define ARGS(...) (std::vector<AnyView>{__VA_ARGS__})

static DLTensor Vector(float* data, int64_t* shape) {
  return DLTensor{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
}

TEST(tensor_arguments) {
  float x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
  int64_t shape[1] = {3};
  DLTensor tx = Vector(x, shape), ty = Vector(y, shape);
  Call c("add_one", ARGS(&tx, &ty));
  EXPECT_EQ(c.rc, 0);
  EXPECT_TRUE(y[0] == 2 && y[1] == 3 && y[2] == 4);
  EXPECT_EQ(Call("ndim_const", ARGS(&tx)).as<int64_t>(), 1);
  EXPECT_EQ(Call("maybe_tensor", ARGS(&tx)).as<int64_t>(), 3);
  EXPECT_EQ(Call("maybe_tensor", ARGS(nullptr)).as<int64_t>(), -1);
  Array<Any> both{Any(AnyView(&tx)), Any(AnyView(&ty))};
  EXPECT_EQ(Call("total_numel", ARGS(both)).as<int64_t>(), 6);
  EXPECT_EQ(Call("dim_of", ARGS(&tx, -1)).as<int64_t>(), 3);
}

TEST(scalar_arguments_and_results) {
  EXPECT_EQ(Call("add_int", ARGS(40, 2)).as<int64_t>(), 42);
  EXPECT_EQ(Call("narrow", ARGS(-1, 2, -3, 4, -5, 6, 7)).as<int64_t>(), 10);
  EXPECT_EQ(Call("scale", ARGS(1.5, 2.0)).as<double>(), 3.0);
  EXPECT_EQ(Call("negate", ARGS(true)).as<bool>(), false);
  EXPECT_EQ(Call("no_args", ARGS()).as<int64_t>(), 7);
  EXPECT_EQ(Call("int8_result", ARGS()).as<int64_t>(), -5);
  EXPECT_EQ(Call("float_result", ARGS()).as<double>(), 0.25);
  EXPECT_EQ(Call("lambda_commas", ARGS(6, 7)).as<int64_t>(), 42);
}

TEST(pointer_arguments) {
  int local = 0;
  EXPECT_TRUE(Call("ptr_roundtrip", ARGS(static_cast<void*>(&local))).as<void*>() == &local);
  EXPECT_TRUE(Call("ptr_roundtrip", ARGS(nullptr)).as<void*>() == nullptr);
}

TEST(string_results_own_their_memory) {
  EXPECT_EQ(Call("greet", ARGS(String("Ada"), String("Hello"), String("!"))).as<String>(),
            "Hello, Ada!");
  EXPECT_EQ(Call("str_size", ARGS(String("a somewhat longer text"))).as<int64_t>(), 22);
  EXPECT_EQ(Call("cstr_len", ARGS("four")).as<int64_t>(), 4);
  EXPECT_TRUE(Call("std_string_result", ARGS()).as<std::string>() == std::string("a\0b", 3));
  EXPECT_EQ(Call("empty_string", ARGS()).as<String>(), "");
  const std::string blob("\0\1\2 binary and longer than seven", 32);
  EXPECT_TRUE(std::string(Call("echo_bytes", ARGS(tvm::ffi::Bytes(blob))).as<tvm::ffi::Bytes>()) ==
              blob);
  EXPECT_EQ(Call("bytes_size", ARGS(tvm::ffi::Bytes(blob))).as<int64_t>(), 32);
}

TEST(optional_and_containers) {
  EXPECT_EQ(Call("maybe", ARGS(5)).as<String>(), "5");
  EXPECT_EQ(Call("maybe", ARGS(nullptr)).value.type_index(), int32_t{kTVMFFINone});
  EXPECT_EQ(Call("sum_list", ARGS(Array<int64_t>{1, 2, 3})).as<int64_t>(), 6);
  EXPECT_EQ(Call("small_ints", ARGS(Array<int64_t>{1, -2})).as<int64_t>(), 2);
  Array<Array<double>> rows{{1.0, 2.0}, {3.5}};
  Array<double> sums = Call("row_sums", ARGS(rows)).as<Array<double>>();
  EXPECT_TRUE(sums.size() == 2 && sums[0] == 3.0 && sums[1] == 3.5);
  Array<Any> pair{Any(7), Any(String("seven"))};
  Array<Any> swapped = Call("swap", ARGS(pair)).as<Array<Any>>();
  EXPECT_TRUE(swapped[0].cast<String>() == "seven" && swapped[1].cast<int64_t>() == 7);
  Array<bool> flags = Call("bool_flags", ARGS(3)).as<Array<bool>>();
  EXPECT_TRUE(flags.size() == 3 && flags[0] && !flags[1] && flags[2]);
  EXPECT_EQ(Call("maybe_list", ARGS(Array<String>{"a", "b"})).as<int64_t>(), 2);
  EXPECT_EQ(Call("maybe_list", ARGS(nullptr)).as<int64_t>(), -1);
}

TEST(nested_result) {
  Array<Any> all = Call("nested", ARGS()).as<Array<Any>>();
  EXPECT_EQ(all.size(), 5u);
  Array<Any> names = all[0].cast<Array<Any>>();
  EXPECT_TRUE(names.size() == 3 && names[0].cast<String>() == "x");
  EXPECT_EQ(names[1].type_index(), int32_t{kTVMFFINone});
  EXPECT_TRUE(std::string(all[1].cast<tvm::ffi::Bytes>()) == std::string("\0\1", 2));
  EXPECT_EQ(all[2].cast<Array<Any>>().size(), 0u);
  EXPECT_EQ(all[3].cast<Array<Any>>().size(), 0u);
  Array<Any> last = all[4].cast<Array<Any>>();
  EXPECT_TRUE(last[0].cast<bool>() && last[1].cast<Array<double>>()[0] == 2.5);
}

TEST(argument_count_errors) {
  EXPECT_CALL_ERROR("add_one", ARGS(), "TypeError: add_one() takes 2 arguments (0 given)");
  EXPECT_CALL_ERROR("negate", ARGS(), "TypeError: negate() takes 1 argument (0 given)");
  EXPECT_CALL_ERROR("no_args", ARGS(1), "TypeError: no_args() takes 0 arguments (1 given)");
}

TEST(argument_type_errors) {
  float x[1] = {0};
  int64_t shape[1] = {1};
  DLTensor t = Vector(x, shape);
  EXPECT_CALL_ERROR("add_one", ARGS(&t, String("oops")),
                    "TypeError: add_one() argument 2 must be Tensor, not str");
  EXPECT_CALL_ERROR("add_int", ARGS(1.0, 1),
                    "TypeError: add_int() argument 1 must be int, not float");
  EXPECT_CALL_ERROR("echo_bytes", ARGS(String("text")),
                    "TypeError: echo_bytes() argument 1 must be bytes, not str");
  EXPECT_CALL_ERROR("sum_list", ARGS(3),
                    "TypeError: sum_list() argument 1 must be Array[int], not int");
}

TEST(nested_element_errors) {
  Array<Any> mixed{Any(1), Any(String("two")), Any(3)};
  EXPECT_CALL_ERROR("sum_list", ARGS(mixed),
                    "TypeError: sum_list() argument 1[1] must be int, not str");
}

TEST(integer_range_errors) {
  EXPECT_CALL_ERROR("narrow", ARGS(300, 0, 0, 0, 0, 0, 0),
                    "ValueError: narrow() argument 1 must fit in int8 [-128, 127] (got 300)");
}

TEST(errors_raised_by_the_function) {
  for (const char* kind : {"RuntimeError", "ValueError", "TypeError", "IndexError", "KeyError",
                           "AttributeError", "NotImplementedError", "MemoryError"}) {
    EXPECT_EQ(Call("raise_error", ARGS(String(kind))).error,
              std::string(kind) + ": raised " + kind);
  }
  EXPECT_EQ(Call("raise_error", ARGS(String("check"))).error,
            std::string("ValueError: Check failed: (kind != \"check\") is false: limit is 2"));
  EXPECT_EQ(Call("raise_error", ARGS(String("nothing"))).rc, 0);
  float x[2] = {0, 0};
  int64_t shape[1] = {2};
  DLTensor t = Vector(x, shape);
  EXPECT_EQ(Call("dim_of", ARGS(&t, 4)).error,
            std::string("IndexError: Tensor::size(4): dimension out of range for a tensor of "
                        "ndim 1 (expected -1 to 0)"));
}

TEST(foreign_exceptions_become_errors) {
  // Whatever the function throws, no C++ exception crosses the C ABI.
  EXPECT_EQ(Call("raise_error", ARGS(String("std"))).error,
            std::string("RuntimeError: plain std error"));
  EXPECT_EQ(Call("raise_error", ARGS(String("bad_alloc"))).error,
            std::string("MemoryError: std::bad_alloc"));
  EXPECT_EQ(Call("raise_error", ARGS(String("int"))).error,
            std::string("RuntimeError: raise_error() threw a C++ exception of unknown type"));
}

TEST(stream_environment) {
  void* stream = reinterpret_cast<void*>(0x5);
  EXPECT_TRUE(Call("current_stream", ARGS(int32_t{kDLCUDA}, 0)).as<void*>() == nullptr);
  Array<Any> seen = Call("override_stream", ARGS(stream)).as<Array<Any>>();
  EXPECT_TRUE(seen[0].cast<void*>() == nullptr);
  EXPECT_TRUE(seen[1].cast<void*>() == stream);
  EXPECT_TRUE(seen[2].cast<void*>() == stream);  // a nested call on this thread sees it
  TVMFFIEnvSetStream(kDLCUDA, 0, nullptr, nullptr);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s libexport.so\n", argv[0]);
    return 2;
  }
  g_lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (g_lib == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  return testing_main();
}
