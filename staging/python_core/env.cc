// The stream around a call from Python.
//
// Apache's runtime (today's target): when a CUDA tensor is among the arguments, the producer's
// current stream for that device is set eagerly with TVMFFIEnvSetStream before the call and the
// previous one restored after, so TVMFFIEnvGetStream inside the callee answers the caller's
// stream. Our runtime (D4) will instead take a per-thread frame with a lazy provider, consulted
// only if the callee asks; that entry is private to our runtime and not wired here yet: see
// LazyFrameHook below, the one place it goes.
#include "core.h"

namespace tvm_ffi_next {

namespace {

// ---- lazy frame provider (our runtime, D4): not wired -----------------------------------------
// When our runtime exports its frame push/pop, they are resolved once and installed here; the
// eager path below is then skipped. Until then both stay NULL.
struct LazyFrameHook {
  int (*push)(const ExchangeApi* provider, int32_t device_type, int32_t device_id) = nullptr;
  void (*pop)() = nullptr;
};
LazyFrameHook g_lazy_frame;

}  // namespace

int StreamScope::Enter(const ArgFrame& frame) {
  if (frame.cuda_device < 0) return 0;  // CPU-only calls: nothing to do, no query
  const ExchangeApi* api = frame.stream_api;
  if (g_lazy_frame.push != nullptr) {
    active = g_lazy_frame.push(api, kDLCUDA, frame.cuda_device) == 0;
    return 0;
  }
  if (api == nullptr || api->current_work_stream == nullptr) return 0;
  void* stream = nullptr;
  if (api->current_work_stream(kDLCUDA, frame.cuda_device, &stream) != 0) return -1;
  if (TVMFFIEnvSetStream(kDLCUDA, frame.cuda_device, stream, &previous) != 0) {
    RaiseCallError(-1, "TVMFFIEnvSetStream", nullptr);
    return -1;
  }
  device_id = frame.cuda_device;
  active = true;
  return 0;
}

void StreamScope::Leave() {
  if (!active) return;
  active = false;
  if (g_lazy_frame.pop != nullptr) {
    g_lazy_frame.pop();
    return;
  }
  if (TVMFFIEnvSetStream(kDLCUDA, device_id, previous, nullptr) != 0) {
    TVMFFIObjectHandle error = nullptr;  // restoring a slot the call set cannot fail in practice
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
  }
}

}  // namespace tvm_ffi_next
