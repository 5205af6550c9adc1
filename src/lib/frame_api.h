/*
 * Private entry points of libtvm_ffi.so for the package's Python core; not part of the tvm-ffi
 * C ABI, never called by library headers (their TVMFFICubin prefix keeps them apart).
 */
#ifndef TVM_FFI_RUNTIME_FRAME_API_H_
#define TVM_FFI_RUNTIME_FRAME_API_H_

#include <tvm/ffi/extra/c_env_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Where the current stream comes from during one call from a frontend: get_stream(ctx,
 * device_type, device_id) answers the caller's current stream (for Python, the torch exchange
 * API's current_work_stream), asked only if the callee calls TVMFFIEnvGetStream, so a call
 * that never asks pays nothing for it.
 */
typedef struct {
  void* ctx;
  TVMFFIStreamHandle (*get_stream)(void* ctx, int32_t device_type, int32_t device_id);
} TVMFFICubinStreamProvider;

/*
 * Pushes a call frame on the calling thread before a call and pops it after. While the frame
 * is the innermost one, TVMFFIEnvGetStream(t, i) answers, in order: a stream set by
 * TVMFFIEnvSetStream inside this frame (an explicit choice of the callee wins), then
 * provider->get_stream (when provider and its get_stream are not NULL), then the thread's
 * stream as set outside any frame. Streams set inside a frame are forgotten when it is popped.
 * Nested calls from C++ see the innermost frame. provider must stay valid until the pop.
 * Push returns 0; pop returns 0, or -1 with a RuntimeError when no frame is open.
 */
TVM_FFI_DLL int TVMFFICubinEnvPushFrame(const TVMFFICubinStreamProvider* provider);
TVM_FFI_DLL int TVMFFICubinEnvPopFrame(void);

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // TVM_FFI_RUNTIME_FRAME_API_H_
