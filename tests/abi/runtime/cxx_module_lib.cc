// A library written for apache-tvm-ffi's C++ API (its headers, -ltvm_ffi against its runtime)
// that uses the C++ members of ModuleObj and Module a runtime defines: Module::LoadFromFile
// (and the Error it throws, caught here), Module::VisitContextSymbols, ModuleObj::ImportModule,
// and ModuleObj's vtable and typeinfo (a module class defined here).
// tests/abi/test_runtime_cxx_module.py loads it into our runtime and into apache's.
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>

#include <string>

namespace ffi = tvm::ffi;

namespace {

// A module kind of this library, as FlashInfer writes its GEMM runners.
class RunnerModule : public ffi::ModuleObj {
 public:
  const char* kind() const final { return "test_runner"; }
  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    if (name == "workspace_size") {
      return ffi::Function::FromTyped([this](int64_t m, int64_t n) { return m * n + bias_; });
    }
    return std::nullopt;
  }
  int64_t bias_ = 7;
};

ffi::Module MakeModule() { return ffi::Module(ffi::make_object<RunnerModule>()); }

int64_t LoadAndCall(ffi::String path, ffi::String name, int64_t x) {
  ffi::Module mod = ffi::Module::LoadFromFile(path);
  ffi::Optional<ffi::Function> f = mod->GetFunction(name, false);
  TVM_FFI_CHECK(f.has_value(), AttributeError) << "no function " << std::string(name);
  return (*f)(x).cast<int64_t>();
}

// The Error the runtime threw, caught by this library's type: "kind|message".
ffi::String LoadError(ffi::String path) {
  try {
    ffi::Module::LoadFromFile(path);
  } catch (const ffi::Error& e) {
    return e.kind() + "|" + e.message();
  }
  return "no error";
}

ffi::String ContextSymbols() {
  static int marker = 0;
  if (TVMFFIEnvModRegisterContextSymbol("__cxx_module_marker", &marker) != 0) return "failed";
  std::string found;
  ffi::Module::VisitContextSymbols([&](ffi::String name, void* address) {
    if (name == "__cxx_module_marker") found += address == &marker ? "marker@ok" : "marker@bad";
  });
  return found;
}

void ImportInto(ffi::Module into, ffi::Module other) { into->ImportModule(other); }

int64_t Twice(int64_t x) { return 2 * x; }

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_module, MakeModule);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(load_and_call, LoadAndCall);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(load_error, LoadError);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(context_symbols, ContextSymbols);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(import_into, ImportInto);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(twice, Twice);
