/*
 * Where our runtime deliberately differs from apache-tvm-ffi's (c_api_driver.c runs these
 * only against ours): it refuses a type registration that disagrees with the first one
 * instead of keeping either silently, answers an unregistered type index with a placeholder
 * instead of ending the process, names the string in a bad dtype's message, scopes
 * streams to call frames, and refuses to read a map iterator past its entries (apache reads
 * whatever memory follows) or to write a Map through the Dict globals (apache writes a copy).
 */
#include "../../../src/lib/frame_api.h"

static TVMFFIStreamHandle ProviderStream(void* ctx, int32_t device_type, int32_t device_id) {
  return (char*)ctx + device_type * 100 + device_id;
}

/* Calls a map iterator functor with `command` and prints the outcome. */
static void Step(const char* what, TVMFFIAny* it, int64_t command) {
  TVMFFIAny cmd = Int(command), r = None();
  int rc = TVMFFIFunctionCall(it->v_obj, &cmd, 1, &r);
  if (rc != 0) {
    PrintError(what, rc, 1);
    return;
  }
  printf("%s: type %d value %lld\n", what, r.type_index, (long long)r.v_int64);
  Release(&r);
}

static void MapsOursOnly(void) {
  int rc = 0;
  TVMFFIAny empty = CallGlobal("ffi.Dict", NULL, 0, &rc);
  TVMFFIAny it = CallGlobal("ffi.DictForwardIterFunctor", &empty, 1, &rc);
  Step("empty dict: key", &it, 0);
  Step("empty dict: advance", &it, 2);
  Step("unknown command", &it, 3);
  Release(&it);
  TVMFFIAny kv[4] = {Int(1), Int(10), Int(2), Int(20)};
  TVMFFIAny d = CallGlobal("ffi.Dict", kv, 4, &rc);
  it = CallGlobal("ffi.DictForwardIterFunctor", &d, 1, &rc);
  Step("dict: first value", &it, 1);
  CallGlobal("ffi.DictClear", &d, 1, &rc);
  Step("dict cleared while iterated: value", &it, 1);
  Step("dict cleared while iterated: advance", &it, 2);
  Release(&it);
  Release(&d);
  TVMFFIAny m = CallGlobal("ffi.Map", kv, 4, &rc);
  TVMFFIAny set[3] = {m, Int(3), Int(30)};
  CallGlobal("ffi.DictSetItem", set, 3, &rc);
  PrintError("ffi.DictSetItem on a Map", rc, 1);
  Release(&m);
  Release(&empty);
}

static void OursOnly(void) {
  MapsOursOnly();
  /* Looked up at run time: the driver also runs (without this part) against apache's runtime. */
  int (*PushFrame)(const TVMFFICubinStreamProvider*) =
      (int (*)(const TVMFFICubinStreamProvider*))dlsym(RTLD_DEFAULT, "TVMFFICubinEnvPushFrame");
  int (*PopFrame)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "TVMFFICubinEnvPopFrame");
  TVMFFIByteArray a = BA("rt_test.A"), e = BA("rt_test.E");
  int32_t ia = TVMFFITypeGetOrAllocIndex(&a, -1, 1, 0, 0, -2);
  int32_t ie = TVMFFITypeGetOrAllocIndex(&e, -1, 1, 0, 0, -2);
  printf("re-register with another parent: %d\n", TVMFFITypeGetOrAllocIndex(&e, -1, 2, 0, 0, ia));
  PrintError("  its error", -1, 1);
  TVMFFIFieldInfo fi;
  memset(&fi, 0, sizeof fi);
  TVMFFIMethodInfo mi;
  memset(&mi, 0, sizeof mi);
  TVMFFITypeMetadata md48 = {{"", 0}, NULL, 48, kTVMFFISEqHashKindTreeNode};
  PrintError("registration with that -1", TVMFFITypeRegisterMetadata(-1, &md48), 1);
  PrintError("same size again", TVMFFITypeRegisterMetadata(ie, &md48), 1);
  TVMFFITypeMetadata md56 = md48;
  md56.total_size = 56;
  PrintError("another size", TVMFFITypeRegisterMetadata(ie, &md56), 1);
  fi.name = BA("x");
  fi.size = 8;
  fi.offset = 24;
  PrintError("same field again", TVMFFITypeRegisterField(ie, &fi), 1);
  fi.offset = 32;
  PrintError("field moved", TVMFFITypeRegisterField(ie, &fi), 1);
  PrintError("field on a value type", TVMFFITypeRegisterField(kTVMFFIInt, &fi), 1);

  TVMFFIByteArray nope = BA("rt_test.nope");
  int32_t out = 0;
  PrintError("key to index absent", TVMFFITypeKeyToIndex(&nope, &out), 1);

  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(9999);
  printf("unregistered index: key=%.*s depth=%d\n", (int)t->type_key.size, t->type_key.data,
         t->type_depth);

  TVMFFIByteArray bad = BA("float33x");
  DLDataType dt;
  PrintError("bad dtype", TVMFFIDataTypeFromString(&bad, &dt), 1);
  TVMFFIByteArray name = BA("rt_test.dup");
  TVMFFIAny f = CallGlobal("ffi.FunctionListGlobalNamesFunctor", NULL, 0, &(int){0});
  TVMFFIFunctionSetGlobal(&name, f.v_obj, 0);
  PrintError("duplicate global", TVMFFIFunctionSetGlobal(&name, f.v_obj, 0), 1);
  Release(&f);

  char base[1000];
  TVMFFICubinStreamProvider provider = {base, ProviderStream};
  TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x10, NULL);
  PushFrame(&provider);
  printf("frame: from provider=%d\n", TVMFFIEnvGetStream(kDLCUDA, 1) == base + 201);
  TVMFFIStreamHandle old = NULL;
  TVMFFIEnvSetStream(kDLCUDA, 1, (void*)0x20, &old);
  printf("frame: explicit wins=%d old was provider's=%d\n",
         TVMFFIEnvGetStream(kDLCUDA, 1) == (void*)0x20, old == base + 201);
  PushFrame(NULL);
  printf("inner frame without provider: %p\n", TVMFFIEnvGetStream(kDLCUDA, 0));
  PopFrame();
  PopFrame();
  printf("after the frame: %p %p\n", TVMFFIEnvGetStream(kDLCUDA, 0),
         TVMFFIEnvGetStream(kDLCUDA, 1));
  PrintError("pop without a frame", PopFrame(), 1);
  /* Frames nested past the inline ones: each answers from its own provider; a stream set
   * inside the deepest frame is forgotten with it; the frame below still asks its provider. */
  static char deep[200][8];
  static TVMFFICubinStreamProvider deep_providers[200];
  int deep_ok = 1;
  for (int i = 0; i < 200; ++i) {
    deep_providers[i] = (TVMFFICubinStreamProvider){deep[i], ProviderStream};
    deep_ok &= PushFrame(&deep_providers[i]) == 0;
    deep_ok &= TVMFFIEnvGetStream(kDLCUDA, 0) == deep[i] + 200;
  }
  TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x30, NULL);
  deep_ok &= TVMFFIEnvGetStream(kDLCUDA, 0) == (void*)0x30;
  for (int i = 199; i >= 0; --i) {
    deep_ok &= PopFrame() == 0;
    if (i > 0) deep_ok &= TVMFFIEnvGetStream(kDLCUDA, 0) == deep[i - 1] + 200;
  }
  printf("200 nested frames: %d, after them: %p\n", deep_ok, TVMFFIEnvGetStream(kDLCUDA, 0));
  /* The inline push and pop the Python core uses, mixed with the runtime's entries on the same
   * stack: past the inline frames, with streams set inside two deep frames (popped by the
   * runtime, which forgets them), and inline pops below them. */
  TVMFFICubinFrameStack* (*ThreadFrames)(void) =
      (TVMFFICubinFrameStack * (*)(void)) dlsym(RTLD_DEFAULT, "TVMFFICubinEnvThreadFrames");
  TVMFFICubinFrameStack* fs = ThreadFrames();
  int mixed_ok = fs == ThreadFrames() && fs->depth == 0;
  for (int i = 0; i < 40; ++i) {
    mixed_ok &= (i % 3 == 0 ? PushFrame(&deep_providers[i])
                            : TVMFFICubinFramePush(fs, &deep_providers[i], PushFrame)) == 0;
    mixed_ok &= fs->depth == (uint32_t)i + 1 && TVMFFIEnvGetStream(kDLCUDA, 0) == deep[i] + 200;
    if (i == 36 || i == 38) TVMFFIEnvSetStream(kDLCUDA, 0, (void*)(intptr_t)(0x1000 + i), NULL);
  }
  for (int i = 39; i >= 0; --i) {
    const void* want = i == 36 || i == 38 ? (void*)(intptr_t)(0x1000 + i) : (void*)(deep[i] + 200);
    mixed_ok &= TVMFFIEnvGetStream(kDLCUDA, 0) == want;
    mixed_ok &= (i % 2 == 0 ? PopFrame() : TVMFFICubinFramePop(fs, PopFrame)) == 0;
  }
  printf("inline frames: layout %u, %d, depth after %u: %p\n", fs->layout, mixed_ok, fs->depth,
         TVMFFIEnvGetStream(kDLCUDA, 0));
  PrintError("inline pop without a frame", TVMFFICubinFramePop(fs, PopFrame), 1);
  static void* handle = NULL;
  PrintError("init once to NULL", TVMFFIHandleInitOnce(&handle, NullInit), 1);
}
