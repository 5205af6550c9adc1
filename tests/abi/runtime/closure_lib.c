/* A plain C library (no C++ runtime, so nothing pins it in memory) that returns a function
 * object whose code lives in the library: the closure must keep working after the library's
 * module is released. */
#include <tvm/ffi/c_api.h>

static int Twice(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "twice wants one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = 2 * args[0].v_int64;
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_make_closure(void* handle, const TVMFFIAny* args, int32_t n,
                                              TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)n;
  TVMFFIObjectHandle f = 0;
  if (TVMFFIFunctionCreate(0, Twice, 0, &f) != 0) return -1;
  result->type_index = kTVMFFIFunction;
  result->zero_padding = 0;
  result->v_obj = (TVMFFIObject*)f;
  return 0;
}
