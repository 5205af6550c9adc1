/*
 * Loads client_lib.so (built with apache-tvm-ffi's headers) through the runtime's
 * "ffi.ModuleLoadFromFile" and calls each of its functions with plain C and c_api.h, printing
 * what comes back. tests/abi/test_runtime_client.py runs it with our runtime and with
 * apache's first on the library path and compares the outputs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

static TVMFFIAny None(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof a);
  return a;
}
static TVMFFIAny Int(int64_t v) {
  TVMFFIAny a = None();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}
static TVMFFIAny Float(double v) {
  TVMFFIAny a = None();
  a.type_index = kTVMFFIFloat;
  a.v_float64 = v;
  return a;
}
static TVMFFIAny Bool(int v) {
  TVMFFIAny a = Int(v);
  a.type_index = kTVMFFIBool;
  return a;
}
static TVMFFIAny Raw(const char* s) {
  TVMFFIAny a = None();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}
static TVMFFIAny Obj(void* obj) {
  TVMFFIAny a = None();
  a.type_index = ((TVMFFIObject*)obj)->type_index;
  a.v_obj = (TVMFFIObject*)obj;
  return a;
}
static TVMFFIAny Str(const char* data, size_t n, int bytes) {
  TVMFFIByteArray b = {data, n};
  TVMFFIAny a = None();
  if (bytes) {
    TVMFFIBytesFromByteArray(&b, &a);
  } else {
    TVMFFIStringFromByteArray(&b, &a);
  }
  return a;
}
static void Release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(a->v_obj);
  *a = None();
}
static TVMFFIByteArray Text(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFISmallStr || a->type_index == kTVMFFISmallBytes) {
    TVMFFIByteArray b = {a->v_bytes, a->small_str_len};
    return b;
  }
  if (a->type_index == kTVMFFIStr || a->type_index == kTVMFFIBytes) {
    return *(TVMFFIByteArray*)((char*)a->v_obj + sizeof(TVMFFIObject));
  }
  TVMFFIByteArray none = {"<not a string>", 14};
  return none;
}
static const char* Kind(int32_t type_index) {
  static char buf[128];
  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(type_index);
  snprintf(buf, sizeof buf, "%.*s", (int)t->type_key.size, t->type_key.data);
  return buf;
}

static TVMFFIObjectHandle Global(const char* name);
static void PrintMap(const TVMFFIAny* a);

/* Prints one value: its type key and content. */
static void Print(const TVMFFIAny* a) {
  switch (a->type_index) {
    case kTVMFFINone:
      printf("None");
      break;
    case kTVMFFIInt:
      printf("int %lld", (long long)a->v_int64);
      break;
    case kTVMFFIBool:
      printf("bool %lld", (long long)a->v_int64);
      break;
    case kTVMFFIFloat:
      printf("float %.17g", a->v_float64);
      break;
    case kTVMFFIOpaquePtr:
      printf("void* %p", a->v_ptr);
      break;
    case kTVMFFIDataType:
      printf("dtype %d:%d:%d", a->v_dtype.code, a->v_dtype.bits, a->v_dtype.lanes);
      break;
    case kTVMFFIDevice:
      printf("device %d:%d", a->v_device.device_type, a->v_device.device_id);
      break;
    case kTVMFFISmallStr:
    case kTVMFFIStr:
    case kTVMFFISmallBytes:
    case kTVMFFIBytes: {
      TVMFFIByteArray t = Text(a);
      int bytes = a->type_index == kTVMFFISmallBytes || a->type_index == kTVMFFIBytes;
      printf("%s[%d] '", bytes ? "bytes" : "str", (int)t.size);
      for (size_t i = 0; i < t.size; ++i) {
        if (t.data[i] >= 32 && t.data[i] < 127)
          putchar(t.data[i]);
        else
          printf("\\x%02x", (unsigned char)t.data[i]);
      }
      printf("'");
      break;
    }
    case kTVMFFIShape: {
      TVMFFIShapeCell* c = (TVMFFIShapeCell*)((char*)a->v_obj + 24);
      printf("shape(");
      for (size_t i = 0; i < c->size; ++i) printf("%s%lld", i ? "," : "", (long long)c->data[i]);
      printf(")");
      break;
    }
    case kTVMFFIArray:
    case kTVMFFIList: {
      TVMFFISeqCell* c = (TVMFFISeqCell*)((char*)a->v_obj + 24);
      printf("%s[", a->type_index == kTVMFFIArray ? "array" : "list");
      for (int64_t i = 0; i < c->size; ++i) {
        if (i) printf(", ");
        Print((TVMFFIAny*)c->data + i);
      }
      printf("]");
      break;
    }
    case kTVMFFITensor: {
      DLTensor* t = (DLTensor*)((char*)a->v_obj + 24);
      printf("tensor ndim=%d shape0=%lld dtype=%d:%d first=%g", t->ndim,
             (long long)(t->ndim ? t->shape[0] : 0), t->dtype.code, t->dtype.bits,
             (double)((float*)t->data)[0]);
      break;
    }
    case kTVMFFIMap:
    case kTVMFFIDict:
      PrintMap(a);
      break;
    default:
      printf("object %s", Kind(a->type_index));
  }
}

static TVMFFIObjectHandle Global(const char* name) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  TVMFFIFunctionGetGlobal(&b, &f);
  if (f == NULL) {
    printf("global %s absent\n", name);
    exit(1);
  }
  return f;
}

/* Calls f and prints "label -> value" or "label -> Kind: message"; returns the result. */
static TVMFFIAny Call(const char* label, TVMFFIObjectHandle f, TVMFFIAny* args, int n) {
  TVMFFIAny r = None();
  int rc = TVMFFIFunctionCall(f, args, n, &r);
  printf("%s -> ", label);
  if (rc != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + 24);
    printf("rc=%d %.*s: %.*s\n", rc, (int)c->kind.size, c->kind.data, (int)c->message.size,
           c->message.data);
    TVMFFIObjectDecRef(err);
    return None();
  }
  Print(&r);
  printf("\n");
  return r;
}

/* A map or dict in its order, read through the runtime's ffi.*Size and ffi.*ForwardIterFunctor. */
static void PrintMap(const TVMFFIAny* a) {
  int dict = a->type_index == kTVMFFIDict;
  TVMFFIObjectHandle size_f = Global(dict ? "ffi.DictSize" : "ffi.MapSize");
  TVMFFIObjectHandle iter_f =
      Global(dict ? "ffi.DictForwardIterFunctor" : "ffi.MapForwardIterFunctor");
  TVMFFIAny self = *a, n = None(), it = None();
  if (TVMFFIFunctionCall(size_f, &self, 1, &n) != 0 ||
      TVMFFIFunctionCall(iter_f, &self, 1, &it) != 0) {
    printf("unreadable map\n");
    exit(1);
  }
  printf("%s{", dict ? "dict" : "map");
  for (int64_t i = 0; i < n.v_int64; ++i) {
    TVMFFIAny cmd = Int(0), k = None(), v = None(), more = None();
    TVMFFIFunctionCall(it.v_obj, &cmd, 1, &k);
    cmd = Int(1);
    TVMFFIFunctionCall(it.v_obj, &cmd, 1, &v);
    printf("%s", i ? ", " : "");
    Print(&k);
    printf(": ");
    Print(&v);
    Release(&k);
    Release(&v);
    cmd = Int(2);
    TVMFFIFunctionCall(it.v_obj, &cmd, 1, &more);
    if (!more.v_int64) break;
  }
  printf("}");
  Release(&it);
  TVMFFIObjectDecRef(size_f);
  TVMFFIObjectDecRef(iter_f);
}

/* Calls the runtime global `name` and releases its result. */
static void CallGlobal(const char* label, const char* name, TVMFFIAny* args, int n) {
  TVMFFIObjectHandle f = Global(name);
  TVMFFIAny r = Call(label, f, args, n);
  Release(&r);
  TVMFFIObjectDecRef(f);
}

static TVMFFIObjectHandle module = NULL;

static TVMFFIObjectHandle Fn(const char* name) {
  TVMFFIAny args[3] = {Obj(module), Raw(name), Bool(1)};
  TVMFFIAny r = None();
  TVMFFIObjectHandle get = Global("ffi.ModuleGetFunction");
  if (TVMFFIFunctionCall(get, args, 3, &r) != 0 || r.type_index != kTVMFFIFunction) {
    printf("no function %s (index %d)\n", name, r.type_index);
    exit(1);
  }
  TVMFFIObjectDecRef(get);
  return r.v_obj;
}

/* Calls the library's function `name`. */
static TVMFFIAny CallFn(const char* name, TVMFFIAny* args, int n) {
  TVMFFIObjectHandle f = Fn(name);
  TVMFFIAny r = Call(name, f, args, n);
  TVMFFIObjectDecRef(f);
  return r;
}

static int Times3(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "times3 wants one int");
    return -1;
  }
  if (args[0].v_int64 == 13) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "13 is unlucky");
    return -1;
  }
  *result = Int(args[0].v_int64 * 3);
  return 0;
}

static int deleted = 0;
static void ManagedDelete(DLManagedTensorVersioned* self) {
  (void)self;
  deleted++;
}

static float alloc_data[64];
static int64_t alloc_shape[4];
static DLManagedTensorVersioned alloc_tensor;
static int Alloc(DLTensor* proto, DLManagedTensorVersioned** out, void* ctx,
                 void (*set_error)(void*, const char*, const char*)) {
  (void)ctx;
  (void)set_error;
  memset(&alloc_tensor, 0, sizeof alloc_tensor);
  alloc_tensor.version.major = DLPACK_MAJOR_VERSION;
  alloc_tensor.dl_tensor = *proto;
  memcpy(alloc_shape, proto->shape, sizeof(int64_t) * proto->ndim);
  alloc_tensor.dl_tensor.shape = alloc_shape;
  alloc_tensor.dl_tensor.strides = NULL;
  alloc_tensor.dl_tensor.data = alloc_data;
  alloc_tensor.deleter = ManagedDelete;
  *out = &alloc_tensor;
  return 0;
}

/* Maps and dicts built by the library (small and dense) read and changed through the runtime's
 * globals, and built by the runtime read and changed by the library. */
static void Maps(void) {
  static const char* keys[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
  TVMFFIAny a[16];
  const int64_t sizes[] = {0, 3, 4, 5, 40};
  for (int i = 0; i < 5; ++i) {
    a[0] = Int(sizes[i]);
    TVMFFIAny lib_map = CallFn("make_map", a, 1);
    a[0] = lib_map;
    a[1] = Raw("k2");
    CallGlobal("ffi.MapGetItem k2", "ffi.MapGetItem", a, 2);
    CallGlobal("ffi.MapGetItemOrMissing k2", "ffi.MapGetItemOrMissing", a, 2);
    CallGlobal("ffi.MapCount k2", "ffi.MapCount", a, 2);
    a[1] = Str("k3", 2, 0);  /* a String object key finds a small-string entry */
    CallGlobal("ffi.MapCount String k3", "ffi.MapCount", a, 2);
    Release(&a[1]);
    a[1] = Raw("zz");
    CallGlobal("ffi.MapGetItem zz", "ffi.MapGetItem", a, 2);
    CallGlobal("ffi.MapGetItemOrMissing zz", "ffi.MapGetItemOrMissing", a, 2);
    CallGlobal("ffi.MapSize", "ffi.MapSize", a, 1);
    TVMFFIAny walked = CallFn("map_walk", a, 1);
    Release(&walked);
    Release(&lib_map);
  }
  for (int n = 2; n <= 8; n += 5) {
    for (int i = 0; i < n; ++i) {
      a[2 * i] = Raw(keys[i]);
      a[2 * i + 1] = Int(i * 10);
    }
    TVMFFIObjectHandle make = Global("ffi.Map");
    TVMFFIAny rt_map = Call("ffi.Map", make, a, 2 * n);
    TVMFFIObjectDecRef(make);
    TVMFFIAny walked = CallFn("map_walk", &rt_map, 1);
    Release(&walked);
    Release(&rt_map);
  }
  a[0] = Int(6);
  TVMFFIAny lib_dict = CallFn("make_dict", a, 1);
  a[0] = lib_dict;
  a[1] = Raw("added");
  a[2] = Int(99);
  CallGlobal("ffi.DictSetItem", "ffi.DictSetItem", a, 3);
  a[1] = Int(3);
  CallGlobal("ffi.DictErase 3", "ffi.DictErase", a, 2);
  CallGlobal("ffi.DictCount 3", "ffi.DictCount", a, 2);
  a[1] = Int(5);
  CallGlobal("ffi.DictGetItem 5", "ffi.DictGetItem", a, 2);
  CallGlobal("ffi.DictGetItemOrMissing 5", "ffi.DictGetItemOrMissing", a, 2);
  a[1] = Raw("zz");
  CallGlobal("ffi.DictGetItem zz", "ffi.DictGetItem", a, 2);
  CallGlobal("library dict after", "ffi.DictSize", a, 1);
  Print(&lib_dict);
  printf("\n");
  for (int i = 0; i < 3; ++i) {
    a[2 * i] = Raw(keys[i]);
    a[2 * i + 1] = Int(i);
  }
  TVMFFIObjectHandle make = Global("ffi.Dict");
  TVMFFIAny rt_dict = Call("ffi.Dict", make, a, 6);
  TVMFFIObjectDecRef(make);
  for (int i = 0; i < 30; ++i) { /* grows the runtime's dict to a dense table */
    a[0] = rt_dict;
    a[1] = Int(100 + i);
    a[2] = Int(i);
    CallGlobal("ffi.DictSetItem", "ffi.DictSetItem", a, 3);
  }
  a[0] = rt_dict;
  a[1] = Raw("new");
  a[2] = Int(5);
  CallFn("dict_change", a, 3);
  printf("runtime dict after the library's change: ");
  Print(&rt_dict);
  printf("\n");
  CallGlobal("ffi.DictClear", "ffi.DictClear", a, 1);
  CallGlobal("ffi.DictSize after clear", "ffi.DictSize", a, 1);
  Release(&lib_dict);
  Release(&rt_dict);
  a[0] = Raw("odd");
  CallGlobal("ffi.Map odd", "ffi.Map", a, 1);
  a[0] = Int(1);
  CallGlobal("ffi.MapSize int", "ffi.MapSize", a, 1);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  Dl_info where;
  if (dladdr((void*)TVMFFIGetVersion, &where) != 0)
    fprintf(stderr, "runtime: %s\n", where.dli_fname);

  printf("context symbol: rc=%d\n",
         TVMFFIEnvModRegisterContextSymbol("__client_ctx_value", (void*)0x77));
  TVMFFIObjectHandle load = Global("ffi.ModuleLoadFromFile");
  TVMFFIAny path = Raw(argv[1]);
  TVMFFIAny m = Call("load", load, &path, 1);
  module = m.v_obj;
  TVMFFIAny missing = Raw("/nonexistent/libmissing.so");
  TVMFFIAny r = None();
  int rc = TVMFFIFunctionCall(load, &missing, 1, &r);
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("load missing -> rc=%d error=%d\n", rc, err != NULL);
  TVMFFIObjectDecRef(err);
  TVMFFIObjectDecRef(load);
  {
    TVMFFIAny args[3] = {Obj(module), Raw("no_such_function"), Bool(1)};
    Call("get absent function", Global("ffi.ModuleGetFunction"), args, 3);
  }

  TVMFFIAny a[4];
  CallFn("ctx_value", a, 0);
  const int64_t edges[] = {0, -1, INT64_MAX, INT64_MIN, INT64_MIN + 1};
  for (int i = 0; i < 5; ++i) {
    a[0] = Int(edges[i]);
    CallFn("echo_int", a, 1);
  }
  a[0] = Raw("not an int");
  CallFn("echo_int", a, 1);
  CallFn("echo_int", a, 0);
  a[0] = Float(0.1);
  a[1] = Float(0.2);
  CallFn("add_float", a, 2);
  a[0] = Int(3); /* an int where a float is expected */
  CallFn("add_float", a, 2);
  a[0] = Bool(1);
  CallFn("negate", a, 1);
  a[0] = None();
  a[0].type_index = kTVMFFIOpaquePtr;
  a[0].v_ptr = (void*)0x1000;
  a[1] = Int(24);
  CallFn("ptr_plus", a, 2);
  a[0] = None();
  a[0].type_index = kTVMFFIDataType;
  a[0].v_dtype.code = kDLFloat;
  a[0].v_dtype.bits = 16;
  a[0].v_dtype.lanes = 1;
  CallFn("dtype_wider", a, 1);
  a[0] = Raw("bfloat16x4"); /* a string where a dtype is expected: parsed by the runtime */
  CallFn("dtype_wider", a, 1);
  a[0] = Raw("not_a_dtype");
  r = CallFn("dtype_wider", a, 1);
  a[0] = None();
  a[0].type_index = kTVMFFIDevice;
  a[0].v_device.device_type = kDLCUDA;
  a[0].v_device.device_id = 2;
  CallFn("device_next", a, 1);

  a[0] = Str("ab", 2, 0);
  a[1] = Str("cdefghijkl", 10, 0);
  r = CallFn("str_concat", a, 2);
  Release(&a[0]);
  Release(&a[1]);
  Release(&r);
  a[0] = Raw("raw ");
  a[1] = Raw("C strings");
  r = CallFn("str_concat", a, 2);
  Release(&r);
  a[0] = Str("nul\0inside", 10, 0);
  CallFn("str_len", a, 1);
  Release(&a[0]);
  a[0] = Str("\x01\x02\x00\x03", 4, 1);
  r = CallFn("bytes_rev", a, 1);
  Release(&a[0]);
  Release(&r);
  a[0] = Str("0123456789abcdef", 16, 1);
  r = CallFn("bytes_rev", a, 1);
  Release(&a[0]);
  Release(&r);

  TVMFFIAny dims[3] = {Int(2), Int(3), Int(4)};
  TVMFFIObjectHandle mk_shape = Global("ffi.Shape");
  TVMFFIAny shape = Call("ffi.Shape", mk_shape, dims, 3);
  CallFn("shape_sum", &shape, 1);
  a[0] = Int(4);
  r = CallFn("make_shape", a, 1);
  Release(&r);

  TVMFFIObjectHandle mk_array = Global("ffi.Array");
  TVMFFIAny arr = Call("ffi.Array", mk_array, dims, 3);
  CallFn("array_sum", &arr, 1);
  Print(&arr);
  printf(" (unchanged after the callee's push_back)\n");
  Release(&arr);
  TVMFFIAny strs[2] = {Raw("x"), Raw("a longer string")};
  arr = Call("ffi.Array", mk_array, strs, 2);
  r = CallFn("array_join", &arr, 1);
  Release(&r);
  Release(&arr);
  a[0] = Int(3);
  r = CallFn("make_strs", a, 1);
  {
    TVMFFIAny gi[2] = {r, Int(2)};
    TVMFFIAny item =
        Call("ffi.ArrayGetItem of the library's array", Global("ffi.ArrayGetItem"), gi, 2);
    Release(&item);
    Call("ffi.ArraySize of the library's array", Global("ffi.ArraySize"), &r, 1);
  }
  Release(&r);
  TVMFFIAny lst = Call("ffi.List", Global("ffi.List"), dims, 3);
  CallFn("list_sum", &lst, 1);
  Print(&lst);
  printf(" (the callee appended)\n");
  Release(&lst);
  a[0] = Int(5);
  r = CallFn("make_list", a, 1);
  {
    TVMFFIAny gi[2] = {r, Int(4)};
    Call("ffi.ListGetItem of the library's list", Global("ffi.ListGetItem"), gi, 2);
  }
  Release(&r);

  a[0] = None();
  a[1] = Int(9);
  CallFn("opt_or", a, 2);
  a[0] = Int(4);
  CallFn("opt_or", a, 2);
  a[0] = Int(12);
  CallFn("variant_desc", a, 1);
  a[0] = Raw("twelve");
  CallFn("variant_desc", a, 1);
  a[0] = Float(1.5);
  CallFn("variant_desc", a, 1);

  TVMFFIObjectHandle cb = NULL;
  TVMFFIFunctionCreate(NULL, Times3, NULL, &cb);
  a[0] = Obj(cb);
  a[1] = Int(5);
  CallFn("call_cb", a, 2);
  a[1] = Int(13);
  CallFn("call_cb", a, 2);
  TVMFFIObjectDecRef(cb);
  a[0] = Int(100);
  TVMFFIAny adder = CallFn("make_adder", a, 1);
  a[0] = Int(1);
  Call("the library's closure", adder.v_obj, a, 1);
  Release(&adder);

  float data[6] = {1, 2, 3, 4, 5, 6.5f};
  int64_t tshape[2] = {2, 3};
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = tshape;
  a[0] = None();
  a[0].type_index = kTVMFFIDLTensorPtr;
  a[0].v_ptr = &t;
  CallFn("tensor_sum", a, 1);
  DLManagedTensorVersioned managed;
  memset(&managed, 0, sizeof managed);
  managed.version.major = DLPACK_MAJOR_VERSION;
  managed.dl_tensor = t;
  managed.deleter = ManagedDelete;
  TVMFFIObjectHandle tobj = NULL;
  TVMFFITensorFromDLPackVersioned(&managed, 0, 0, &tobj);
  a[0] = Obj(tobj);
  CallFn("tensor_sum", a, 1);
  r = CallFn("tensor_keep", a, 1);
  printf("kept the same object: %d\n", r.v_obj == tobj);
  Release(&r);
  TVMFFIObjectDecRef(tobj);
  printf("tensor released: deleted=%d\n", deleted);
  TVMFFIEnvSetDLPackManagedTensorAllocator(Alloc, 0, NULL);
  TVMFFIAny small_dims[2] = {Int(2), Int(2)};
  TVMFFIAny s2 = Call("ffi.Shape", mk_shape, small_dims, 2);
  r = CallFn("tensor_alloc", &s2, 1);
  Release(&r);
  printf("allocated tensor released: deleted=%d\n", deleted);
  Release(&s2);

  a[0] = Raw("wrong");
  CallFn("throw_value", a, 1);
  a[0] = Int(-1);
  CallFn("icheck_positive", a, 1);
  a[0] = Int(kDLCUDA);
  a[1] = Int(3);
  CallFn("get_stream", a, 2);
  TVMFFIEnvSetStream(kDLCUDA, 3, (void*)0x5000, NULL);
  CallFn("get_stream", a, 2);

  a[0] = Raw("client.mul");
  a[1] = Int(6);
  CallFn("call_global", a, 2);
  TVMFFIAny mul_args[2] = {Int(6), Int(7)};
  Call("client.mul from the driver", Global("client.mul"), mul_args, 2);
  a[0] = Raw("client.nothing");
  CallFn("call_global", a, 2);
  a[0] = Raw("client.mul");
  CallFn("from_imports", a, 2);
  a[0] = Raw("client.nothing");
  CallFn("from_imports", a, 2);

  a[0] = Obj(module);
  a[1] = Raw("echo_int");
  a[2] = Int(41);
  CallFn("call_mod", a, 3);
  a[1] = Raw("missing");
  CallFn("call_mod", a, 3);
  a[1] = Raw("echo_int");
  a[2] = Bool(0);
  CallFn("mod_query", a, 3);
  a[1] = Raw("missing");
  CallFn("mod_query", a, 3);
  {
    TVMFFIAny kind_args[1] = {Obj(module)};
    Call("ffi.ModuleGetKind", Global("ffi.ModuleGetKind"), kind_args, 1);
  }

  a[0] = Int(3);
  a[1] = Int(-4);
  TVMFFIAny point = CallFn("make_point", a, 2);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(point.type_index);
  printf("point type: %.*s depth=%d fields=%d methods=%d\n", (int)info->type_key.size,
         info->type_key.data, info->type_depth, info->num_fields, info->num_methods);
  for (int i = 0; i < info->num_fields; ++i) {
    const TVMFFIFieldInfo* f = &info->fields[i];
    TVMFFIAny v = None();
    f->getter((char*)point.v_obj + f->offset, &v);
    printf("  field %.*s at %lld: ", (int)f->name.size, f->name.data, (long long)f->offset);
    Print(&v);
    printf("\n");
  }
  for (int i = 0; i < info->num_methods; ++i) {
    const TVMFFIMethodInfo* mi = &info->methods[i];
    printf("  method %.*s: ", (int)mi->name.size, mi->name.data);
    TVMFFIAny self = point;
    r = Call("call", mi->method.v_obj, &self, 1);
  }
  TVMFFIByteArray init_name = {"__ffi_init__", 12};
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&init_name);
  TVMFFIAny init = col->data[point.type_index - col->begin_index];
  a[0] = Int(10);
  a[1] = Int(20);
  TVMFFIAny p2 = Call("__ffi_init__", init.v_obj, a, 2);
  CallFn("point_y", &p2, 1);
  Release(&p2);
  Release(&point);
  a[0] = Obj(module);
  CallFn("point_y", a, 1);

  Release(&shape);
  TVMFFIObjectDecRef(mk_shape);
  TVMFFIObjectDecRef(mk_array);
  /* Every libtvm_ffi.so mapped into the process (the library's DT_NEEDED included). */
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096], last[4096] = "";
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    char* name = strchr(line, '/');
    if (name == NULL || strstr(name, "libtvm_ffi.so") == NULL || strcmp(name, last) == 0) continue;
    strcpy(last, name);
    fprintf(stderr, "mapped: %s", name);
  }
  if (maps != NULL) fclose(maps);
  Maps();
  Release(&m);
  printf("done\n");
  return 0;
}
