/* Safe calls written in plain C against the staged c_api.h, as JIT-compiled code (the CuTe DSL)
 * provides them: by address, and in the MLIR packed form. */
#include <tvm/ffi/c_api.h>

/* result = args[0] + 1 (ints). */
int raw_add_one(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "raw_add_one expects one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + 1;
  return 0;
}

/* The handle it was called with, as an int: tells what Function.__from_extern_c__ passed. */
int raw_handle(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)args;
  (void)num_args;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = (int64_t)(intptr_t)handle;
  return 0;
}

/* MLIR packed form: slots = {&handle, &args, &num_args, &result, &ret_code}. */
void raw_add_one_packed(void** slots) {
  void* handle = *(void**)slots[0];
  const TVMFFIAny* args = *(const TVMFFIAny**)slots[1];
  int32_t num_args = *(int32_t*)slots[2];
  TVMFFIAny* result = *(TVMFFIAny**)slots[3];
  *(int32_t*)slots[4] = raw_add_one(handle, args, num_args, result);
}

/* The legacy "frontend error already set" code, with no Python error behind it. */
int raw_minus_two(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  return -2;
}

/* Fails without raising anything. */
int raw_silent_failure(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  return -1;
}
