// The module object shared by the loader (loader.cc) and the module API (module.cc): the
// layout of apache-tvm-ffi's ModuleObj, the library module and the library registry.
#ifndef TVM_FFI_RUNTIME_MODULE_H_
#define TVM_FFI_RUNTIME_MODULE_H_

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "internal.h"

namespace tvm_ffi_runtime {

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
  std::string prefix;      // the system library's symbol prefix ("ffi.SystemLib"'s argument)
  void* Symbol(const std::string& name) const;
};

struct SystemLibRegistry {
  std::mutex mutex;
  std::map<std::string, void*> symbols;
  std::vector<std::pair<std::string, void*>> context_symbols;
};

inline SystemLibRegistry& Registry() {
  static SystemLibRegistry* r = new SystemLibRegistry();  // never destroyed: see TypeTable
  return *r;
}

inline void* Library::Symbol(const std::string& name) const {
  if (handle != nullptr) return dlsym(handle, name.c_str());
  SystemLibRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  // A prefixed system library looks for "__tvm_ffi_<prefix><name>" first, then the plain name.
  const std::string kPrefix = TVM_FFI_SYMBOL_PREFIX;
  if (!prefix.empty() && name.compare(0, kPrefix.size(), kPrefix) == 0) {
    auto it = r.symbols.find(kPrefix + prefix + name.substr(kPrefix.size()));
    if (it != r.symbols.end()) return it->second;
  }
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
    ReleaseImports();
    imports_ = MakeArray(nullptr, 0).v_obj;
  }

  void ReleaseImports() {
    if (imports_ != nullptr) DecRef(imports_);
    imports_ = nullptr;
  }

  TVMFFIObject header_;
  // An ArrayObj of modules, never NULL while the module lives: inline code of libraries
  // iterates it as an Array.
  TVMFFIObject* imports_ = nullptr;
  TVMFFIObject* lookup_cache_ = nullptr;  // a Map in apache's runtime; only runtimes read it
};

inline ModuleBase* FromHeader(TVMFFIObject* h) {
  return reinterpret_cast<ModuleBase*>(reinterpret_cast<char*>(h) - sizeof(void*));
}

inline void ModuleBase::ImportModule(const TVMFFIObject* const& other) {
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

inline int LibraryFunctionCall(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  return static_cast<LibraryFunction*>(self)->symbol(nullptr, args, n, result);
}

inline void LibraryFunctionDelete(void* self) { delete static_cast<LibraryFunction*>(self); }

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

inline void ModuleDeleter(void* obj, int flags) {
  ModuleBase* m = FromHeader(Header(obj));
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    m->ReleaseImports();
    for (auto& kv : static_cast<LibraryModule*>(m)->import_cache_) DecRef(kv.second);
    // Only our own modules reach this deleter: no virtual destructor in the layout.
    static_cast<LibraryModule*>(m)->~LibraryModule();
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(m);
}

inline LibraryModule* NewLibraryModule(std::shared_ptr<Library> lib) {
  void* mem = AllocObject(sizeof(LibraryModule), kTVMFFIModule, &FlatDeleter);
  // AllocObject set up a header at the start; the header belongs at 8, after the vtable.
  std::memset(mem, 0, sizeof(LibraryModule));
  auto* m = new (mem) LibraryModule(std::move(lib));
  m->header_.combined_ref_count = (uint64_t{1} << 32) | 1;
  m->header_.type_index = kTVMFFIModule;
  m->header_.deleter = &ModuleDeleter;
  m->imports_ = MakeArray(nullptr, 0).v_obj;
  return m;
}

inline ModuleBase* ModuleArg(const char* fname, const TVMFFIAny& v) {
  if (v.type_index != kTVMFFIModule) {
    Throw("TypeError", std::string(fname) + ": argument 0 must be a Module (got " +
                           TypeName(v.type_index) + ")");
  }
  return FromHeader(v.v_obj);
}

// The function `name` of a module, looking through its imports depth-first when asked.
inline TVMFFIObject* FindFunction(ModuleBase* m, const TVMFFIAny& name, bool query_imports) {
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

// Loads the library at path (dlopen, context symbols, imports); a new module reference.
TVMFFIObject* LoadLibrary(const std::string& path);

}  // namespace tvm_ffi_runtime

#endif  // TVM_FFI_RUNTIME_MODULE_H_
