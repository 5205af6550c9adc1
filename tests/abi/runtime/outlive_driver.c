/* Loads closure_lib, takes a closure from it, releases the module, then calls the closure. */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static TVMFFIObjectHandle Global(const char* name) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  TVMFFIFunctionGetGlobal(&b, &f);
  return f;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  TVMFFIAny args[3], r;
  memset(args, 0, sizeof args);
  memset(&r, 0, sizeof r);
  args[0].type_index = kTVMFFIRawStr;
  args[0].v_c_str = argv[1];
  TVMFFIObjectHandle load = Global("ffi.ModuleLoadFromFile"), get = Global("ffi.ModuleGetFunction");
  if (TVMFFIFunctionCall(load, args, 1, &r) != 0) return 1;
  TVMFFIAny module = r;
  args[0] = module;
  args[1].type_index = kTVMFFIRawStr;
  args[1].v_c_str = "make_closure";
  args[2].type_index = kTVMFFIBool;
  memset(&r, 0, sizeof r);
  if (TVMFFIFunctionCall(get, args, 3, &r) != 0 || r.type_index != kTVMFFIFunction) return 1;
  TVMFFIObjectHandle make = r.v_obj;
  memset(&r, 0, sizeof r);
  if (TVMFFIFunctionCall(make, NULL, 0, &r) != 0) return 1;
  TVMFFIObjectHandle closure = r.v_obj;
  TVMFFIObjectDecRef(make);
  TVMFFIObjectDecRef(module.v_obj);
  printf("module released\n");
  fflush(stdout);
  TVMFFIAny x;
  memset(&x, 0, sizeof x);
  x.type_index = kTVMFFIInt;
  x.v_int64 = 21;
  memset(&r, 0, sizeof r);
  int rc = TVMFFIFunctionCall(closure, &x, 1, &r);
  printf("closure(21): rc=%d value=%lld\n", rc, (long long)r.v_int64);
  TVMFFIObjectDecRef(closure);
  TVMFFIObjectDecRef(load);
  TVMFFIObjectDecRef(get);
  return 0;
}
