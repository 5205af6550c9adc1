/* c_api.h (and the dlpack.h it includes) must be plain C: a caller in C needs nothing else. */
#include <stddef.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

typedef char check_any_size[sizeof(TVMFFIAny) == 16 ? 1 : -1];
typedef char check_object_size[sizeof(TVMFFIObject) == 24 ? 1 : -1];
typedef char check_value_offset[offsetof(TVMFFIAny, v_int64) == 8 ? 1 : -1];
typedef char check_device_size[sizeof(DLDevice) == 8 ? 1 : -1];

/* A safe call from C: result preset to None, an owned object result released. */
int CallWithoutArguments(TVMFFISafeCallType entry, TVMFFIAny* result) {
  int rc;
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  rc = entry(NULL, NULL, 0, result);
  if (rc == 0 && result->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result->v_obj);
  return rc;
}

void* CurrentStream(void) { return TVMFFIEnvGetStream(kDLCUDA, 0); }
