// Loading libraries: dlopen, context symbols, the import tree of __tvm_ffi__library_bin, and
// the loader globals ("ffi.ModuleLoadFromFile", "ffi.Module.load_from_file.so") with the
// module globals built on them.
#include "module.h"

namespace tvm_ffi_runtime {
namespace {

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

}  // namespace

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

namespace {

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
  RegisterGlobalNative("ffi.SystemLib", [](const TVMFFIAny* a, int32_t n) {
    if (n > 1) CheckArgCount("ffi.SystemLib", n, 1);
    auto lib = std::make_shared<Library>();
    if (n == 1) lib->prefix = std::string(StrView(a[0], "ffi.SystemLib: symbol prefix"));
    return ObjectValue(&NewLibraryModule(std::move(lib))->header_);
  });
  return true;
}();

}  // namespace
}  // namespace tvm_ffi_runtime
