// A library of exported functions covering every supported argument and result type, every
// error path and the stream environment. Loaded by export_driver.cc through dlopen.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

using tvm::ffi::Bytes;
using tvm::ffi::String;
using tvm::ffi::TensorView;

// ---- tensors -------------------------------------------------------------------------------

void AddOne(TensorView x, TensorView y) {
  TVM_FFI_CHECK(x.numel() == y.numel(), ValueError) << "x and y differ in size";
  const float* src = static_cast<const float*>(x.data_ptr());
  float* dst = static_cast<float*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] + 1.0f;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);

void Noop3(TensorView, TensorView, TensorView) {}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop3, Noop3);

std::tuple<int32_t, std::vector<int64_t>> DescribeRaw(DLTensor* t) {
  return {t->ndim, std::vector<int64_t>(t->shape, t->shape + t->ndim)};
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(describe_raw, DescribeRaw);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ndim_const, [](const DLTensor* t) { return t->ndim; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(maybe_tensor, [](std::optional<TensorView> t) {
  return t.has_value() ? t->numel() : int64_t{-1};
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(total_numel, [](const std::vector<TensorView>& ts) {
  int64_t total = 0;
  for (const TensorView& t : ts) total += t.numel();
  return total;
});

// ---- scalars -------------------------------------------------------------------------------

int64_t AddInt(int64_t a, int64_t b) { return a + b; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_int, AddInt);

int64_t Narrow(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f, uint64_t g) {
  return a + b + c + d + e + static_cast<int64_t>(f) + static_cast<int64_t>(g);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(narrow, Narrow);

TVM_FFI_DLL_EXPORT_TYPED_FUNC(scale, [](double x, float y) { return x * y; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(negate, [](bool b) { return !b; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(no_args, []() { return 7; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(int8_result, []() -> int8_t { return -5; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(big_unsigned, []() { return UINT64_MAX; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(float_result, []() { return 0.25f; });
// The body's commas are outside any parentheses: the macro must still see one callable.
TVM_FFI_DLL_EXPORT_TYPED_FUNC(lambda_commas, [](int a, int b) {
  int x = a, y = b;
  return x * y;
});

// ---- pointers ------------------------------------------------------------------------------

TVM_FFI_DLL_EXPORT_TYPED_FUNC(ptr_roundtrip, [](void* p) { return p; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ptr_address, [](void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
});

// ---- strings and bytes ---------------------------------------------------------------------

String Greet(String name, const std::string& greeting, std::string_view punct) {
  return String(greeting + ", " + std::string(name) + std::string(punct));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(greet, Greet);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(str_size, [](String s) { return s.size(); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cstr_len, [](const char* s) { return std::strlen(s); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(std_string_result, []() { return std::string("a\0b", 3); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(empty_string, []() { return String(); });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_bytes, [](Bytes b) { return b; });
TVM_FFI_DLL_EXPORT_TYPED_FUNC(bytes_size, [](const Bytes& b) { return b.size(); });

// ---- containers ----------------------------------------------------------------------------

std::optional<String> Maybe(std::optional<int> x) {
  if (!x.has_value()) return std::nullopt;
  return String(std::to_string(*x));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(maybe, Maybe);

TVM_FFI_DLL_EXPORT_TYPED_FUNC(sum_list, [](const std::vector<int64_t>& v) {
  int64_t total = 0;
  for (int64_t x : v) total += x;
  return total;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(small_ints, [](std::vector<int8_t> v) { return v.size(); });

std::vector<double> RowSums(std::vector<std::vector<double>> rows) {
  std::vector<double> sums;
  for (const auto& row : rows) {
    double s = 0;
    for (double x : row) s += x;
    sums.push_back(s);
  }
  return sums;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(row_sums, RowSums);

std::tuple<String, int> Swap(std::tuple<int, String> t) { return {std::get<1>(t), std::get<0>(t)}; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(swap, Swap);

std::tuple<std::vector<std::optional<String>>, Bytes, std::tuple<>, std::vector<int>,
           std::tuple<bool, std::tuple<double>>>
Nested() {
  return {{String("x"), std::nullopt, String("")},
          Bytes(std::string("\0\1", 2)),
          {},
          {},
          {true, {2.5}}};
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nested, Nested);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(bool_flags, [](int n) {
  std::vector<bool> flags;
  for (int i = 0; i < n; ++i) flags.push_back(i % 2 == 0);
  return flags;
});
TVM_FFI_DLL_EXPORT_TYPED_FUNC(maybe_list, [](std::optional<std::vector<String>> v) {
  return v.has_value() ? static_cast<int64_t>(v->size()) : int64_t{-1};
});

// ---- errors --------------------------------------------------------------------------------

void RaiseError(String kind) {
  if (kind == "RuntimeError") TVM_FFI_THROW(RuntimeError) << "raised " << kind;
  if (kind == "ValueError") TVM_FFI_THROW(ValueError) << "raised " << kind;
  if (kind == "TypeError") TVM_FFI_THROW(TypeError) << "raised " << kind;
  if (kind == "IndexError") TVM_FFI_THROW(IndexError) << "raised " << kind;
  if (kind == "KeyError") TVM_FFI_THROW(KeyError) << "raised " << kind;
  if (kind == "AttributeError") TVM_FFI_THROW(AttributeError) << "raised " << kind;
  if (kind == "NotImplementedError") TVM_FFI_THROW(NotImplementedError) << "raised " << kind;
  if (kind == "MemoryError") TVM_FFI_THROW(MemoryError) << "raised " << kind;
  int limit = 2;
  TVM_FFI_CHECK(kind != "check", ValueError) << "limit is " << limit;
  if (kind == "std") throw std::out_of_range("plain std error");
  if (kind == "bad_alloc") throw std::bad_alloc();
  if (kind == "int") throw 42;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(raise_error, RaiseError);

int64_t DimOf(TensorView t, int64_t dim) { return t.size(dim); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(dim_of, DimOf);

// ---- streams -------------------------------------------------------------------------------

void* CurrentStream(int32_t device_type, int32_t device_id) {
  return TVMFFIEnvGetStream(device_type, device_id);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_stream, CurrentStream);

/*!
 * Overrides the CUDA stream of device 0 and calls current_stream through its exported entry
 * (the C ABI). Returns (original, stream after the override, what the nested call saw).
 */
extern "C" int __tvm_ffi_current_stream(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);
std::tuple<void*, void*, void*> OverrideStream(void* stream) {
  void* original = nullptr;
  TVM_FFI_CHECK(TVMFFIEnvSetStream(kDLCUDA, 0, stream, &original) == 0, RuntimeError);
  void* after_set = TVMFFIEnvGetStream(kDLCUDA, 0);
  TVMFFIAny args[2] = {};
  args[0].type_index = kTVMFFIInt;
  args[0].v_int64 = kDLCUDA;
  args[1].type_index = kTVMFFIInt;
  args[1].v_int64 = 0;
  TVMFFIAny result{};
  TVM_FFI_CHECK(__tvm_ffi_current_stream(nullptr, args, 2, &result) == 0, RuntimeError);
  return {original, after_set, result.v_ptr};
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(override_stream, OverrideStream);

void OverrideThenThrow(void* stream) {
  TVMFFIEnvSetStream(kDLCUDA, 0, stream, nullptr);
  TVM_FFI_THROW(RuntimeError) << "after override";
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(override_then_throw, OverrideThenThrow);
