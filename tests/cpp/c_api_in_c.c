/* c_api.h (and the dlpack.h it includes) must be plain C: a caller in C needs nothing else. */
#include <stddef.h>
#include <tvm/ffi/c_api.h>

typedef char check_any_size[sizeof(TVMFFIAny) == 24 ? 1 : -1];
typedef char check_result_size[sizeof(TVMFFIResult) == 32 ? 1 : -1];
typedef char check_value_offset[offsetof(TVMFFIAny, v_int64) == 8 ? 1 : -1];
typedef char check_device_size[sizeof(DLDevice) == 8 ? 1 : -1];

int CallWithoutArguments(TVMFFIFunctionEntry entry, TVMFFIResult* result) {
  int rc = entry(NULL, NULL, 0, result);
  if (result->owner != NULL) result->owner->deleter(result->owner);
  return rc;
}
