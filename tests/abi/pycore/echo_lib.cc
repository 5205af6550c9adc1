// A library built as apache-tvm-ffi's clients build theirs (apache headers, -ltvm_ffi): the
// other side of every value the Python core on the C ABI exchanges.
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <atomic>
#include <cstring>
#include <string>

namespace ffi = tvm::ffi;

namespace {

// Objects whose destruction is counted: a result's or argument's leak shows as a live count.
std::atomic<int64_t> g_live{0};

class CountedObj : public ffi::Object {
 public:
  int64_t value;
  explicit CountedObj(int64_t v) : value(v) { ++g_live; }
  ~CountedObj() { --g_live; }
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("pycore.Counted", CountedObj, ffi::Object);
};

class Counted : public ffi::ObjectRef {
 public:
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(Counted, ffi::ObjectRef, CountedObj);
};

ffi::Optional<ffi::Tensor> g_kept;  // a tensor the library holds past the call
ffi::Optional<ffi::Any> g_kept_any;

}  // namespace

void Noop() {}
void NoopTensors(ffi::TensorView, ffi::TensorView, ffi::TensorView) {}
void NoopInts(int64_t, int64_t, int64_t) {}
ffi::Any Echo(ffi::Any x) { return x; }
int64_t TypeIndexOf(ffi::AnyView x) { return x.type_index(); }
int64_t AddInt(int64_t a, int64_t b) { return a + b; }
double AddFloat(double a, double b) { return a + b; }
bool Negate(bool b) { return !b; }
ffi::String Concat(ffi::String a, ffi::String b) { return std::string(a) + std::string(b); }
int64_t StrLen(ffi::String s) { return static_cast<int64_t>(s.size()); }
int64_t BytesSum(ffi::Bytes b) {
  int64_t sum = 0;
  for (size_t i = 0; i < b.size(); ++i) sum += static_cast<unsigned char>(b.data()[i]);
  return sum * 1000 + static_cast<int64_t>(b.size());
}
ffi::String MakeStr(int64_t n) { return std::string(static_cast<size_t>(n), 'x'); }
ffi::Bytes MakeBytes(int64_t n) { return ffi::Bytes(std::string(static_cast<size_t>(n), 'y')); }
ffi::Array<int64_t> DTypeFields(DLDataType d) { return {d.code, d.bits, d.lanes}; }
DLDataType MakeDType(int64_t code, int64_t bits, int64_t lanes) {
  return DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits),
                    static_cast<uint16_t>(lanes)};
}
ffi::Array<int64_t> DeviceFields(DLDevice d) { return {d.device_type, d.device_id}; }
DLDevice MakeDevice(int64_t type, int64_t id) {
  return DLDevice{static_cast<DLDeviceType>(type), static_cast<int32_t>(id)};
}
double ViewSum(ffi::TensorView t) {
  double sum = 0;
  const float* data = static_cast<const float*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) sum += data[i];
  return sum;
}
ffi::Shape TensorShape(ffi::Tensor t) { return t.shape(); }
ffi::Array<int64_t> TensorStrides(ffi::Tensor t) {
  ffi::Array<int64_t> out;
  for (int64_t s : t.strides()) out.push_back(s);
  return out;
}
void KeepTensor(ffi::Tensor t) { g_kept = t; }
ffi::Tensor KeptTensor() { return g_kept.value(); }
void DropKept() {
  g_kept = std::nullopt;
  g_kept_any = std::nullopt;
}
void KeepAny(ffi::Any x) { g_kept_any = x; }
ffi::Any KeptAny() { return g_kept_any.value(); }
ffi::Tensor FirstTensor(ffi::Tensor a, ffi::Tensor) { return a; }
int64_t ArraySum(ffi::Array<int64_t> a) {
  int64_t s = 0;
  for (int64_t v : a) s += v;
  return s;
}
int64_t ArrayLen(ffi::Array<ffi::Any> a) { return static_cast<int64_t>(a.size()); }
double TensorListSum(ffi::Array<ffi::Tensor> a) {
  double s = 0;
  for (ffi::Tensor t : a) s += ViewSum(t);
  return s;
}
int64_t MapGet(ffi::Map<ffi::String, int64_t> m, ffi::String key) { return m.at(key); }
ffi::Any CallBack(ffi::Function f, ffi::Any x) { return f(x); }
ffi::Any CallBack2(ffi::Function f, ffi::Any x, ffi::Any y) { return f(x, y); }
ffi::Shape MakeShape() { return ffi::Shape({2, 3, 5}); }
ffi::Array<ffi::Any> MakeArray() {
  return {ffi::Any(1), ffi::Any(ffi::String("two")), ffi::Any(3.5), ffi::Any(nullptr)};
}
ffi::Map<ffi::String, int64_t> MakeMap() { return {{"a", 1}, {"long key here", 2}}; }
ffi::Function MakeAdder(int64_t k) {
  return ffi::Function::FromTyped([k](int64_t x) { return x + k; });
}
void Raise(ffi::String kind, ffi::String message) {
  throw ffi::Error(std::string(kind), std::string(message), "");
}
Counted MakeCounted(int64_t v) { return Counted(ffi::make_object<CountedObj>(v)); }
int64_t CountedValue(Counted c) { return c->value; }
int64_t LiveCount() { return g_live.load(); }
int64_t StreamOf(ffi::TensorView t) {
  return reinterpret_cast<int64_t>(
      TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}
int64_t CudaStream(int64_t device) {
  return reinterpret_cast<int64_t>(TVMFFIEnvGetStream(kDLCUDA, static_cast<int32_t>(device)));
}
// Sets the tensor's device stream itself, then asks for it: an explicit choice of the callee.
int64_t SetThenGetStream(ffi::TensorView t, int64_t stream) {
  DLDevice d = t.device();
  TVMFFIEnvSetStream(d.device_type, d.device_id, reinterpret_cast<void*>(stream), nullptr);
  return reinterpret_cast<int64_t>(TVMFFIEnvGetStream(d.device_type, d.device_id));
}
int64_t UseCount(ffi::Tensor t) { return t.use_count(); }
ffi::Any MakeError(ffi::String kind, ffi::String message) {
  return ffi::Error(std::string(kind), std::string(message), "");
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop, Noop);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop_tensors, NoopTensors);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop_ints, NoopInts);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(echo, Echo);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(type_index_of, TypeIndexOf);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_int, AddInt);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_float, AddFloat);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(negate, Negate);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(concat, Concat);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(str_len, StrLen);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(bytes_sum, BytesSum);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_str, MakeStr);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_bytes, MakeBytes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(dtype_fields, DTypeFields);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_dtype, MakeDType);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(device_fields, DeviceFields);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_device, MakeDevice);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(view_sum, ViewSum);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_shape, TensorShape);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_strides, TensorStrides);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(keep_tensor, KeepTensor);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kept_tensor, KeptTensor);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(drop_kept, DropKept);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(keep_any, KeepAny);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kept_any, KeptAny);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(first_tensor, FirstTensor);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(array_sum, ArraySum);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(array_len, ArrayLen);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor_list_sum, TensorListSum);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(map_get, MapGet);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_back, CallBack);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_back2, CallBack2);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_shape, MakeShape);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_array, MakeArray);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_map, MakeMap);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_adder, MakeAdder);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(raise_error, Raise);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_counted, MakeCounted);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(counted_value, CountedValue);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(live_count, LiveCount);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(stream_of, StreamOf);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cuda_stream, CudaStream);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(set_then_get_stream, SetThenGetStream);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(use_count, UseCount);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_error, MakeError);

// Raw safe calls, as generated code (the CuTe DSL) writes them: the index of the first
// argument as it arrived, and a metadata export that declares that parameter a TensorView.
extern "C" {
TVM_FFI_DLL_EXPORT int __tvm_ffi_arg_kind(void*, const TVMFFIAny* args, int32_t num_args,
                                          TVMFFIAny* result) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = num_args > 0 ? args[0].type_index : -1;
  return 0;
}
TVM_FFI_DLL_EXPORT int __tvm_ffi__metadata_arg_kind(void*, const TVMFFIAny*, int32_t,
                                                    TVMFFIAny* result) {
  const char* text =
      R"({"type_schema":"{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[{\"type\":\"int\"}],)"
      R"(\"params\":[{\"type\":\"DLTensor*\"}]}}"})";
  TVMFFIByteArray data{text, std::strlen(text)};
  return TVMFFIStringFromByteArray(&data, result);
}
// The same body without metadata: tensors arrive as objects.
TVM_FFI_DLL_EXPORT int __tvm_ffi_arg_kind_plain(void* h, const TVMFFIAny* args, int32_t n,
                                                TVMFFIAny* result) {
  return __tvm_ffi_arg_kind(h, args, n, result);
}
// A generated-code style function raising through the C API (kind, message parts).
TVM_FFI_DLL_EXPORT int __tvm_ffi_fail_parts(void*, const TVMFFIAny*, int32_t, TVMFFIAny*) {
  const char* parts[] = {"bad ", nullptr, "launch: ", "code 7"};
  TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 4);
  return -1;
}
}

// The kind of the error a function raises, as C++ sees it (a Python callback's exception
// crosses as its registered kind).
namespace {
ffi::String KindOf(ffi::Function f) {
  try {
    f();
  } catch (const ffi::Error& e) {
    return e.kind();
  }
  return "";
}
}  // namespace
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kind_of, KindOf);
