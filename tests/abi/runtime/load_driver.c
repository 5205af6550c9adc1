/* Loads each library named on the command line through "ffi.ModuleLoadFromFile" and prints
 * whether it loaded, or the error's kind and message; an argument "call=<name>" calls function
 * <name> of the last library loaded, with no arguments, and prints the result. */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static void PrintError(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
  printf("  %.*s: %.*s\n", (int)c->kind.size, c->kind.data, (int)c->message.size, c->message.data);
  TVMFFIObjectDecRef(err);
}

static void CallFunction(TVMFFIObjectHandle module, const char* fname) {
  TVMFFIByteArray get_name = {"ffi.ModuleGetFunction", 21};
  TVMFFIObjectHandle get = NULL;
  TVMFFIFunctionGetGlobal(&get_name, &get);
  TVMFFIAny args[3], f, r;
  memset(args, 0, sizeof args);
  memset(&f, 0, sizeof f);
  memset(&r, 0, sizeof r);
  args[0].type_index = kTVMFFIModule;
  args[0].v_obj = (TVMFFIObject*)module;
  args[1].type_index = kTVMFFIRawStr;
  args[1].v_c_str = fname;
  args[2].type_index = kTVMFFIBool;
  TVMFFIFunctionCall(get, args, 3, &f);
  TVMFFIObjectDecRef(get);
  if (f.type_index != kTVMFFIFunction) {
    printf("call %s: no such function\n", fname);
    return;
  }
  int rc = TVMFFIFunctionCall(f.v_obj, NULL, 0, &r);
  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(r.type_index);
  printf("call %s: rc=%d", fname, rc);
  if (rc == 0) printf(" %.*s %lld", (int)t->type_key.size, t->type_key.data, (long long)r.v_int64);
  printf("\n");
  if (rc != 0) PrintError();
  if (rc == 0 && r.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(r.v_obj);
  TVMFFIObjectDecRef(f.v_obj);
}

int main(int argc, char** argv) {
  TVMFFIByteArray name = {"ffi.ModuleLoadFromFile", 22};
  TVMFFIObjectHandle load = NULL, last = NULL;
  TVMFFIFunctionGetGlobal(&name, &load);
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "call=", 5) == 0) {
      if (last != NULL) CallFunction(last, argv[i] + 5);
      continue;
    }
    TVMFFIAny path, module;
    memset(&path, 0, sizeof path);
    memset(&module, 0, sizeof module);
    path.type_index = kTVMFFIRawStr;
    path.v_c_str = argv[i];
    int rc = TVMFFIFunctionCall(load, &path, 1, &module);
    printf("load %s: rc=%d\n", argv[i], rc);
    if (rc != 0) {
      PrintError();
    } else {
      if (last != NULL) TVMFFIObjectDecRef(last);
      last = module.v_obj;
    }
    fflush(stdout);
  }
  if (last != NULL) TVMFFIObjectDecRef(last);
  TVMFFIObjectDecRef(load);
  return 0;
}
