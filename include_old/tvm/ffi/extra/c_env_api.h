/*
 * The stream environment of an exported function.
 *
 * Inside a function exported with TVM_FFI_DLL_EXPORT_TYPED_FUNC, TVMFFIEnvGetStream returns
 * the stream the caller is working on for a device (for torch: its current CUDA stream), so
 * kernels launched there are ordered with the caller's work without any synchronization.
 */
#ifndef TVM_FFI_EXTRA_C_ENV_API_H_
#define TVM_FFI_EXTRA_C_ENV_API_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/env_state.h>

#include <cstdint>

/*! \brief A stream of any device API (cudaStream_t, CUstream, hipStream_t...); NULL: default. */
typedef void* TVMFFIStreamHandle;

/*!
 * \brief The stream to use for (device_type, device_id), in this order:
 *  1. the last TVMFFIEnvSetStream for that device on this thread during the current call;
 *  2. what the caller's TVMFFICallContext reports (get_stream);
 *  3. NULL (the default stream), e.g. outside any call or when the caller passed no context.
 */
TVM_FFI_DLL_LOCAL inline TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type,
                                                               int32_t device_id) noexcept {
  const ::tvm::ffi::detail::EnvState* state = ::tvm::ffi::detail::GetEnvState();
  for (int32_t i = state->num_overrides; i-- > state->frame_begin;) {
    const ::tvm::ffi::detail::StreamOverride& o = state->overrides[i];
    if (o.device_type == device_type && o.device_id == device_id) return o.stream;
  }
  const TVMFFICallContext* ctx = state->ctx;
  if (ctx != nullptr && ctx->get_stream != nullptr) {
    return ctx->get_stream(ctx->handle, device_type, device_id);
  }
  return nullptr;
}

/*!
 * \brief Makes TVMFFIEnvGetStream return `stream` for (device_type, device_id) on this thread
 *  until the current call returns (outside any call: until the thread ends or it is set again).
 *  Calls made from here through the C ABI get their own environment and do not see it.
 * \param opt_out_original_stream if non-NULL, receives what TVMFFIEnvGetStream returned before.
 * \return 0 on success, -1 when too many overrides are alive on this thread at once.
 */
TVM_FFI_DLL_LOCAL inline int TVMFFIEnvSetStream(
    int32_t device_type, int32_t device_id, TVMFFIStreamHandle stream,
    TVMFFIStreamHandle* opt_out_original_stream) noexcept {
  if (opt_out_original_stream != nullptr) {
    *opt_out_original_stream = TVMFFIEnvGetStream(device_type, device_id);
  }
  ::tvm::ffi::detail::EnvState* state = ::tvm::ffi::detail::GetEnvState();
  for (int32_t i = state->num_overrides; i-- > state->frame_begin;) {
    ::tvm::ffi::detail::StreamOverride& o = state->overrides[i];
    if (o.device_type == device_type && o.device_id == device_id) {
      o.stream = stream;
      return 0;
    }
  }
  if (state->num_overrides == ::tvm::ffi::detail::kMaxStreamOverrides) return -1;
  state->overrides[state->num_overrides++] = {device_type, device_id, stream};
  return 0;
}

/*!
 * \brief Allocates a tensor through the caller's framework, for
 *  Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape, dtype, device). Only the prototype's
 *  dtype, ndim, shape and device are read. Called from Python with torch tensors among the
 *  arguments this is torch.empty (through torch's DLPack exchange API); with no framework
 *  tensor among them, CPU tensors are allocated by tvm_ffi itself.
 * \param out receives a DLManagedTensorVersioned* that the caller of this function owns.
 * \return 0 on success; -1 when no allocator is available (outside a call, or a caller that
 *  offers none) or the allocation failed (the Python caller then raises the framework's error).
 */
TVM_FFI_DLL_LOCAL inline int TVMFFIEnvTensorAlloc(DLTensor* prototype,
                                                  TVMFFIObjectHandle* out) noexcept {
  const TVMFFICallContext* ctx = ::tvm::ffi::detail::GetEnvState()->ctx;
  if (ctx == nullptr || ctx->abi_version < 2 || ctx->alloc_tensor == nullptr) return -1;
  DLManagedTensorVersioned* managed = nullptr;
  if (ctx->alloc_tensor(ctx->handle, prototype, &managed) != 0 || managed == nullptr) return -1;
  *out = managed;
  return 0;
}

#endif  // TVM_FFI_EXTRA_C_ENV_API_H_
