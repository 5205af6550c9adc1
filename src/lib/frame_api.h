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

/*
 * A thread's frames, as the runtime keeps them. A frontend that calls often (the Python core)
 * pushes and pops through TVMFFICubinFramePush/Pop below instead of the two calls above: the
 * calls cost a cross-library call and a thread-local lookup each, about half of what a call
 * with a CUDA tensor adds over one without. The frontend asks for its thread's stack once and
 * keeps the pointer in its own thread-local state; the stack lives as long as the thread.
 * Both sides are built from this header in one package; `layout` guards against a mix.
 */
#define TVM_FFI_CUBIN_FRAME_LAYOUT 1u
#define TVM_FFI_CUBIN_INLINE_FRAMES 32u

typedef struct {
  uint32_t layout;         /* TVM_FFI_CUBIN_FRAME_LAYOUT of the runtime that made it */
  uint32_t depth;          /* open frames */
  uint32_t framed_streams; /* streams set inside open frames (the runtime keeps them) */
  uint32_t heap_capacity;  /* frames from TVM_FFI_CUBIN_INLINE_FRAMES on live in heap */
  const TVMFFICubinStreamProvider** heap;
  const TVMFFICubinStreamProvider* inline_frames[TVM_FFI_CUBIN_INLINE_FRAMES];
} TVMFFICubinFrameStack;

/* The calling thread's frame stack; never NULL. */
TVM_FFI_DLL TVMFFICubinFrameStack* TVMFFICubinEnvThreadFrames(void);

/*
 * TVMFFICubinEnvPushFrame/PopFrame on the calling thread's stack `f`, inline where they can be.
 * `push`/`pop` are those two entries as the frontend found them (it may run on a runtime
 * without them, so it does not link them). The runtime forgets the streams set inside a frame
 * when it is popped, so a frame with any is popped by the runtime.
 */
static inline int TVMFFICubinFramePush(TVMFFICubinFrameStack* f,
                                       const TVMFFICubinStreamProvider* provider,
                                       int (*push)(const TVMFFICubinStreamProvider*)) {
  if (f->depth >= TVM_FFI_CUBIN_INLINE_FRAMES) return push(provider);
  f->inline_frames[f->depth++] = provider;
  return 0;
}

static inline int TVMFFICubinFramePop(TVMFFICubinFrameStack* f, int (*pop)(void)) {
  if (f->framed_streams != 0 || f->depth == 0) return pop();
  --f->depth;
  return 0;
}

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // TVM_FFI_RUNTIME_FRAME_API_H_
