// FlashInfer's binding patterns (flashinfer-python 0.7.2.post1, data/csrc/tvm_ffi_utils.h and
// the launchers that include it), CUDA parts left out: the includes, usings, dtype constants,
// the check helpers and macros, the env stream and allocator, and typical signatures.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include "dlpack/dlpack.h"

using tvm::ffi::Tensor;
using tvm::ffi::TensorView;
namespace ffi = tvm::ffi;

inline constexpr int64_t encode_dlpack_dtype(DLDataType dtype) {
  return (dtype.code << 16) | (dtype.bits << 8) | dtype.lanes;
}
constexpr DLDataType dl_int32 = DLDataType{kDLInt, 32, 1};
constexpr DLDataType dl_float16 = DLDataType{kDLFloat, 16, 1};
constexpr DLDataType dl_float8_e4m3fn = DLDataType{kDLFloat8_e4m3fn, 8, 1};
constexpr int64_t float16_code = encode_dlpack_dtype(dl_float16);

inline void check_shape(const tvm::ffi::TensorView& a, const tvm::ffi::TensorView& b,
                        const char* a_name, const char* b_name) {
  TVM_FFI_ICHECK_EQ(a.ndim(), b.ndim()) << a_name << ".ndim() and " << b_name << ".ndim() mismatch";
  for (int i = 0; i < a.ndim(); ++i) {
    TVM_FFI_ICHECK_EQ(a.size(i), b.size(i))
        << a_name << ".size(" << i << ") and " << b_name << ".size(" << i << ") mismatch";
  }
}

#define CHECK_CPU(x) \
  TVM_FFI_ICHECK_EQ(x.device().device_type, kDLCPU) << #x " must be a host tensor";
#define CHECK_CONTIGUOUS(x) TVM_FFI_ICHECK(x.IsContiguous()) << #x " must be contiguous";
#define CHECK_LAST_DIM_CONTIGUOUS(x) \
  TVM_FFI_ICHECK_EQ(x.stride(-1), 1) << #x "must be contiguous at last dimension";
#define CHECK_INPUT_TYPE(x, st) \
  TVM_FFI_ICHECK_EQ(x.dtype(), st) << "Inconsistency of Tensor type: " #x;
#define CHECK_MAYBE_INPUT_TYPE(maybe_x, st) \
  if (maybe_x.has_value()) {                \
    CHECK_INPUT_TYPE(maybe_x.value(), st);  \
  }
#define CHECK_DIM(d, x) TVM_FFI_ICHECK_EQ(x.ndim(), d) << #x " must be a " #d "D tensor";
#define CHECK_SHAPE(a, b) check_shape(a, b, #a, #b)

inline void* get_stream(DLDevice device) {
  return TVMFFIEnvGetStream(device.device_type, device.device_id);
}
inline int64_t get_element_size(ffi::TensorView x) {
  return (x.dtype().bits * x.dtype().lanes) / 8;
}
inline ffi::Tensor alloc_tensor(tvm::ffi::Shape shape, DLDataType dtype, DLDevice device) {
  return ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape, dtype, device);
}

void rmsnorm(TensorView output, TensorView input, TensorView weight, double eps,
             ffi::Optional<TensorView> residual, bool enable_pdl) {
  CHECK_CPU(input);
  CHECK_LAST_DIM_CONTIGUOUS(input);
  CHECK_DIM(2, input);
  CHECK_SHAPE(input, output);
  CHECK_MAYBE_INPUT_TYPE(residual, input.dtype());
  TVM_FFI_ICHECK_EQ(input.size(1), weight.size(0));
  switch (encode_dlpack_dtype(input.dtype())) {
    case float16_code:
      break;
    default:
      TVM_FFI_LOG_AND_THROW(NotImplementedError) << "unsupported dtype " << input.dtype();
  }
  (void)get_stream(input.device()), (void)eps, (void)enable_pdl, (void)get_element_size(input);
}

double trtllm_scale(ffi::Variant<double, ffi::Tensor> bmm1_scale) {
  auto maybe_bmm1_scale_value = bmm1_scale.as<double>();
  auto maybe_bmm1_scale_log2_tensor = bmm1_scale.as<ffi::Tensor>();
  TVM_FFI_CHECK(maybe_bmm1_scale_value.has_value() || maybe_bmm1_scale_log2_tensor.has_value(),
                "bmm1_scale must be either a double or a tensor");
  return maybe_bmm1_scale_value.value_or(1.0);
}

ffi::Tuple<ffi::Array<int64_t>, int64_t> plan(TensorView float_workspace_buffer,
                                              ffi::Array<int64_t> indptr, int64_t batch_size) {
  std::vector<int64_t> plan_info_vec(indptr.begin(), indptr.end());
  (void)float_workspace_buffer;
  return ffi::Tuple<ffi::Array<int64_t>, int64_t>(
      ffi::Array<int64_t>(plan_info_vec.begin(), plan_info_vec.end()), batch_size);
}

int64_t moe_a2a(TensorView tokenSelectedExperts, ffi::Array<Tensor> inputPayloads,
                ffi::Optional<Tensor> maybe_out, ffi::Shape shape, ffi::Function callback) {
  CHECK_INPUT_TYPE(tokenSelectedExperts, dl_int32);
  int64_t n = tokenSelectedExperts.numel() + static_cast<int64_t>(shape.size());
  for (const Tensor& t : inputPayloads) n += t.size(0) * get_element_size(t);
  if (maybe_out.has_value()) n += maybe_out.value().numel();
  if (callback.defined()) n += callback(n).cast<int64_t>();
  ffi::Tensor out = alloc_tensor(shape, dl_float8_e4m3fn, tokenSelectedExperts.device());
  return n + out.numel();
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(trtllm_scale, trtllm_scale);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(plan, plan);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_a2a, moe_a2a);
