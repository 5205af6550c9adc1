/*
 * Module imports through __tvm_ffi__library_bin: registers the loader of module kind
 * "test_path" (its bytes are a library path, loaded through ffi.ModuleLoadFromFile), loads a
 * library whose embedded import tree puts such a module under it, and looks a function of the
 * imported library up through the importer.
 */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static TVMFFIAny None(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof a);
  return a;
}

static TVMFFIObjectHandle Global(const char* name) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  TVMFFIFunctionGetGlobal(&b, &f);
  return f;
}

static void Report(const char* what, int rc, const TVMFFIAny* r) {
  printf("%s: rc=%d", what, rc);
  if (rc != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
    printf(" %.*s: %.*s", (int)c->kind.size, c->kind.data, (int)c->message.size, c->message.data);
    TVMFFIObjectDecRef(err);
  } else {
    const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(r->type_index);
    printf(" %.*s", (int)t->type_key.size, t->type_key.data);
    if (r->type_index == kTVMFFIInt) printf(" %lld", (long long)r->v_int64);
  }
  printf("\n");
}

/* ffi.Module.load_from_bytes.test_path(bytes): the module of the library at that path. */
static int LoadFromPathBytes(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1 || (args[0].type_index != kTVMFFIBytes && args[0].type_index != kTVMFFISmallBytes)) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "test_path loader wants one bytes argument");
    return -1;
  }
  TVMFFIByteArray* b = (TVMFFIByteArray*)((char*)args[0].v_obj + sizeof(TVMFFIObject));
  char path[4096];
  snprintf(path, sizeof path, "%.*s", (int)b->size, b->data);
  TVMFFIAny arg = None();
  arg.type_index = kTVMFFIRawStr;
  arg.v_c_str = path;
  TVMFFIObjectHandle load = Global("ffi.ModuleLoadFromFile");
  int rc = TVMFFIFunctionCall(load, &arg, 1, result);
  TVMFFIObjectDecRef(load);
  return rc;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  TVMFFIObjectHandle loader = NULL;
  TVMFFIFunctionCreate(NULL, LoadFromPathBytes, NULL, &loader);
  TVMFFIByteArray name = {"ffi.Module.load_from_bytes.test_path", 36};
  TVMFFIFunctionSetGlobal(&name, loader, 0);
  TVMFFIObjectDecRef(loader);

  TVMFFIAny path = None(), module = None();
  path.type_index = kTVMFFIRawStr;
  path.v_c_str = argv[1];
  TVMFFIObjectHandle load = Global("ffi.ModuleLoadFromFile");
  int rc = TVMFFIFunctionCall(load, &path, 1, &module);
  Report("load the importer", rc, &module);
  if (rc != 0) return 1;

  TVMFFIObjectHandle get = Global("ffi.ModuleGetFunction");
  for (int query = 0; query < 2; ++query) {
    TVMFFIAny args[3] = {module, None(), None()};
    args[1].type_index = kTVMFFIRawStr;
    args[1].v_c_str = "size";
    args[2].type_index = kTVMFFIBool;
    args[2].v_int64 = query;
    TVMFFIAny f = None();
    rc = TVMFFIFunctionCall(get, args, 3, &f);
    Report(query ? "imported function, imports searched" : "imported function, own only", rc, &f);
    if (f.type_index == kTVMFFIFunction) {
      TVMFFIAny r = None();
      rc = TVMFFIFunctionCall(f.v_obj, NULL, 0, &r);
      Report("  called", rc, &r);
      TVMFFIObjectDecRef(f.v_obj);
    }
  }
  /* The importer's own code finds the import's function through its library context. */
  TVMFFIAny args[3] = {module, None(), None()};
  args[1].type_index = kTVMFFIRawStr;
  args[1].v_c_str = "from_imports";
  args[2].type_index = kTVMFFIBool;
  TVMFFIAny f = None();
  TVMFFIFunctionCall(get, args, 3, &f);
  TVMFFIAny call_args[2] = {None(), None()};
  call_args[0].type_index = kTVMFFIRawStr;
  call_args[0].v_c_str = "size";
  call_args[1].type_index = kTVMFFIInt;
  TVMFFIAny r = None();
  rc = TVMFFIFunctionCall(f.v_obj, call_args, 2, &r);
  Report("from_imports(size)", rc, &r);
  TVMFFIObjectDecRef(f.v_obj);
  /* The same through ModuleObj's out-of-line members, called from the library's code. */
  args[1].v_c_str = "mod_query";
  f = None();
  rc = TVMFFIFunctionCall(get, args, 3, &f);
  Report("get mod_query", rc, &f);
  for (int query = 0; query < 2; ++query) {
    TVMFFIAny q[3] = {module, call_args[0], None()};
    q[2].type_index = kTVMFFIBool;
    q[2].v_int64 = query;
    r = None();
    rc = TVMFFIFunctionCall(f.v_obj, q, 3, &r);
    if (rc != 0) {
      Report("mod_query", rc, &r);
      continue;
    }
    TVMFFIByteArray* t = (TVMFFIByteArray*)((char*)r.v_obj + sizeof(TVMFFIObject));
    printf("mod_query(size, %d): rc=%d %.*s\n", query, rc, (int)t->size, t->data);
    TVMFFIObjectDecRef(r.v_obj);
  }
  TVMFFIObjectDecRef(f.v_obj);
  TVMFFIObjectDecRef(get);
  TVMFFIObjectDecRef(load);
  TVMFFIObjectDecRef(module.v_obj);
  return 0;
}
