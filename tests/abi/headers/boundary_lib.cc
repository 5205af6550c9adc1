// A library built with the staging headers, exchanging every boundary type with a caller in
// another runtime (apache-tvm-ffi's Python in tests/abi/test_headers_boundary.py).
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/extra/stl.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <string>

namespace ffi = tvm::ffi;

namespace {

int64_t AddInt(int64_t a, int64_t b) { return a + b; }
double Scale(double x, float y) { return x * y; }
bool Not(bool b) { return !b; }
void* PtrOffset(void* p, int64_t off) { return static_cast<char*>(p) + off; }
int8_t Narrow(int8_t x) { return x; }
DLDataType DTypeWiden(DLDataType t) {
  return DLDataType{t.code, static_cast<uint8_t>(t.bits * 2), t.lanes};
}
DLDevice NextDevice(DLDevice d) { return DLDevice{d.device_type, d.device_id + 1}; }
ffi::String Concat(ffi::String a, const std::string& b) { return std::string(a) + b; }
ffi::Bytes ReverseBytes(ffi::Bytes b) {
  std::string s(b);
  return ffi::Bytes(std::string(s.rbegin(), s.rend()));
}
int64_t StrLen(const char* s) { return static_cast<int64_t>(std::char_traits<char>::length(s)); }
ffi::Shape ShapeDouble(ffi::Shape s) {
  std::vector<int64_t> out(s.begin(), s.end());
  for (int64_t& x : out) x *= 2;
  return ffi::Shape(out);
}
int64_t SumInts(ffi::Array<int64_t> a) {
  int64_t n = 0;
  for (int64_t x : a) n += x;
  return n;
}
ffi::Array<ffi::String> Words(ffi::Array<ffi::String> a) {
  a.push_back("end-of-the-list");  // copy-on-write: the caller's array is unchanged
  return a;
}
int64_t CountTensors(ffi::Array<ffi::Tensor> ts) {
  int64_t n = 0;
  for (ffi::Tensor t : ts) n += t.numel();
  return n;
}
int64_t OrDefault(ffi::Optional<int64_t> x) { return x.value_or(-1); }
ffi::Optional<ffi::String> MaybeName(bool give) {
  if (give) return ffi::String("a name longer than seven");
  return std::nullopt;
}
double VariantValue(ffi::Variant<double, ffi::Tensor> v) {
  if (auto d = v.as<double>()) return *d;
  ffi::Tensor t = v.get<ffi::Tensor>();
  return static_cast<double>(static_cast<const float*>(t.data_ptr())[0]);
}
ffi::Tuple<ffi::Array<int64_t>, int64_t> TuplePlan(int64_t n) {
  return ffi::Tuple<ffi::Array<int64_t>, int64_t>(ffi::Array<int64_t>({n, n + 1}), n * 10);
}
int64_t TupleTake(ffi::Tuple<int64_t, ffi::String> t) {
  return t.get<0>() + static_cast<int64_t>(t.get<1>().size());
}
int64_t CallBack(ffi::Function f, int64_t x) { return f(x, ffi::String("ab")).cast<int64_t>(); }
ffi::Function MakeAdder(int64_t k) {
  return ffi::Function::FromTyped([k](int64_t x) { return x + k; }, "adder");
}
ffi::TypedFunction<int64_t(int64_t)> MakeTyped() {
  return ffi::TypedFunction<int64_t(int64_t)>([](int64_t x) { return x * 3; }, "tripler");
}
// Fills y = x + 1 (float32, contiguous): TensorView over either form the caller passes.
void AddOne(ffi::TensorView x, ffi::TensorView y) {
  TVM_FFI_CHECK(x.numel() == y.numel(), ValueError) << "x and y differ in size";
  const float* in = static_cast<const float*>(x.data_ptr());
  float* out = static_cast<float*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] + 1.0f;
}
ffi::Array<int64_t> TensorInfo(ffi::TensorView t) {
  return ffi::Array<int64_t>({t.ndim(), t.size(-1), t.stride(0), t.dtype().bits,
                              static_cast<int64_t>(t.device().device_type)});
}
ffi::Tensor KeepTensor(ffi::Tensor t) { return t; }
int64_t OptionalView(ffi::Optional<ffi::TensorView> t) { return t.has_value() ? t->numel() : -1; }
// `like` is there for the caller's runtime: it sets the tensor allocator from the framework of
// the tensors a call receives.
ffi::Tensor Alloc(ffi::Shape shape, ffi::TensorView like) {
  (void)like;
  ffi::Tensor t = ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape,
                                            DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  float* p = static_cast<float*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i);
  return t;
}
struct CPUAlloc {
  void AllocData(DLTensor* t) { t->data = std::malloc(ffi::GetDataSize(*t)); }
  void FreeData(DLTensor* t) { std::free(t->data); }
};
ffi::Tensor NDAlloc(int64_t n) {
  int64_t shape[] = {n};
  ffi::Tensor t = ffi::Tensor::FromNDAlloc(CPUAlloc(), ffi::ShapeView(shape, 1),
                                           DLDataType{kDLInt, 64, 1}, DLDevice{kDLCPU, 0});
  for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(t.data_ptr())[i] = i * i;
  return t;
}
ffi::Any EchoAny(ffi::Any a) { return a; }
ffi::String AnyKind(ffi::AnyView a) { return a.GetTypeKey(); }
void Raise(ffi::String kind) {
  if (kind == "ValueError") {
    TVM_FFI_THROW(ValueError) << "bad value " << 42;
  }
  if (kind == "TypeError") {
    TVM_FFI_THROW(TypeError) << "bad type";
  }
  if (kind == "IndexError") {
    TVM_FFI_THROW(IndexError) << "bad index";
  }
  if (kind == "ICHECK") {
    TVM_FFI_ICHECK_EQ(1 + 1, 3) << "arithmetic";
  }
  if (kind == "std") throw std::runtime_error("from the standard library");
  if (kind == "nested") {
    ffi::Function f = ffi::Function::FromTyped(
        [](int64_t x) {
          TVM_FFI_CHECK(x > 0, ValueError) << "x must be positive, got " << x;
          return x;
        },
        "inner");
    f(-2);
  }
}
// A reflected object, declared as sglang declares its refl::ObjectDef types.
struct CounterObj : public ffi::Object {
  int64_t value;
  ffi::String label;
  CounterObj(int64_t start, ffi::String name) : value(start), label(std::move(name)) {}
  int64_t Add(int64_t n) { return value += n; }
  ffi::String Describe() const { return std::string(label) + "=" + std::to_string(value); }
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test.headers.Counter", CounterObj, ffi::Object);
};
struct Counter : public ffi::ObjectRef {
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(Counter, ffi::ObjectRef, CounterObj);
};

void RegisterOnce() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<CounterObj>()
      .def(refl::init<int64_t, ffi::String>(), "__init__")
      .def("add", &CounterObj::Add)
      .def("describe", &CounterObj::Describe)
      .def_ro("value", &CounterObj::value)
      .def_rw("label", &CounterObj::label);
  refl::GlobalDef().def("test.headers.counter_value", [](Counter c) { return c->value; });
}
// The layout this library gave the key (D6): the runtime's copy of total_size.
int64_t CounterSizes() {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(CounterObj::RuntimeTypeIndex());
  return int64_t{info->metadata->total_size} * 1000 + static_cast<int64_t>(sizeof(CounterObj));
}
Counter MakeCounter(int64_t start) {
  return ffi::GetRef<Counter>(ffi::make_object<CounterObj>(start, "made").get());
}
bool IsCounter(ffi::ObjectRef obj) { return obj.as<CounterObj>() != nullptr; }

std::vector<std::string> StlRepeat(std::vector<int64_t> counts, std::optional<std::string> text) {
  std::vector<std::string> out;
  for (int64_t n : counts)
    out.push_back(std::string(static_cast<size_t>(n), text.value_or("-")[0]));
  return out;
}
std::tuple<int64_t, std::string> StlSwap(std::tuple<std::string, int64_t> t) {
  return {std::get<1>(t), std::get<0>(t)};
}
// TVM_FFI_TEST_NO_CXX_MODULE leaves out the two functions below that need the runtime's C++
// Module symbols (Module::LoadFromFile, ModuleObj's typeinfo): the staging runtime does not
// export them yet (tests/abi/test_stack.py builds this file without them).
#ifndef TVM_FFI_TEST_NO_CXX_MODULE
// ModuleObj's layout and vtable against the runtime's: load a library through the runtime's
// loader (Module::LoadFromFile) and call one of its functions.
int64_t LoadAndCall(ffi::String path, ffi::String name, int64_t x) {
  ffi::Module mod = ffi::Module::LoadFromFile(path);
  ffi::Optional<ffi::Function> f = mod->GetFunction(name, false);
  TVM_FFI_CHECK(f.has_value(), AttributeError) << "no function " << std::string_view(name);
  return (*f)(x, x).cast<int64_t>() + (mod->ImplementsFunction(name, false) ? 1000 : 0);
}

// A module written in C++, as FlashInfer writes its GEMM runners (a ModuleObj subclass made
// with make_object and returned as a Module): the runtime's code calls its virtual functions.
class RunnerModule : public ffi::ModuleObj {
 public:
  const char* kind() const final { return "test_runner"; }
  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) {
    if (name == "workspace_size") {
      return ffi::Function::FromTyped([this](int64_t m, int64_t n) { return m * n + bias_; });
    }
    return ffi::Function(nullptr);
  }
  int64_t bias_ = 7;
};
ffi::Module MakeModule() {
  auto ptr = ffi::make_object<RunnerModule>();
  return ffi::Module(ptr);
}
#endif

int64_t CallGlobal(ffi::String name, int64_t x) {
  return ffi::Function::GetGlobalRequired(std::string(name))(x).cast<int64_t>();
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_int, AddInt);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(scale, Scale);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(negate, Not);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ptr_offset, PtrOffset);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(narrow, Narrow);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(dtype_widen, DTypeWiden);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(next_device, NextDevice);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(concat, Concat);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(reverse_bytes, ReverseBytes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(str_len, StrLen);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(shape_double, ShapeDouble);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(sum_ints, SumInts);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(words, Words);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(count_tensors, CountTensors);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(or_default, OrDefault);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(maybe_name, MaybeName);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(variant_value, VariantValue);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tuple_plan, TuplePlan);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tuple_take, TupleTake);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_back, CallBack);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_adder, MakeAdder);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_typed, MakeTyped);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_info, TensorInfo);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(keep_tensor, KeepTensor);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(optional_view, OptionalView);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(alloc, Alloc);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nd_alloc, NDAlloc);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_any, EchoAny);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(any_kind, AnyKind);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(raise_error, Raise);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_global, CallGlobal);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(register_once, RegisterOnce);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(counter_sizes, CounterSizes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_counter, MakeCounter);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(is_counter, IsCounter);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(stl_repeat, StlRepeat);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(stl_swap, StlSwap);
#ifndef TVM_FFI_TEST_NO_CXX_MODULE
TVM_FFI_DLL_EXPORT_TYPED_FUNC(load_and_call, LoadAndCall);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_module, MakeModule);
#endif
TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC(add_int, "Adds two ints.");
