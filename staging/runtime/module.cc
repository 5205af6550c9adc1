// Modules: the library module (a shared library opened with dlopen), its loader globals, the
// imports a library reaches through __tvm_ffi__library_ctx, context symbols and the system
// library.
#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// What a virtual method returns where apache's ModuleObj returns Optional<Function>,
// Array<String> or another object reference: one pointer, released by the caller. The
// user-declared destructor makes the compiler return it through a hidden pointer, as it
// does for those classes.
struct ObjectRet {
  TVMFFIObject* obj = nullptr;
  ~ObjectRet() {
    if (obj != nullptr) DecRef(obj);
  }
};
// Where it returns Optional<String>, String or Bytes: one 16-byte value.
struct ValueRet {
  TVMFFIAny value = NoneValue();
  ~ValueRet() { ReleaseValue(&value); }
};

// An opened shared library (or the executable's system library). It is never closed: objects
// the library made (their deleters), closures it returned, global functions and types its
// initialisers registered all point into its code and may outlive every module of it.
struct Library {
  std::string path;
  void* handle = nullptr;  // NULL for the system library
  void* Symbol(const std::string& name) const;
};

struct SystemLibRegistry {
  std::mutex mutex;
  std::map<std::string, void*> symbols;
  std::vector<std::pair<std::string, void*>> context_symbols;
};

SystemLibRegistry& Registry() {
  static SystemLibRegistry* r = new SystemLibRegistry();  // never destroyed: see TypeTable
  return *r;
}

void* Library::Symbol(const std::string& name) const {
  if (handle != nullptr) return dlsym(handle, name.c_str());
  SystemLibRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.symbols.find(name);
  return it == r.symbols.end() ? nullptr : it->second;
}

/*
 * The layout of apache-tvm-ffi's ModuleObj, which libraries' inline code uses: the vtable at
 * 0, the object header at 8, imports_ (an Array) at 32, the import lookup cache (a Map) at 40.
 * The virtual methods come in apache's order; the ones we do not support answer "nothing"
 * (they cannot throw into another library's code).
 */
class ModuleBase {
 public:
  virtual const char* kind() const = 0;
  virtual int GetPropertyMask() const { return 0; }
  virtual ObjectRet GetFunction(const TVMFFIAny& name) = 0;
  virtual bool ImplementsFunction(const TVMFFIAny& name) {
    return GetFunction(name).obj != nullptr;
  }
  virtual ValueRet GetFunctionDoc(const TVMFFIAny&) { return ValueRet(); }
  virtual ValueRet GetFunctionMetadata(const TVMFFIAny&) { return ValueRet(); }
  virtual void WriteToFile(const TVMFFIAny&, const TVMFFIAny&) const {}
  virtual ObjectRet GetWriteFormats() const {
    ObjectRet r;
    r.obj = MakeArray(nullptr, 0).v_obj;
    return r;
  }
  virtual ValueRet SaveToBytes() const {
    ValueRet r;
    r.value = MakeStr("", true);
    return r;
  }
  virtual ValueRet InspectSource(const TVMFFIAny&) const {
    ValueRet r;
    r.value = MakeStr("", false);
    return r;
  }
  virtual void ImportModule(const TVMFFIObject* const& other);
  virtual void ClearImports() {
    if (imports_ != nullptr) DecRef(imports_);
    imports_ = nullptr;
  }

  TVMFFIObject header_;
  TVMFFIObject* imports_ = nullptr;       // ArrayObj of modules, or NULL
  TVMFFIObject* lookup_cache_ = nullptr;  // unused here; kept NULL for inline readers
};

ModuleBase* FromHeader(TVMFFIObject* h) {
  return reinterpret_cast<ModuleBase*>(reinterpret_cast<char*>(h) - sizeof(void*));
}

void ModuleBase::ImportModule(const TVMFFIObject* const& other) {
  // Apache passes `const Module&`: a reference to one object pointer.
  std::vector<TVMFFIAny> items;
  int64_t n = 0;
  if (imports_ != nullptr) {
    const TVMFFIAny* old = SeqItems(imports_, &n);
    items.assign(old, old + n);
  }
  items.push_back(ObjectValue(const_cast<TVMFFIObject*>(other)));
  TVMFFIObject* next = MakeArray(items.data(), static_cast<int32_t>(items.size())).v_obj;
  if (imports_ != nullptr) DecRef(imports_);
  imports_ = next;
}

// A function of a library: calls the library's symbol with a NULL handle and keeps the
// library open while the function lives.
struct LibraryFunction {
  TVMFFISafeCallType symbol;
  std::shared_ptr<Library> library;
};

int LibraryFunctionCall(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  return static_cast<LibraryFunction*>(self)->symbol(nullptr, args, n, result);
}

void LibraryFunctionDelete(void* self) { delete static_cast<LibraryFunction*>(self); }

class LibraryModule final : public ModuleBase {
 public:
  explicit LibraryModule(std::shared_ptr<Library> lib) : library_(std::move(lib)) {}
  const char* kind() const override { return "library"; }
  ObjectRet GetFunction(const TVMFFIAny& name) override {
    ObjectRet r;
    try {
      r.obj = Lookup(std::string(StrView(name, "function name")));
    } catch (...) {
      r.obj = nullptr;  // a bad name is an absent function here; callers report it
    }
    return r;
  }
  ValueRet GetFunctionDoc(const TVMFFIAny& name) override { return Text("__tvm_ffi__doc_", name); }
  ValueRet GetFunctionMetadata(const TVMFFIAny& name) override {
    return Text("__tvm_ffi__metadata_", name);
  }

  TVMFFIObject* Lookup(const std::string& name) const {
    auto symbol =
        reinterpret_cast<TVMFFISafeCallType>(library_->Symbol(TVM_FFI_SYMBOL_PREFIX + name));
    if (symbol == nullptr) return nullptr;
    auto* self = new LibraryFunction{symbol, library_};
    TVMFFIObjectHandle out = nullptr;
    if (TVMFFIFunctionCreate(self, &LibraryFunctionCall, &LibraryFunctionDelete, &out) != 0) {
      delete self;
      Throw("MemoryError", "out of memory wrapping function '" + name + "'");
    }
    return Header(out);
  }

  const std::shared_ptr<Library>& library() const { return library_; }

  // TVMFFIEnvModLookupFromImports hands out borrowed functions: the module keeps them.
  std::mutex import_mutex_;
  std::map<std::string, TVMFFIObject*> import_cache_;

 private:
  ValueRet Text(const char* prefix, const TVMFFIAny& name) {
    ValueRet r;
    try {
      auto fn = reinterpret_cast<TVMFFISafeCallType>(
          library_->Symbol(prefix + std::string(StrView(name, "function name"))));
      if (fn == nullptr || fn(nullptr, nullptr, 0, &r.value) != 0) {
        TVMFFIObjectHandle err = nullptr;
        TVMFFIErrorMoveFromRaised(&err);
        if (err != nullptr) DecRef(Header(err));
        r.value = NoneValue();
      }
    } catch (...) {
      r.value = NoneValue();
    }
    return r;
  }

  std::shared_ptr<Library> library_;
};

void ModuleDeleter(void* obj, int flags) {
  ModuleBase* m = FromHeader(Header(obj));
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    m->ClearImports();
    for (auto& kv : static_cast<LibraryModule*>(m)->import_cache_) DecRef(kv.second);
    // Only our own modules reach this deleter: no virtual destructor in the layout.
    static_cast<LibraryModule*>(m)->~LibraryModule();
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(m);
}

LibraryModule* NewLibraryModule(std::shared_ptr<Library> lib) {
  void* mem = AllocObject(sizeof(LibraryModule), kTVMFFIModule, &FlatDeleter);
  // AllocObject set up a header at the start; the header belongs at 8, after the vtable.
  std::memset(mem, 0, sizeof(LibraryModule));
  auto* m = new (mem) LibraryModule(std::move(lib));
  m->header_.combined_ref_count = (uint64_t{1} << 32) | 1;
  m->header_.type_index = kTVMFFIModule;
  m->header_.deleter = &ModuleDeleter;
  return m;
}

ModuleBase* ModuleArg(const char* fname, const TVMFFIAny& v) {
  if (v.type_index != kTVMFFIModule) {
    Throw("TypeError", std::string(fname) + ": argument 0 must be a Module (got " +
                           TypeName(v.type_index) + ")");
  }
  return FromHeader(v.v_obj);
}

// The function `name` of a module, looking through its imports depth-first when asked.
TVMFFIObject* FindFunction(ModuleBase* m, const TVMFFIAny& name, bool query_imports) {
  ObjectRet r = m->GetFunction(name);
  if (r.obj != nullptr || !query_imports || m->imports_ == nullptr) {
    TVMFFIObject* found = r.obj;
    r.obj = nullptr;
    return found;
  }
  int64_t n = 0;
  const TVMFFIAny* items = SeqItems(m->imports_, &n);
  for (int64_t i = 0; i < n; ++i) {
    if (TVMFFIObject* f = FindFunction(FromHeader(items[i].v_obj), name, true)) return f;
  }
  return nullptr;
}

uint64_t ReadU64(const char*& p, const char* end, const std::string& path) {
  if (end - p < 8) {
    Throw("ValueError", "library '" + path + "': __tvm_ffi__library_bin is truncated");
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  p += 8;
  return v;
}

std::string ReadBlob(const char*& p, const char* end, const std::string& path) {
  uint64_t n = ReadU64(p, end, path);
  if (static_cast<uint64_t>(end - p) < n) {
    Throw("ValueError", "library '" + path + "': __tvm_ffi__library_bin is truncated");
  }
  std::string s(p, static_cast<size_t>(n));
  p += n;
  return s;
}

std::vector<uint64_t> ReadVector(const char*& p, const char* end, const std::string& path) {
  uint64_t n = ReadU64(p, end, path);
  if (n > static_cast<uint64_t>(end - p) / 8) {
    Throw("ValueError", "library '" + path + "': __tvm_ffi__library_bin is truncated");
  }
  std::vector<uint64_t> v(static_cast<size_t>(n));
  for (uint64_t& x : v) x = ReadU64(p, end, path);
  return v;
}

// Owned references to modules, released together.
struct ModuleList {
  std::vector<TVMFFIObject*> items;
  ~ModuleList() {
    for (TVMFFIObject* m : items) DecRef(m);
  }
};

// __tvm_ffi__library_bin: an 8-byte little-endian length, then the import tree (CSR: indptr
// and child indices, each a u64 count and u64 values), then per module a kind (u64 length and
// bytes) and, for kinds other than "_lib" (the library itself), a blob given to the global
// "ffi.Module.load_from_bytes.<kind>". Returns the root module.
TVMFFIObject* LoadLibraryBin(const char* bin, LibraryModule* lib_module, void** ctx_addr,
                             const std::string& path) {
  uint64_t nbytes = 0;
  for (int i = 0; i < 8; ++i) {
    nbytes |= static_cast<uint64_t>(static_cast<unsigned char>(bin[i])) << (8 * i);
  }
  const char* p = bin + 8;
  const char* end = p + nbytes;
  std::vector<uint64_t> indptr = ReadVector(p, end, path);
  std::vector<uint64_t> children = ReadVector(p, end, path);
  if (indptr.empty()) Throw("ValueError", "library '" + path + "': empty import tree");
  ModuleList modules;
  for (size_t i = 0; i + 1 < indptr.size(); ++i) {
    std::string kind = ReadBlob(p, end, path);
    if (kind == "_lib") {
      IncRef(&lib_module->header_);
      modules.items.push_back(&lib_module->header_);
      if (ctx_addr != nullptr) *ctx_addr = lib_module;
      continue;
    }
    std::string blob = ReadBlob(p, end, path);
    std::string loader = "ffi.Module.load_from_bytes." + kind;
    TVMFFIByteArray loader_name{loader.data(), loader.size()};
    TVMFFIObjectHandle f = nullptr;
    TVMFFIFunctionGetGlobal(&loader_name, &f);
    if (f == nullptr) {
      Throw("RuntimeError", "library '" + path + "' embeds a module of kind '" + kind +
                                "', and no loader '" + loader + "' is registered");
    }
    TVMFFIAny arg = MakeStr(blob, true);
    TVMFFIAny result = NoneValue();
    try {
      result = CallFunction(Header(f), &arg, 1);
    } catch (...) {
      ReleaseValue(&arg);
      DecRef(Header(f));
      throw;
    }
    ReleaseValue(&arg);
    DecRef(Header(f));
    if (result.type_index != kTVMFFIModule) {
      ReleaseValue(&result);
      Throw("TypeError", "loader '" + loader + "' did not return a Module");
    }
    modules.items.push_back(result.v_obj);
  }
  for (size_t i = 0; i + 1 < indptr.size(); ++i) {
    for (uint64_t j = indptr[i]; j < indptr[i + 1]; ++j) {
      if (j >= children.size() || children[j] >= modules.items.size()) {
        Throw("ValueError", "library '" + path +
                                "': the import tree names a module that "
                                "does not exist");
      }
      FromHeader(modules.items[i])->ImportModule(modules.items[children[j]]);
    }
  }
  IncRef(modules.items[0]);
  return modules.items[0];
}

TVMFFIObject* LoadLibrary(const std::string& path) {
  BeginLoadChecks();
  void* handle = dlopen(path.c_str(), RTLD_LOCAL | RTLD_NOW);
  std::string conflict = EndLoadChecks();
  if (handle != nullptr && !conflict.empty()) {
    // The library stays open, as every library does (see Library).
    Throw("TypeError", "cannot load library '" + path + "': " + conflict);
  }
  if (handle == nullptr) {
    const char* why = dlerror();
    Throw("RuntimeError", "cannot load library '" + path + "': " + (why ? why : "dlopen failed"));
  }
  auto lib = std::make_shared<Library>();
  lib->path = path;
  lib->handle = handle;
  {
    SystemLibRegistry& r = Registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& [name, value] : r.context_symbols) {
      if (auto** slot = static_cast<void**>(dlsym(handle, name.c_str()))) *slot = value;
    }
  }
  LibraryModule* m = NewLibraryModule(lib);
  auto** ctx_addr = static_cast<void**>(dlsym(handle, "__tvm_ffi__library_ctx"));
  const char* bin = static_cast<const char*>(dlsym(handle, "__tvm_ffi__library_bin"));
  if (bin == nullptr) {
    if (ctx_addr != nullptr) *ctx_addr = m;
    return &m->header_;
  }
  try {
    TVMFFIObject* root = LoadLibraryBin(bin, m, ctx_addr, path);
    DecRef(&m->header_);
    return root;
  } catch (...) {
    if (ctx_addr != nullptr) *ctx_addr = nullptr;
    DecRef(&m->header_);
    throw;
  }
}

TVMFFIAny LoadFromFile(const TVMFFIAny* args, int32_t n) {
  if (n != 1 && n != 2) CheckArgCount("ffi.ModuleLoadFromFile", n, 1);
  std::string path(StrView(args[0], "ffi.ModuleLoadFromFile: path"));
  size_t dot = path.rfind('.');
  size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    Throw("ValueError",
          "ffi.ModuleLoadFromFile: '" + path + "' has no file extension to choose a loader by");
  }
  std::string format = path.substr(dot + 1);
  if (format == "dll" || format == "dylib" || format == "dso") format = "so";
  std::string loader = "ffi.Module.load_from_file." + format;
  TVMFFIByteArray loader_name{loader.data(), loader.size()};
  TVMFFIObjectHandle f = nullptr;
  TVMFFIFunctionGetGlobal(&loader_name, &f);
  if (f == nullptr) {
    Throw("RuntimeError", "ffi.ModuleLoadFromFile: no loader for '." + format + "' files ('" +
                              loader + "' is not registered), loading '" + path + "'");
  }
  TVMFFIAny call_args[2] = {args[0], MakeStr(format, false)};
  try {
    TVMFFIAny r = CallFunction(Header(f), call_args, 2);
    ReleaseValue(&call_args[1]);
    DecRef(Header(f));
    return r;
  } catch (...) {
    ReleaseValue(&call_args[1]);
    DecRef(Header(f));
    throw;
  }
}

const bool registered = [] {
  RegisterGlobalNative("ffi.ModuleLoadFromFile", &LoadFromFile);
  RegisterGlobalNative("ffi.Module.load_from_file.so", [](const TVMFFIAny* a, int32_t n) {
    if (n != 1 && n != 2) CheckArgCount("ffi.Module.load_from_file.so", n, 2);
    return ObjectValue(LoadLibrary(std::string(StrView(a[0], "library path"))));
  });
  RegisterGlobalNative("ffi.ModuleGetFunction", [](const TVMFFIAny* a, int32_t n) {
    CheckArgCount("ffi.ModuleGetFunction", n, 3);
    ModuleBase* m = ModuleArg("ffi.ModuleGetFunction", a[0]);
    StrView(a[1], "ffi.ModuleGetFunction: name");
    TVMFFIObject* f = FindFunction(m, a[1], IntArg("ffi.ModuleGetFunction", a, 2) != 0);
    return f == nullptr ? NoneValue() : ObjectValue(f);
  });
  RegisterGlobalNative("ffi.ModuleImplementsFunction", [](const TVMFFIAny* a, int32_t n) {
    CheckArgCount("ffi.ModuleImplementsFunction", n, 3);
    ModuleBase* m = ModuleArg("ffi.ModuleImplementsFunction", a[0]);
    StrView(a[1], "ffi.ModuleImplementsFunction: name");
    TVMFFIObject* f = FindFunction(m, a[1], IntArg("ffi.ModuleImplementsFunction", a, 2) != 0);
    if (f != nullptr) DecRef(f);
    return BoolValue(f != nullptr);
  });
  RegisterGlobalNative("ffi.ModuleGetKind", [](const TVMFFIAny* a, int32_t n) {
    CheckArgCount("ffi.ModuleGetKind", n, 1);
    return MakeStr(ModuleArg("ffi.ModuleGetKind", a[0])->kind(), false);
  });
  RegisterGlobalNative("ffi.ModuleImportModule", [](const TVMFFIAny* a, int32_t n) {
    CheckArgCount("ffi.ModuleImportModule", n, 2);
    ModuleBase* m = ModuleArg("ffi.ModuleImportModule", a[0]);
    ModuleArg("ffi.ModuleImportModule", a[1]);
    m->ImportModule(a[1].v_obj);
    return NoneValue();
  });
  RegisterGlobalNative("ffi.ModuleClearImports", [](const TVMFFIAny* a, int32_t n) {
    CheckArgCount("ffi.ModuleClearImports", n, 1);
    ModuleArg("ffi.ModuleClearImports", a[0])->ClearImports();
    return NoneValue();
  });
  RegisterGlobalNative("ffi.SystemLib", [](const TVMFFIAny*, int32_t) {
    return ObjectValue(&NewLibraryModule(std::make_shared<Library>())->header_);
  });
  return true;
}();

}  // namespace
}  // namespace tvm_ffi_runtime

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
