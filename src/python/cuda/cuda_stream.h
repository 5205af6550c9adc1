// TEMPORARY: moves to core (CallStream in core/env.cc, declared in core/core.h; this copy of
// CurrentWorkStream's message goes with it).
#ifndef TVM_FFI_PY_CUDA_STREAM_H_
#define TVM_FFI_PY_CUDA_STREAM_H_

#include "core/core.h"

namespace tvm_ffi_next {

/*!
 * \brief The stream a call from Python with a CUDA tensor of device `device_id` (from producer
 *  `api`, may be NULL) sees through TVMFFIEnvGetStream: a raw stream pushed for the device
 *  (use_raw_stream), else the producer's current stream, else NULL (the default stream).
 *  0, or -1 with a Python error set.
 */
inline int CallStream(const ExchangeApi* api, int32_t device_id, void** stream) {
  *stream = nullptr;
  if (RawStreamPushed(kDLCUDA, device_id)) {
    *stream = TVMFFIEnvGetStream(kDLCUDA, device_id);
    return 0;
  }
  if (api == nullptr || api->current_work_stream == nullptr) return 0;
  if (api->current_work_stream(kDLCUDA, device_id, stream) == 0) return 0;
  if (!PyErr_Occurred()) {
    PyErr_Format(PyExc_RuntimeError,
                 "the tensor producer's current_work_stream failed for cuda:%d without an error",
                 static_cast<int>(device_id));
  }
  return -1;
}

}  // namespace tvm_ffi_next

#endif  // TVM_FFI_PY_CUDA_STREAM_H_
