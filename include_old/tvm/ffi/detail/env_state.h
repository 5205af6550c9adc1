/*
 * Per-thread state behind TVMFFIEnvGetStream / TVMFFIEnvSetStream (extra/c_env_api.h).
 *
 * Each shared library has its own copy (hidden visibility): the export wrapper of a library
 * installs the caller's context into its own state, so libraries never see each other's.
 * The state is plain zero-initialized data, so a thread_local access is a TLS address lookup
 * with no guard or constructor call.
 */
#ifndef TVM_FFI_DETAIL_ENV_STATE_H_
#define TVM_FFI_DETAIL_ENV_STATE_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>

#include <cstdint>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

/*! \brief Overrides alive at once on one thread, over all nested calls. */
constexpr int32_t kMaxStreamOverrides = 16;

struct StreamOverride {
  int32_t device_type;
  int32_t device_id;
  void* stream;
};

/*!
 * overrides[frame_begin, num_overrides) belong to the current call. Overrides are only ever
 * appended (or replaced within the current call), so restoring the three scalars on return
 * undoes everything the call did.
 */
struct EnvState {
  const TVMFFICallContext* ctx;
  int32_t frame_begin;
  int32_t num_overrides;
  StreamOverride overrides[kMaxStreamOverrides];
};

TVM_FFI_DETAIL_TLS_MODEL_BEGIN
TVM_FFI_DLL_LOCAL inline EnvState* GetEnvState() noexcept {
  // Zero-initialized: no dynamic init. The TLS model keeps non-PIC objects linkable (base.h).
  static thread_local EnvState state TVM_FFI_DETAIL_TLS_MODEL;
  EnvState* ptr = &state;
#if defined(__GNUC__) || defined(__clang__)
  // In a dlopen'ed library each TLS address costs a __tls_get_addr call, and compilers prefer
  // recomputing it to keeping it in a register across the user's function. Hiding where the
  // pointer came from makes them keep it: one lookup per call instead of two.
  asm("" : "+r"(ptr));
#endif
  return ptr;
}
TVM_FFI_DETAIL_TLS_MODEL_END

/*! \brief Installs a call's context for its duration (RAII; exceptions restore too). */
class EnvCallScope {
 public:
  explicit EnvCallScope(const TVMFFICallContext* ctx) noexcept
      : state_(GetEnvState()),
        saved_ctx_(state_->ctx),
        saved_frame_begin_(state_->frame_begin),
        saved_num_overrides_(state_->num_overrides) {
    state_->ctx = ctx;
    state_->frame_begin = saved_num_overrides_;
  }
  ~EnvCallScope() {
    state_->ctx = saved_ctx_;
    state_->frame_begin = saved_frame_begin_;
    state_->num_overrides = saved_num_overrides_;
  }
  EnvCallScope(const EnvCallScope&) = delete;
  EnvCallScope& operator=(const EnvCallScope&) = delete;

 private:
  EnvState* state_;
  const TVMFFICallContext* saved_ctx_;
  int32_t saved_frame_begin_;
  int32_t saved_num_overrides_;
};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_ENV_STATE_H_
