/* Loads each library named on the command line through "ffi.ModuleLoadFromFile" and prints
 * whether it loaded, or the error's kind and message. */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

int main(int argc, char** argv) {
  TVMFFIByteArray name = {"ffi.ModuleLoadFromFile", 22};
  TVMFFIObjectHandle load = NULL;
  TVMFFIFunctionGetGlobal(&name, &load);
  for (int i = 1; i < argc; ++i) {
    TVMFFIAny path, module;
    memset(&path, 0, sizeof path);
    memset(&module, 0, sizeof module);
    path.type_index = kTVMFFIRawStr;
    path.v_c_str = argv[i];
    int rc = TVMFFIFunctionCall(load, &path, 1, &module);
    printf("load %s: rc=%d\n", argv[i], rc);
    if (rc != 0) {
      TVMFFIObjectHandle err = NULL;
      TVMFFIErrorMoveFromRaised(&err);
      TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
      printf("  %.*s: %.*s\n", (int)c->kind.size, c->kind.data, (int)c->message.size,
             c->message.data);
      TVMFFIObjectDecRef(err);
    } else {
      TVMFFIObjectDecRef(module.v_obj);
    }
    fflush(stdout);
  }
  TVMFFIObjectDecRef(load);
  return 0;
}
