// A library written for apache-tvm-ffi's C++ API and built with its wheel (its headers,
// -ltvm_ffi against its runtime): every kind of value crosses its exported functions.
// tests/abi/test_runtime_client.py loads it into our runtime and into apache's.
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/dict.h>
#include <tvm/ffi/container/list.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/tvm_ffi.h>

#include <string>

namespace ffi = tvm::ffi;
namespace refl = tvm::ffi::reflection;

// The loader writes the module here; TVMFFIEnvModLookupFromImports takes it back.
extern "C" {
TVM_FFI_DLL_EXPORT void* __tvm_ffi__library_ctx = nullptr;
}

// The loader writes here what the caller registered with TVMFFIEnvModRegisterContextSymbol.
extern "C" {
TVM_FFI_DLL_EXPORT void* __client_ctx_value = nullptr;
}
int64_t ctx_value_impl() { return reinterpret_cast<int64_t>(__client_ctx_value); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ctx_value, ctx_value_impl);

int64_t echo_int(int64_t x) { return x; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo_int, echo_int);
auto add_float_impl(double a, double b) { return a + b; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_float, add_float_impl);
auto negate_impl(bool b) { return !b; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(negate, negate_impl);
auto ptr_plus_impl(void* p, int64_t n) { return static_cast<void*>(static_cast<char*>(p) + n); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ptr_plus, ptr_plus_impl);
auto dtype_wider_impl(DLDataType t) {
  t.bits = static_cast<uint8_t>(t.bits * 2);
  return t;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(dtype_wider, dtype_wider_impl);
auto device_next_impl(DLDevice d) {
  d.device_id += 1;
  return d;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(device_next, device_next_impl);
auto str_concat_impl(ffi::String a, ffi::String b) {
  return ffi::String(std::string(a) + std::string(b));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(str_concat, str_concat_impl);
auto str_len_impl(ffi::String s) { return static_cast<int64_t>(s.size()); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(str_len, str_len_impl);
auto bytes_rev_impl(ffi::Bytes b) {
  std::string s(b.data(), b.size());
  return ffi::Bytes(std::string(s.rbegin(), s.rend()));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(bytes_rev, bytes_rev_impl);
auto shape_sum_impl(ffi::Shape s) {
  int64_t sum = 0;
  for (int64_t d : s) sum += d;
  return sum;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(shape_sum, shape_sum_impl);
auto make_shape_impl(int64_t n) {
  std::vector<int64_t> dims;
  for (int64_t i = 1; i <= n; ++i) dims.push_back(i);
  return ffi::Shape(dims);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_shape, make_shape_impl);
auto array_sum_impl(ffi::Array<int64_t> a) {
  int64_t sum = 0;
  for (int64_t x : a) sum += x;
  a.push_back(100);  // copy-on-write: the caller's array is shared, so it must not change
  return sum;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(array_sum, array_sum_impl);
auto array_join_impl(ffi::Array<ffi::String> a) {
  std::string out;
  for (const ffi::String& s : a) out += std::string(s) + ",";
  return ffi::String(out);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(array_join, array_join_impl);
auto make_strs_impl(int64_t n) {
  ffi::Array<ffi::String> a;
  for (int64_t i = 0; i < n; ++i) a.push_back(ffi::String("item number " + std::to_string(i)));
  return a;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_strs, make_strs_impl);
auto list_sum_impl(ffi::List<int64_t> l) {
  int64_t sum = 0;
  for (int64_t x : l) sum += x;
  l.push_back(sum);  // lists are shared and mutable: the caller sees this
  return sum;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(list_sum, list_sum_impl);
auto make_list_impl(int64_t n) {
  ffi::List<int64_t> l;
  for (int64_t i = 0; i < n; ++i) l.push_back(i * i);
  return l;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_list, make_list_impl);
// Maps built by the library's inline code (small up to 4 entries, dense beyond) and maps
// built by the runtime, read and changed on the other side.
auto make_map_impl(int64_t n) {
  ffi::Map<ffi::String, int64_t> m;
  for (int64_t i = 0; i < n; ++i) m.Set("k" + std::to_string(i), i * 10);
  return m;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_map, make_map_impl);
auto make_dict_impl(int64_t n) {
  ffi::Dict<ffi::Any, int64_t> d;
  for (int64_t i = 0; i < n; ++i) {
    d.Set(i % 2 ? ffi::Any(i) : ffi::Any(ffi::String("k" + std::to_string(i))), -i);
  }
  return d;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_dict, make_dict_impl);
// Sums the values in order and looks every key up again: "k0:0,k1:10|sum=10".
auto map_walk_impl(ffi::Map<ffi::String, int64_t> m) {
  std::string out;
  int64_t sum = 0;
  for (const auto& [k, v] : m) {
    out += (out.empty() ? "" : ",") + std::string(k) + ":" + std::to_string(v);
    sum += m.at(k);
  }
  out += "|sum=" + std::to_string(sum) + "|has_zz=" + std::to_string(m.count("zz"));
  return ffi::String(out);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(map_walk, map_walk_impl);
// Dicts are shared and mutable: the caller sees the key added and the key removed.
auto dict_change_impl(ffi::Dict<ffi::Any, int64_t> d, ffi::String key, int64_t value) {
  d.Set(key, value);
  d.erase(ffi::String("k0"));
  return static_cast<int64_t>(d.size());
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(dict_change, dict_change_impl);
auto opt_or_impl(ffi::Optional<int64_t> x, int64_t d) { return x.has_value() ? *x : d; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(opt_or, opt_or_impl);
auto variant_desc_impl(ffi::Variant<int64_t, ffi::String> v) {
  if (auto i = v.as<int64_t>()) return ffi::String("int " + std::to_string(*i));
  return ffi::String("str " + std::string(v.get<ffi::String>()));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(variant_desc, variant_desc_impl);
auto call_cb_impl(ffi::Function f, int64_t x) { return f(x).cast<int64_t>() + 1; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_cb, call_cb_impl);
auto make_adder_impl(int64_t k) {
  return ffi::Function::FromTyped([k](int64_t x) { return x + k; });
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_adder, make_adder_impl);
auto tensor_sum_impl(ffi::TensorView t) {
  double sum = 0;
  const float* p = static_cast<const float*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) sum += p[i];
  return sum;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_sum, tensor_sum_impl);
auto tensor_keep_impl(ffi::Tensor t) { return t; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_keep, tensor_keep_impl);
auto tensor_alloc_impl(ffi::Shape shape) {
  ffi::Tensor t = ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape,
                                            DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  float* p = static_cast<float*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = 7;
  return t;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_alloc, tensor_alloc_impl);
auto throw_value_impl(ffi::String s) { TVM_FFI_THROW(ValueError) << "bad value: " << s; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(throw_value, throw_value_impl);
auto icheck_positive_impl(int64_t x) {
  TVM_FFI_ICHECK(x > 0) << "x must be positive, got " << x;
  return x;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(icheck_positive, icheck_positive_impl);
auto get_stream_impl(int32_t type, int32_t id) {
  return reinterpret_cast<int64_t>(TVMFFIEnvGetStream(type, id));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_stream, get_stream_impl);
auto call_global_impl(ffi::String name, int64_t x) {
  return ffi::Function::GetGlobalRequired(name)(x);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_global, call_global_impl);
auto from_imports_impl(ffi::String name, int64_t x) {
  TVMFFIObjectHandle f = nullptr;
  TVM_FFI_CHECK_SAFE_CALL(TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, name.c_str(), &f));
  // Borrowed: the module keeps the function.
  ffi::Function fn = ffi::details::ObjectUnsafe::ObjectRefFromObjectPtr<ffi::Function>(
      ffi::details::ObjectUnsafe::ObjectPtrFromUnowned<ffi::Object>(static_cast<ffi::Object*>(f)));
  return fn(x);
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(from_imports, from_imports_impl);
auto call_mod_impl(ffi::Module mod, ffi::String name, int64_t x) {
  ffi::Optional<ffi::Function> f = mod->GetFunction(name);
  if (!f.has_value()) TVM_FFI_THROW(AttributeError) << "module has no function " << name;
  return std::string(mod->kind()) + ":" + std::to_string((*f)(x).cast<int64_t>());
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_mod, call_mod_impl);

// Module::GetFunction(name, query_imports) and friends are out-of-line members of ModuleObj:
// this library imports them from the runtime.
ffi::String mod_query_impl(ffi::Module mod, ffi::String name, bool query_imports) {
  ffi::Optional<ffi::Function> f = mod->GetFunction(name, query_imports);
  bool implements = mod->ImplementsFunction(name, query_imports);
  ffi::Optional<ffi::String> doc = mod->GetFunctionDoc(name, query_imports);
  ffi::Optional<ffi::String> meta = mod->GetFunctionMetadata(name, query_imports);
  return "function=" + std::to_string(f.has_value()) + " implements=" + std::to_string(implements) +
         " doc=" + std::to_string(doc.has_value()) +
         " metadata=" + std::to_string(meta.has_value());
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(mod_query, mod_query_impl);

class PointObj : public ffi::Object {
 public:
  int64_t x;
  int64_t y;
  PointObj(int64_t x, int64_t y) : x(x), y(y) {}
  int64_t Norm1() const { return (x < 0 ? -x : x) + (y < 0 ? -y : y); }
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("client.Point", PointObj, ffi::Object);
};

auto make_point_impl(int64_t x, int64_t y) {
  return ffi::ObjectRef(ffi::make_object<PointObj>(x, y));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_point, make_point_impl);
auto point_y_impl(ffi::ObjectRef p) {
  const PointObj* point = p.as<PointObj>();
  if (point == nullptr) TVM_FFI_THROW(TypeError) << "not a client.Point: " << p->GetTypeKey();
  return point->y;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(point_y, point_y_impl);

TVM_FFI_STATIC_INIT_BLOCK() {
  refl::ObjectDef<PointObj>()
      .def(refl::init<int64_t, int64_t>())
      .def_ro("x", &PointObj::x)
      .def_ro("y", &PointObj::y)
      .def("norm1", &PointObj::Norm1);
  refl::GlobalDef().def("client.mul", [](int64_t a, int64_t b) { return a * b; });
}
