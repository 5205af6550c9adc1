/*
 * Exercises the runtime's C functions with nothing but c_api.h and prints what it sees, one
 * fact a line. tests/abi/test_runtime_c_api.py runs it against our libtvm_ffi.so and against
 * apache-tvm-ffi's and compares the two outputs; `ours` as the first argument adds the
 * checks where our runtime deliberately differs (printed after a line "-- ours").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

static TVMFFIByteArray BA(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

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

/* The text of a str/bytes value, small or object. */
static TVMFFIByteArray Text(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFISmallStr || a->type_index == kTVMFFISmallBytes) {
    TVMFFIByteArray b = {a->v_bytes, a->small_str_len};
    return b;
  }
  return *(TVMFFIByteArray*)((char*)a->v_obj + sizeof(TVMFFIObject));
}

static int IsStr(const TVMFFIAny* a) {
  return a->type_index == kTVMFFISmallStr || a->type_index == kTVMFFIStr;
}

static void Release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(a->v_obj);
}

/* The error in the slot as "Kind: message" (message only when with_message). */
static void PrintError(const char* what, int rc, int with_message) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) {
    printf("%s: rc=%d no error\n", what, rc);
    return;
  }
  TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
  printf("%s: rc=%d %.*s", what, rc, (int)c->kind.size, c->kind.data);
  if (with_message) printf(": %.*s", (int)c->message.size, c->message.data);
  printf("\n");
  TVMFFIObjectDecRef(err);
}

static int opaque_deleted = 0;
static void OpaqueDelete(void* handle) { opaque_deleted += *(int*)handle; }

static uint64_t Count(void* obj) { return ((TVMFFIObject*)obj)->combined_ref_count; }

static int AddOne(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one wants one int");
    return -1;
  }
  *result = Int(args[0].v_int64 + *(int64_t*)self);
  return 0;
}

static int self_deleted = 0;
static void SelfDelete(void* self) { self_deleted += (int)*(int64_t*)self; }

static TVMFFIAny CallGlobal(const char* name, TVMFFIAny* args, int n, int* rc) {
  TVMFFIByteArray b = BA(name);
  TVMFFIObjectHandle f = NULL;
  TVMFFIFunctionGetGlobal(&b, &f);
  TVMFFIAny r = None();
  if (f == NULL) {
    printf("global %s: absent\n", name);
    *rc = -3;
    return r;
  }
  *rc = TVMFFIFunctionCall(f, args, n, &r);
  TVMFFIObjectDecRef(f);
  return r;
}

static int managed_deleted = 0;
static void ManagedDelete(DLManagedTensorVersioned* self) {
  managed_deleted += 1;
  (void)self;
}

static int AllocTensor(DLTensor* proto, DLManagedTensorVersioned** out, void* ctx,
                       void (*set_error)(void*, const char*, const char*)) {
  static int64_t shape[2];
  static float data[64];
  static DLManagedTensorVersioned m;
  if (proto->ndim > 2) {
    set_error(ctx, "ValueError", "AllocTensor: at most 2 dims");
    return -1;
  }
  memset(&m, 0, sizeof m);
  m.version.major = DLPACK_MAJOR_VERSION;
  m.dl_tensor = *proto;
  memcpy(shape, proto->shape, sizeof(int64_t) * proto->ndim);
  m.dl_tensor.shape = shape;
  m.dl_tensor.strides = NULL;
  m.dl_tensor.data = data;
  m.deleter = ManagedDelete;
  *out = &m;
  return 0;
}

static void Types(void) {
  for (int i = 0; i < kTVMFFIStaticObjectEnd; ++i) {
    if (i > kTVMFFIUnchanged && i < kTVMFFIStaticObjectBegin) continue;
    const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(i);
    printf("type %d: key=%.*s depth=%d", t->type_index, (int)t->type_key.size, t->type_key.data,
           t->type_depth);
    for (int d = 0; d < t->type_depth; ++d)
      printf(" ancestor%d=%d", d, t->type_ancestors[d]->type_index);
    printf("\n");
  }
  TVMFFIByteArray a = BA("rt_test.A"), b = BA("rt_test.B"), c = BA("rt_test.C"),
                  d = BA("rt_test.D"), e = BA("rt_test.E"), s = BA("ffi.String");
  printf("query absent: %d\n", TVMFFITypeGetOrAllocIndex(&a, -1, 1, 0, 0, -2));
  int32_t ia = TVMFFITypeGetOrAllocIndex(&a, -1, 1, 2, 1, kTVMFFIObject);
  printf("A dynamic: %d\n", ia >= kTVMFFIDynObjectBegin);
  printf("A again: %d query: %d\n", TVMFFITypeGetOrAllocIndex(&a, -1, 1, 2, 1, kTVMFFIObject) - ia,
         TVMFFITypeGetOrAllocIndex(&a, -1, 1, 0, 0, -2) - ia);
  int32_t ib = TVMFFITypeGetOrAllocIndex(&b, -1, 2, 0, 0, ia);
  int32_t ic = TVMFFITypeGetOrAllocIndex(&c, -1, 2, 0, 0, ia);
  int32_t id = TVMFFITypeGetOrAllocIndex(&d, -1, 2, 0, 0, ia);
  int32_t ie = TVMFFITypeGetOrAllocIndex(&e, -1, 1, 0, 0, kTVMFFIObject);
  printf("children in slots: B=A+%d C=A+%d overflow D=A+%d next E=A+%d\n", ib - ia, ic - ia,
         id - ia, ie - ia);
  const TVMFFITypeInfo* tb = TVMFFIGetTypeInfo(ib);
  printf("B: depth=%d ancestors=%d,%d\n", tb->type_depth, tb->type_ancestors[0]->type_index,
         tb->type_ancestors[1]->type_index - ia);
  printf("static again: %d\n", TVMFFITypeGetOrAllocIndex(&s, kTVMFFIStr, 1, 0, 0, kTVMFFIObject));
  int32_t out = -7;
  int rc = TVMFFITypeKeyToIndex(&c, &out);
  printf("key to index: rc=%d index=A+%d\n", rc, out - ia);
  TVMFFIByteArray nope = BA("rt_test.nope");
  /* apache answers InternalError, ours KeyError: the kind is checked in ours_only.h */
  rc = TVMFFITypeKeyToIndex(&nope, &out);
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("key to index absent: rc=%d error=%d\n", rc, err != NULL);
  TVMFFIObjectDecRef(err);

  TVMFFITypeMetadata md = {{"doc", 3}, NULL, 48, kTVMFFISEqHashKindTreeNode};
  printf("metadata: rc=%d", TVMFFITypeRegisterMetadata(ie, &md));
  printf(" total=%d\n", TVMFFIGetTypeInfo(ie)->metadata->total_size);
  TVMFFIFieldInfo fi;
  memset(&fi, 0, sizeof fi);
  fi.name = BA("x");
  fi.size = 8;
  fi.alignment = 8;
  fi.offset = 24;
  fi.field_static_type_index = kTVMFFIInt;
  printf("field: rc=%d", TVMFFITypeRegisterField(ie, &fi));
  const TVMFFITypeInfo* ti_e = TVMFFIGetTypeInfo(ie);
  printf(" num=%d name=%.*s offset=%lld\n", ti_e->num_fields, (int)ti_e->fields[0].name.size,
         ti_e->fields[0].name.data, (long long)ti_e->fields[0].offset);
  TVMFFIAny attr = Int(7);
  TVMFFIByteArray an = BA("rt_test_attr");
  printf("attr: rc=%d", TVMFFITypeRegisterAttr(ie, &an, &attr));
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&an);
  const TVMFFIAny* cell = &col->data[ie - col->begin_index];
  printf(" value=%lld other=%d\n", (long long)cell->v_int64,
         ib - col->begin_index < col->size ? col->data[ib - col->begin_index].type_index : 0);
  TVMFFIByteArray none_attr = BA("rt_test_no_attr");
  printf("absent column: %s\n", TVMFFIGetTypeAttrColumn(&none_attr) == NULL ? "NULL" : "?");
  /* Type index None only makes the column exist (what EnsureTypeAttrColumn asks for). */
  TVMFFIAny none = None();
  TVMFFIByteArray ensured = BA("rt_test_ensured");
  rc = TVMFFITypeRegisterAttr(kTVMFFINone, &ensured, &none);
  col = TVMFFIGetTypeAttrColumn(&ensured);
  printf("ensured column: rc=%d exists=%d size=%d\n", rc, col != NULL, col ? col->size : -1);
  /* The columns a runtime has from the start: libraries' inline code needs them to exist. */
  const char* builtin[] = {"__any_equal__",
                           "__any_hash__",
                           "__ffi_convert__",
                           "__ffi_enum__",
                           "__ffi_init__",
                           "__ffi_new__",
                           "__ffi_repr__",
                           "__ffi_shallow_copy__",
                           "__ffi_type_final__",
                           "__s_equal__",
                           "__s_hash__",
                           "__s_mutate__",
                           "__s_visit__",
                           "__data_to_json__",
                           "__data_from_json__",
                           "__ffi_eq__",
                           "__ffi_hash__",
                           "__ffi_compare__",
                           "__s_maybe_inplace_mutate__",
                           NULL};
  for (int i = 0; builtin[i]; ++i) {
    TVMFFIByteArray b = BA(builtin[i]);
    printf("column %s: %s\n", builtin[i], TVMFFIGetTypeAttrColumn(&b) ? "exists" : "absent");
  }
}

static void Objects(void) {
  static int weight = 1;
  TVMFFIObjectHandle obj = NULL;
  printf("opaque: rc=%d",
         TVMFFIObjectCreateOpaque(&weight, kTVMFFIOpaquePyObject, OpaqueDelete, &obj));
  printf(" index=%d count=%llx handle_ok=%d\n", ((TVMFFIObject*)obj)->type_index,
         (unsigned long long)Count(obj),
         ((TVMFFIOpaqueObjectCell*)((char*)obj + 24))->handle == &weight);
  TVMFFIObjectIncRef(obj);
  printf("incref: count=%llx\n", (unsigned long long)Count(obj));
  TVMFFIObjectDecRef(obj);
  /* A weak reference, taken as inline code takes it: +1 in the high half. */
  ((TVMFFIObject*)obj)->combined_ref_count += (uint64_t)1 << 32;
  TVMFFIObjectDecRef(obj);
  printf("last strong with a weak: deleted=%d count=%llx\n", opaque_deleted,
         (unsigned long long)Count(obj));
  /* The weak holder lets go: it frees the memory through the deleter's weak flag. */
  ((TVMFFIObject*)obj)->combined_ref_count -= (uint64_t)1 << 32;
  ((TVMFFIObject*)obj)->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskWeak);
  TVMFFIObjectHandle obj2 = NULL;
  TVMFFIObjectCreateOpaque(&weight, kTVMFFIOpaquePyObject, OpaqueDelete, &obj2);
  TVMFFIObjectDecRef(obj2);
  printf("unique decref: deleted=%d\n", opaque_deleted);
  TVMFFICustomAllocator* alloc = TVMFFIGetCustomAllocator();
  printf("custom allocator: %s\n", alloc != NULL && alloc->allocate != NULL ? "set" : "none");
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  printf("version %u.%u.%u\n", v.major, v.minor, v.patch);
}

static void Strings(void) {
  const char* samples[] = {"", "abcdefg", "abcdefgh", NULL};
  for (int i = 0; samples[i]; ++i) {
    for (int bytes = 0; bytes < 2; ++bytes) {
      TVMFFIByteArray in = BA(samples[i]);
      TVMFFIAny out = None();
      int rc = bytes ? TVMFFIBytesFromByteArray(&in, &out) : TVMFFIStringFromByteArray(&in, &out);
      TVMFFIByteArray t = Text(&out);
      printf("%s '%s': rc=%d index=%d len=%d nul=%d", bytes ? "bytes" : "str", samples[i], rc,
             out.type_index, (int)t.size, t.data[t.size] == 0);
      if (out.type_index >= kTVMFFIStaticObjectBegin) {
        printf(" inline_at_40=%d", t.data == (char*)out.v_obj + 40);
      }
      printf("\n");
      Release(&out);
    }
  }
  TVMFFIByteArray nul = {"ab\0cdefghij", 11};
  TVMFFIAny out = None();
  TVMFFIStringFromByteArray(&nul, &out);
  TVMFFIByteArray t = Text(&out);
  printf("embedded NUL: len=%d same=%d\n", (int)t.size, memcmp(t.data, nul.data, 11) == 0);
  Release(&out);

  TVMFFIAny view = None();
  view.type_index = kTVMFFIRawStr;
  view.v_c_str = "a raw C string";
  TVMFFIAny owned = None();
  printf("raw str owned: rc=%d", TVMFFIAnyViewToOwnedAny(&view, &owned));
  t = Text(&owned);
  printf(" index=%d text=%.*s\n", owned.type_index, (int)t.size, t.data);
  Release(&owned);
  TVMFFIByteArray ba = {"xy", 2};
  view.type_index = kTVMFFIByteArrayPtr;
  view.v_ptr = &ba;
  TVMFFIAnyViewToOwnedAny(&view, &owned);
  printf("byte array owned: index=%d len=%u\n", owned.type_index, owned.small_str_len);
  TVMFFIAny big = None();
  TVMFFIByteArray ins = BA("sufficiently long");
  TVMFFIStringFromByteArray(&ins, &big);
  TVMFFIAnyViewToOwnedAny(&big, &owned);
  printf("object owned: same=%d count=%llx\n", owned.v_obj == big.v_obj,
         (unsigned long long)Count(big.v_obj));
  Release(&owned);
  TVMFFIObject* slot = big.v_obj;
  view.type_index = kTVMFFIObjectRValueRef;
  view.v_ptr = &slot;
  TVMFFIAnyViewToOwnedAny(&view, &owned);
  printf("rvalue ref owned: moved=%d count=%llx\n", slot == NULL && owned.v_obj == big.v_obj,
         (unsigned long long)Count(owned.v_obj));
  Release(&owned);

  const char* dtypes[] = {"int8",
                          "int16",
                          "int32",
                          "int64",
                          "uint8",
                          "uint1",
                          "int",
                          "uint",
                          "float",
                          "float16",
                          "float32",
                          "float64",
                          "bfloat16",
                          "bool",
                          "handle",
                          "void",
                          "",
                          "float8_e4m3fn",
                          "float8_e5m2",
                          "float8_e4m3fnuz",
                          "float8_e5m2fnuz",
                          "float8_e4m3",
                          "float8_e4m3b11fnuz",
                          "float8_e3m4",
                          "float8_e8m0fnu",
                          "float6_e2m3fn",
                          "float6_e3m2fn",
                          "float4_e2m1fn",
                          "float4_e2m1fnx2",
                          "float32x4",
                          "uint1x8",
                          "bfloat",
                          "int65",
                          NULL};
  for (int i = 0; dtypes[i]; ++i) {
    TVMFFIByteArray in = BA(dtypes[i]);
    DLDataType dt = {0, 0, 0};
    int rc = TVMFFIDataTypeFromString(&in, &dt);
    TVMFFIAny s = None();
    int rc2 = TVMFFIDataTypeToString(&dt, &s);
    t = Text(&s);
    printf("dtype '%s': rc=%d code=%d bits=%d lanes=%d back rc=%d str=%d '%.*s'\n", dtypes[i], rc,
           dt.code, dt.bits, dt.lanes, rc2, IsStr(&s), (int)t.size, t.data);
    Release(&s);
  }
  const char* bad[] = {"int32x-1", "int8x0", "foo", "Int32", "int32 ", "e4m3", NULL};
  for (int i = 0; bad[i]; ++i) {
    TVMFFIByteArray in = BA(bad[i]);
    DLDataType dt;
    char what[64];
    snprintf(what, sizeof what, "bad dtype '%s'", bad[i]);
    PrintError(what, TVMFFIDataTypeFromString(&in, &dt), 0);
  }
  DLDataType unknown = {99, 32, 1}; /* no DLPack code (5, complex, is named by ours only) */
  TVMFFIAny s = None();
  PrintError("dtype code 99", TVMFFIDataTypeToString(&unknown, &s), 0);

  int64_t words[3] = {-1, 0, 0}; /* 2^64 - 1, with a redundant zero word */
  TVMFFIByteArray wb = {(const char*)words, sizeof words};
  TVMFFIAny bi = None();
  printf("bigint: rc=%d index=%d", TVMFFIBigIntFromByteArray(&wb, &bi), bi.type_index);
  TVMFFIByteArray content = TVMFFIBigIntGetContentByteArray(&bi);
  printf(" words=%d w0=%lld w1=%lld\n", (int)(content.size / 8),
         (long long)((int64_t*)content.data)[0], (long long)((int64_t*)content.data)[1]);
  Release(&bi);
  int64_t small_words[2] = {-5, -1};
  TVMFFIByteArray sb = {(const char*)small_words, sizeof small_words};
  TVMFFIBigIntFromByteArray(&sb, &bi);
  printf("bigint small: index=%d value=%lld\n", bi.type_index, (long long)bi.v_int64);
  TVMFFIByteArray odd = {"abc", 3};
  PrintError("bigint 3 bytes", TVMFFIBigIntFromByteArray(&odd, &bi), 0);
}

static void Errors(void) {
  const char* parts[] = {"a", NULL, "b", "c"};
  TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 4);
  PrintError("parts", -1, 1);
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("empty slot: %s\n", err == NULL ? "NULL" : "?");
  TVMFFIErrorSetRaisedFromCStr("TypeError", "first");
  TVMFFIErrorSetRaisedFromCStr("KeyError", "second");
  PrintError("replaced", -1, 1);
  TVMFFIByteArray kind = BA("RuntimeError"), msg = BA("cause"), bt = BA("");
  TVMFFIObjectHandle cause = NULL, outer = NULL;
  printf("create: rc=%d", TVMFFIErrorCreate(&kind, &msg, &bt, &cause));
  printf(" index=%d\n", ((TVMFFIObject*)cause)->type_index);
  TVMFFIByteArray kind2 = BA("ValueError"), msg2 = BA("outer");
  TVMFFIErrorCreateWithCauseAndExtraContext(&kind2, &msg2, &bt, cause, NULL, &outer);
  TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)outer + 24);
  printf("with cause: same=%d cause count=%llx extra=%s\n", c->cause_chain == cause,
         (unsigned long long)Count(cause), c->extra_context == NULL ? "NULL" : "?");
  TVMFFIByteArray line = BA("L1\n");
  c->update_backtrace(outer, &line, kTVMFFIBacktraceUpdateModeAppend);
  c->update_backtrace(outer, &line, kTVMFFIBacktraceUpdateModeAppend);
  printf("appended: '%.*s'\n", (int)c->backtrace.size, c->backtrace.data);
  TVMFFIByteArray rep = BA("R\n");
  c->update_backtrace(outer, &rep, kTVMFFIBacktraceUpdateModeReplace);
  printf("replaced: '%.*s'\n", (int)c->backtrace.size, c->backtrace.data);
  TVMFFIObjectDecRef(cause);
  TVMFFIErrorSetRaised(outer); /* the slot adds a reference of its own */
  printf("slot holds a reference: count=%llx\n", (unsigned long long)Count(outer));
  TVMFFIObjectDecRef(outer);
  PrintError("set raised", -1, 1);
  const TVMFFIByteArray* b = TVMFFIBacktrace("file.cc", 12, "func", 0);
  const char* first = "  File \"file.cc\", line 12, in func\n";
  printf("backtrace starts with the site: %d\n",
         b->size >= strlen(first) && memcmp(b->data, first, strlen(first)) == 0);
}

static void Functions(void) {
  int64_t* self = malloc(sizeof(int64_t));
  *self = 10;
  TVMFFIObjectHandle f = NULL;
  printf("function create: rc=%d", TVMFFIFunctionCreate(self, AddOne, SelfDelete, &f));
  TVMFFIFunctionCell* cell = (TVMFFIFunctionCell*)((char*)f + 24);
  printf(" index=%d cpp_call=%s\n", ((TVMFFIObject*)f)->type_index,
         cell->cpp_call ? "set" : "NULL");
  TVMFFIAny arg = Int(5), r = None();
  int rc = TVMFFIFunctionCall(f, &arg, 1, &r);
  printf("call: rc=%d result=%lld\n", rc, (long long)r.v_int64);
  r = None();
  rc = cell->safe_call(f, &arg, 1, &r);
  printf("call through the cell: rc=%d result=%lld\n", rc, (long long)r.v_int64);
  PrintError("call with no args", TVMFFIFunctionCall(f, NULL, 0, &r), 1);
  TVMFFIByteArray name = BA("rt_test.add_ten");
  printf("set global: rc=%d\n", TVMFFIFunctionSetGlobal(&name, f, 0));
  PrintError("set global again", TVMFFIFunctionSetGlobal(&name, f, 0), 0);
  printf("override: rc=%d\n", TVMFFIFunctionSetGlobal(&name, f, 1));
  TVMFFIObjectHandle g = NULL;
  TVMFFIFunctionGetGlobal(&name, &g);
  printf("get global: same=%d\n", g == f);
  TVMFFIObjectDecRef(g);
  TVMFFIByteArray absent = BA("rt_test.absent");
  g = (void*)1;
  printf("get absent: rc=%d out=%s\n", TVMFFIFunctionGetGlobal(&absent, &g),
         g == NULL ? "NULL" : "?");
  TVMFFIMethodInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.name = BA("rt_test.from_method_info");
  mi.method.type_index = kTVMFFIFunction;
  mi.method.v_obj = f;
  printf("set from method info: rc=%d\n", TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 0));

  TVMFFIAny lister = CallGlobal("ffi.FunctionListGlobalNamesFunctor", NULL, 0, &rc);
  TVMFFIAny minus = Int(-1);
  TVMFFIAny count = None();
  TVMFFIFunctionCall(lister.v_obj, &minus, 1, &count);
  int found = 0;
  for (int64_t i = 0; i < count.v_int64; ++i) {
    TVMFFIAny idx = Int(i), n = None();
    TVMFFIFunctionCall(lister.v_obj, &idx, 1, &n);
    TVMFFIByteArray t = Text(&n);
    if (t.size == name.size && memcmp(t.data, name.data, t.size) == 0) found++;
    Release(&n);
  }
  printf("listed: rc=%d found=%d\n", rc, found);
  Release(&lister);
  TVMFFIAny nm = None();
  TVMFFIStringFromByteArray(&mi.name, &nm);
  TVMFFIAny removed = CallGlobal("ffi.FunctionRemoveGlobal", &nm, 1, &rc);
  printf("remove: rc=%d index=%d value=%lld\n", rc, removed.type_index, (long long)removed.v_int64);
  removed = CallGlobal("ffi.FunctionRemoveGlobal", &nm, 1, &rc);
  printf("remove again: value=%lld\n", (long long)removed.v_int64);
  Release(&nm);
  TVMFFIStringFromByteArray(&name, &nm);
  CallGlobal("ffi.FunctionRemoveGlobal", &nm, 1, &rc);
  Release(&nm);
  printf("function still alive: deleted=%d\n", self_deleted);
  TVMFFIObjectDecRef(f);
  printf("function released: deleted=%d\n", self_deleted);
}

static void Containers(void) {
  int rc;
  TVMFFIAny items[3] = {Int(1), None(), None()};
  items[1].type_index = kTVMFFIRawStr;
  items[1].v_c_str = "two";
  items[2].type_index = kTVMFFIFloat;
  items[2].v_float64 = 3.5;
  TVMFFIAny arr = CallGlobal("ffi.Array", items, 3, &rc);
  TVMFFISeqCell* cell = (TVMFFISeqCell*)((char*)arr.v_obj + 24);
  printf("array: rc=%d index=%d size=%lld inline_at_56=%d deleter=%s\n", rc, arr.type_index,
         (long long)cell->size, cell->data == (char*)arr.v_obj + 56,
         cell->data_deleter ? "set" : "NULL");
  TVMFFIAny* elems = (TVMFFIAny*)cell->data;
  printf("array items: %d %d(%s) %d\n", elems[0].type_index, elems[1].type_index,
         Text(&elems[1]).data, elems[2].type_index);
  TVMFFIAny ga[2] = {arr, Int(1)};
  TVMFFIAny item = CallGlobal("ffi.ArrayGetItem", ga, 2, &rc);
  printf("array get 1: rc=%d str=%d\n", rc, IsStr(&item));
  Release(&item);
  ga[1] = Int(3);
  item = CallGlobal("ffi.ArrayGetItem", ga, 2, &rc);
  PrintError("array get 3", rc, 0);
  TVMFFIAny size = CallGlobal("ffi.ArraySize", &arr, 1, &rc);
  printf("array size: %lld\n", (long long)size.v_int64);
  TVMFFIAny lst = CallGlobal("ffi.List", items, 3, &rc);
  cell = (TVMFFISeqCell*)((char*)lst.v_obj + 24);
  printf("list: rc=%d index=%d size=%lld deleter=%s\n", rc, lst.type_index, (long long)cell->size,
         cell->data_deleter ? "set" : "NULL");
  TVMFFIAny lg[2] = {lst, Int(2)};
  item = CallGlobal("ffi.ListGetItem", lg, 2, &rc);
  printf("list get 2: rc=%d float=%g\n", rc, item.v_float64);
  size = CallGlobal("ffi.ListSize", &lst, 1, &rc);
  printf("list size: %lld\n", (long long)size.v_int64);
  Release(&lst);
  Release(&arr);
  TVMFFIAny dims[3] = {Int(2), Int(3), Int(4)};
  TVMFFIAny shape = CallGlobal("ffi.Shape", dims, 3, &rc);
  TVMFFIShapeCell* sc = (TVMFFIShapeCell*)((char*)shape.v_obj + 24);
  printf("shape: rc=%d index=%d size=%d dims=%lld,%lld,%lld\n", rc, shape.type_index, (int)sc->size,
         (long long)sc->data[0], (long long)sc->data[1], (long long)sc->data[2]);
  Release(&shape);
  TVMFFIAny word = None();
  word.type_index = kTVMFFIRawStr;
  word.v_c_str = "made by ffi.String";
  TVMFFIAny str = CallGlobal("ffi.String", &word, 1, &rc);
  printf("ffi.String: rc=%d index=%d\n", rc, str.type_index);
  Release(&str);
}

static void Tensors(void) {
  static float data[6] = {1, 2, 3, 4, 5, 6};
  static int64_t shape[2] = {2, 3};
  static DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = DLPACK_MAJOR_VERSION;
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;
  m.deleter = ManagedDelete;
  TVMFFIObjectHandle t = NULL;
  int rc = TVMFFITensorFromDLPackVersioned(&m, 4, 1, &t);
  DLTensor* dl = (DLTensor*)((char*)t + 24);
  printf("tensor: rc=%d index=%d data_ok=%d ndim=%d shape=%lld,%lld strides=%lld,%lld\n", rc,
         ((TVMFFIObject*)t)->type_index, dl->data == data, dl->ndim, (long long)dl->shape[0],
         (long long)dl->shape[1], (long long)dl->strides[0], (long long)dl->strides[1]);
  DLManagedTensorVersioned* back = NULL;
  rc = TVMFFITensorToDLPackVersioned(t, &back);
  printf("to dlpack: rc=%d data_ok=%d count=%llx\n", rc, back->dl_tensor.data == data,
         (unsigned long long)Count(t));
  TVMFFIObjectDecRef(t);
  printf("object released, export alive: deleted=%d\n", managed_deleted);
  back->deleter(back);
  printf("export released: deleted=%d\n", managed_deleted);

  static int64_t strides[2] = {1, 2};
  m.dl_tensor.strides = strides;
  PrintError("not contiguous", TVMFFITensorFromDLPackVersioned(&m, 0, 1, &t), 0);
  m.dl_tensor.strides = NULL;
  m.dl_tensor.byte_offset = 2;
  PrintError("not aligned", TVMFFITensorFromDLPackVersioned(&m, 4, 0, &t), 0);
  printf("refused tensors not deleted: deleted=%d\n", managed_deleted);
  m.dl_tensor.byte_offset = 0;
  TVMFFITensorFromDLPackVersioned(&m, 0, 0, &t);
  DLTensor proto = *(DLTensor*)((char*)t + 24);
  int64_t vshape[1] = {6}, vstrides[1] = {1};
  proto.ndim = 1;
  proto.shape = vshape;
  proto.strides = vstrides;
  TVMFFIObjectHandle view = NULL;
  rc = TVMFFITensorCreateUnsafeView(t, &proto, &view);
  DLTensor* vd = (DLTensor*)((char*)view + 24);
  printf("view: rc=%d ndim=%d shape=%lld stride=%lld source count=%llx\n", rc, vd->ndim,
         (long long)vd->shape[0], (long long)vd->strides[0], (unsigned long long)Count(t));
  TVMFFIObjectDecRef(t);
  TVMFFIObjectDecRef(view);
  printf("view released: deleted=%d\n", managed_deleted);

  /* env */
  printf("stream unset: %p\n", TVMFFIEnvGetStream(kDLCUDA, 0));
  TVMFFIStreamHandle old = (void*)1;
  TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x1234, &old);
  printf("stream set: %p old=%p other device=%p\n", TVMFFIEnvGetStream(kDLCUDA, 0), old,
         TVMFFIEnvGetStream(kDLCUDA, 1));
  TVMFFIEnvSetStream(kDLCUDA, 0, NULL, NULL);
  PrintError("alloc without allocator", TVMFFIEnvTensorAlloc(&proto, &t), 0);
  DLPackManagedTensorAllocator prev = (void*)1;
  TVMFFIEnvSetDLPackManagedTensorAllocator(AllocTensor, 0, &prev);
  printf("allocator: prev=%s now=%d\n", prev == NULL ? "NULL" : "?",
         TVMFFIEnvGetDLPackManagedTensorAllocator() == AllocTensor);
  int64_t ashape[2] = {4, 5};
  DLTensor req = proto;
  req.ndim = 2;
  req.shape = ashape;
  rc = TVMFFIEnvTensorAlloc(&req, &t);
  dl = (DLTensor*)((char*)t + 24);
  printf("env alloc: rc=%d index=%d shape=%lld,%lld strides=%lld,%lld\n", rc,
         ((TVMFFIObject*)t)->type_index, (long long)dl->shape[0], (long long)dl->shape[1],
         (long long)dl->strides[0], (long long)dl->strides[1]);
  TVMFFIObjectDecRef(t);
  printf("env tensor released: deleted=%d\n", managed_deleted);
  req.ndim = 3;
  PrintError("env alloc refused", TVMFFIEnvTensorAlloc(&req, &t), 1);
  TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, NULL);
  printf("check signals: %d\n", TVMFFIEnvCheckSignals());
}

static int InitValue(void** result) {
  *result = (void*)0x42;
  return 0;
}
static int deinit_calls = 0;
static int Deinit(void* handle) {
  deinit_calls += handle == (void*)0x42;
  return 0;
}

static void Once(void) {
  static void* handle = NULL;
  TVMFFIHandleInitOnce(&handle, InitValue);
  printf("init once: %p\n", handle);
  TVMFFIHandleDeinitOnce(&handle, Deinit);
  TVMFFIHandleDeinitOnce(&handle, Deinit);
  printf("deinit once: handle=%p calls=%d\n", handle, deinit_calls);
}

static int signals_seen = 0;
static int PendingSignal(void) {
  signals_seen++;
  return -1;
}
static int NoSignal(void) {
  signals_seen++;
  return 0;
}

static int gil_held = 0;
static void* GilEnsure(void) {
  gil_held++;
  return (void*)0x6;
}
static void GilRelease(void* state) { gil_held -= state == (void*)0x6; }

static void* OtherThread(void* arg) {
  (void)arg;
  printf("other thread: stream=%p", TVMFFIEnvGetStream(kDLCUDA, 0));
  TVMFFIErrorSetRaisedFromCStr("ValueError", "raised in the other thread");
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf(" own error=%d\n", err != NULL);
  TVMFFIObjectDecRef(err);
  TVMFFIErrorSetRaisedFromCStr("ValueError", "left in the other thread's slot");
  return NULL;
}

/* Threads share one string and one function: counts stay exact, nothing is freed early. */
static TVMFFIObjectHandle shared_str = NULL, shared_fn = NULL;
static void* Hammer(void* arg) {
  long bad = 0;
  for (int i = 0; i < 20000; ++i) {
    TVMFFIObjectIncRef(shared_str);
    TVMFFIAny x = Int(i), r = None();
    if (TVMFFIFunctionCall(shared_fn, &x, 1, &r) != 0 || r.v_int64 != i + 10) bad++;
    TVMFFIByteArray text = BA("a string long enough to be an object");
    TVMFFIAny s = None();
    TVMFFIStringFromByteArray(&text, &s);
    Release(&s);
    TVMFFIObjectDecRef(shared_str);
  }
  *(long*)arg = bad;
  return NULL;
}

static void Concurrency(void) {
  TVMFFIByteArray text = BA("shared between the threads");
  TVMFFIAny s = None();
  TVMFFIStringFromByteArray(&text, &s);
  shared_str = s.v_obj;
  int64_t* self = malloc(sizeof(int64_t));
  *self = 10;
  TVMFFIFunctionCreate(self, AddOne, free, &shared_fn);
  pthread_t threads[4];
  long bad[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, Hammer, &bad[i]);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  printf("threads: wrong results=%ld count=%llx\n", bad[0] + bad[1] + bad[2] + bad[3],
         (unsigned long long)Count(shared_str));
  TVMFFIObjectDecRef(shared_str);
  TVMFFIObjectDecRef(shared_fn);
}

static int NullInit(void** result) {
  *result = NULL;
  return 0;
}

static void Environment(void) {
  /* The check runs under the frontend's lock (apache's runtime requires both functions). */
  TVMFFIEnvRegisterCAPI("PyGILState_Ensure", (void*)GilEnsure);
  TVMFFIEnvRegisterCAPI("PyGILState_Release", (void*)GilRelease);
  TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void*)PendingSignal);
  int rc = TVMFFIEnvCheckSignals();
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("pending signal: rc=%d seen=%d gil=%d slot=%s\n", rc, signals_seen, gil_held,
         err ? "error" : "empty");
  TVMFFIObjectDecRef(err);
  TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void*)NoSignal);
  rc = TVMFFIEnvCheckSignals();
  printf("no signal: rc=%d seen=%d\n", rc, signals_seen);
  TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", NULL);
  PrintError("unknown C API", TVMFFIEnvRegisterCAPI("NoSuchFunction", (void*)NoSignal), 0);

  TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x99, NULL);
  pthread_t t;
  pthread_create(&t, NULL, OtherThread, NULL);
  pthread_join(t, NULL);
  TVMFFIErrorMoveFromRaised(&err);
  printf("main thread: stream=%p slot=%s\n", TVMFFIEnvGetStream(kDLCUDA, 0),
         err ? "error" : "empty");
  TVMFFIEnvSetStream(kDLCUDA, 0, NULL, NULL);

  int rc1 = TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_sys_add", (void*)AddOne);
  int rc2 = TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_my_sub", (void*)AddOne);
  printf("system lib symbols: rc=%d,%d\n", rc1, rc2);
  TVMFFIAny prefix = None();
  prefix.type_index = kTVMFFIRawStr;
  prefix.v_c_str = "my_";
  const char* names[] = {"sys_add", "sub", "absent"};
  for (int with_prefix = 0; with_prefix < 2; ++with_prefix) {
    TVMFFIAny sys = CallGlobal("ffi.SystemLib", &prefix, with_prefix, &rc);
    for (int i = 0; i < 3; ++i) {
      TVMFFIAny args[3] = {sys, None(), None()};
      args[1].type_index = kTVMFFIRawStr;
      args[1].v_c_str = names[i];
      args[2].type_index = kTVMFFIBool;
      TVMFFIAny f = CallGlobal("ffi.ModuleGetFunction", args, 3, &rc);
      printf("system lib%s %s: rc=%d found=%d\n", with_prefix ? " my_" : "", names[i], rc,
             f.type_index == kTVMFFIFunction);
      Release(&f);
    }
    Release(&sys);
  }

  static void* handle = NULL;
  rc = TVMFFIHandleInitOnce(&handle, NullInit);
  PrintError("init once to NULL", rc, 0);
}

#include "ours_only.h"

int main(int argc, char** argv) {
  Dl_info info;
  if (dladdr((void*)TVMFFIGetVersion, &info) != 0) fprintf(stderr, "runtime: %s\n", info.dli_fname);
  Types();
  Objects();
  Strings();
  Errors();
  Functions();
  Containers();
  Tensors();
  Once();
  Environment();
  Concurrency();
  if (argc > 1 && strcmp(argv[1], "ours") == 0) {
    printf("-- ours\n");
    OursOnly();
  }
  return 0;
}
