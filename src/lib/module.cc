// The module API: what a library's code asks of its module (TVMFFIEnvModLookupFromImports),
// context and system-library symbols, and the C++ member functions of apache-tvm-ffi's
// ModuleObj that libraries built with its headers call.
#include "module.h"

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle library_ctx, const char* func_name,
                                  TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  // library_ctx is what the loader wrote into __tvm_ffi__library_ctx: our library module.
  auto* m = static_cast<LibraryModule*>(static_cast<ModuleBase*>(library_ctx));
  std::lock_guard<std::mutex> lock(m->import_mutex_);
  auto cached = m->import_cache_.find(func_name);
  if (cached != m->import_cache_.end()) {
    *out = cached->second;
    return 0;
  }
  TVMFFIAny name = MakeStr(func_name, false);
  TVMFFIObject* f = nullptr;
  int64_t n = 0;
  const TVMFFIAny* items = m->imports_ != nullptr ? SeqItems(m->imports_, &n) : nullptr;
  try {
    for (int64_t i = 0; i < n && f == nullptr; ++i) {
      f = FindFunction(FromHeader(items[i].v_obj), name, true);
    }
  } catch (...) {
    ReleaseValue(&name);
    throw;
  }
  ReleaseValue(&name);
  if (f == nullptr) {
    TVMFFIByteArray global{func_name, std::strlen(func_name)};
    TVMFFIObjectHandle g = nullptr;
    TVMFFIFunctionGetGlobal(&global, &g);
    f = Header(g);
  }
  if (f == nullptr) {
    Throw("RuntimeError", "function '" + std::string(func_name) +
                              "' is neither in the modules this library imports nor a global "
                              "function");
  }
  m->import_cache_.emplace(func_name, f);  // the module owns the reference; the caller borrows
  *out = f;
  TVM_FFI_RT_END();
}

int TVMFFIEnvModRegisterContextSymbol(const char* name, void* symbol) {
  TVM_FFI_RT_BEGIN();
  SystemLibRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.context_symbols.emplace_back(name, symbol);
  TVM_FFI_RT_END();
}

int TVMFFIEnvModRegisterSystemLibSymbol(const char* name, void* symbol) {
  TVM_FFI_RT_BEGIN();
  SystemLibRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.symbols[name] = symbol;
  TVM_FFI_RT_END();
}

}  // extern "C"

/*
 * The members of apache-tvm-ffi's tvm::ffi::ModuleObj that its headers call out of line
 * (Module::GetFunction(name, query_imports) and friends), under their mangled names. They are
 * written as plain functions with the Itanium C++ ABI's calling convention (x86-64): `this`
 * first, a class returned by value that is not trivially copyable (Optional<...>) through a
 * hidden pointer passed before `this` and returned again. None of them can fail, so no C++
 * exception is needed. The members that throw tvm::ffi::Error (Module::LoadFromFile,
 * Module::VisitContextSymbols) and ModuleObj::ImportModule with the vtable and typeinfo are
 * in cxx_module.cc, written with include/tvm/ffi's classes.
 */
namespace tvm_ffi_runtime {
namespace {

// The doc or metadata text of `name`, looking through imports when asked.
TVMFFIAny FindText(ModuleBase* m, const TVMFFIAny& name, bool query_imports, bool doc) {
  ValueRet r = doc ? m->GetFunctionDoc(name) : m->GetFunctionMetadata(name);
  if (r.value.type_index != kTVMFFINone || !query_imports || m->imports_ == nullptr) {
    TVMFFIAny found = r.value;
    r.value = NoneValue();
    return found;
  }
  int64_t n = 0;
  const TVMFFIAny* items = SeqItems(m->imports_, &n);
  for (int64_t i = 0; i < n; ++i) {
    TVMFFIAny t = FindText(FromHeader(items[i].v_obj), name, true, doc);
    if (t.type_index != kTVMFFINone) return t;
  }
  return NoneValue();
}

// "ffi.ModuleGetFunctionDoc" / "ffi.ModuleGetFunctionMetadata"(module, name, query_imports):
// the text, or None when the function has none (apache's Optional<str>).
TVMFFIAny TextGlobal(const char* fname, bool doc, const TVMFFIAny* a, int32_t n) {
  CheckArgCount(fname, n, 3);
  ModuleBase* m = ModuleArg(fname, a[0]);
  StrView(a[1], (std::string(fname) + ": name").c_str());
  return FindText(m, a[1], IntArg(fname, a, 2) != 0, doc);
}

const bool registered = [] {
  RegisterGlobalNative("ffi.ModuleGetFunctionDoc", [](const TVMFFIAny* a, int32_t n) {
    return TextGlobal("ffi.ModuleGetFunctionDoc", true, a, n);
  });
  RegisterGlobalNative("ffi.ModuleGetFunctionMetadata", [](const TVMFFIAny* a, int32_t n) {
    return TextGlobal("ffi.ModuleGetFunctionMetadata", false, a, n);
  });
  return true;
}();

}  // namespace

#define TVM_FFI_RT_CXX_EXPORT(mangled) __asm__(mangled) __attribute__((visibility("default")))

TVMFFIObject** ModuleObjGetFunction(TVMFFIObject** ret, ModuleBase* self, const TVMFFIAny* name,
                                    bool query_imports)
    TVM_FFI_RT_CXX_EXPORT("_ZN3tvm3ffi9ModuleObj11GetFunctionERKNS0_6StringEb");
TVMFFIObject** ModuleObjGetFunction(TVMFFIObject** ret, ModuleBase* self, const TVMFFIAny* name,
                                    bool query_imports) {
  try {
    *ret = FindFunction(self, *name, query_imports);
  } catch (...) {
    *ret = nullptr;  // out of memory wrapping the function: reported as absent
  }
  return ret;
}

bool ModuleObjImplementsFunction(ModuleBase* self, const TVMFFIAny* name, bool query_imports)
    TVM_FFI_RT_CXX_EXPORT("_ZN3tvm3ffi9ModuleObj18ImplementsFunctionERKNS0_6StringEb");
bool ModuleObjImplementsFunction(ModuleBase* self, const TVMFFIAny* name, bool query_imports) {
  if (self->ImplementsFunction(*name)) return true;
  if (!query_imports) return false;
  int64_t n = 0;
  const TVMFFIAny* items = SeqItems(self->imports_, &n);
  for (int64_t i = 0; i < n; ++i) {
    if (ModuleObjImplementsFunction(FromHeader(items[i].v_obj), name, true)) return true;
  }
  return false;
}

TVMFFIAny* ModuleObjGetFunctionDoc(TVMFFIAny* ret, ModuleBase* self, const TVMFFIAny* name,
                                   bool query_imports)
    TVM_FFI_RT_CXX_EXPORT("_ZN3tvm3ffi9ModuleObj14GetFunctionDocERKNS0_6StringEb");
TVMFFIAny* ModuleObjGetFunctionDoc(TVMFFIAny* ret, ModuleBase* self, const TVMFFIAny* name,
                                   bool query_imports) {
  *ret = FindText(self, *name, query_imports, true);
  return ret;
}

TVMFFIAny* ModuleObjGetFunctionMetadata(TVMFFIAny* ret, ModuleBase* self, const TVMFFIAny* name,
                                        bool query_imports)
    TVM_FFI_RT_CXX_EXPORT("_ZN3tvm3ffi9ModuleObj19GetFunctionMetadataERKNS0_6StringEb");
TVMFFIAny* ModuleObjGetFunctionMetadata(TVMFFIAny* ret, ModuleBase* self, const TVMFFIAny* name,
                                        bool query_imports) {
  *ret = FindText(self, *name, query_imports, false);
  return ret;
}

// The base class's ClearImports (a library's module class that does not override it calls
// this through its vtable): an empty import list.
void ModuleObjClearImports(ModuleBase* self)
    TVM_FFI_RT_CXX_EXPORT("_ZN3tvm3ffi9ModuleObj12ClearImportsEv");
void ModuleObjClearImports(ModuleBase* self) {
  TVMFFIAny empty = MakeArray(nullptr, 0);
  if (self->imports_ != nullptr) DecRef(self->imports_);
  self->imports_ = empty.v_obj;
}

#undef TVM_FFI_RT_CXX_EXPORT

}  // namespace tvm_ffi_runtime
