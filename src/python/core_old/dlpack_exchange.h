/*
 * The DLPack C exchange API (DLPack 1.3, `type(obj).__dlpack_c_exchange_api__`), declared
 * privately: the public tvm/ffi/dlpack.h carries only the tensor structs, and only this
 * extension ever calls into a producer's table.
 */
#ifndef TVM_FFI_PY_DLPACK_EXCHANGE_H_
#define TVM_FFI_PY_DLPACK_EXCHANGE_H_

#include <tvm/ffi/dlpack.h>

namespace tvm_ffi_py {

/*! \brief Name of the PyCapsule a producer stores on its tensor type. */
constexpr const char* kExchangeApiCapsuleName = "dlpack_exchange_api";

/*! \brief The only major version of the table layout below that we understand. */
constexpr uint32_t kExchangeApiMajor = 1;

struct ExchangeApiHeader {
  DLPackVersion version;
  ExchangeApiHeader* prev_api;  // an older table of the same producer, or NULL
};

// Every producer function returns 0, or -1 with a Python error set.
struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                  void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned* tensor, void** out);
  // May be NULL: then we fall back to managed_tensor_from_py_object_no_sync.
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  int (*current_work_stream)(DLDeviceType device_type, int32_t device_id, void** out_stream);
};

}  // namespace tvm_ffi_py

#endif  // TVM_FFI_PY_DLPACK_EXCHANGE_H_
