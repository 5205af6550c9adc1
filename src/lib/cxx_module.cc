// The C++ members of tvm::ffi::ModuleObj and tvm::ffi::Module that report errors by throwing
// tvm::ffi::Error (Module::LoadFromFile, Module::VisitContextSymbols) or that a module class
// defined in a library needs (ModuleObj::ImportModule, the key function, which puts ModuleObj's
// vtable and typeinfo here). Written with the headers' own classes, so that what they throw and
// the vtable they emit are those of include/tvm/ffi; the members that cannot fail are in
// module.cc. Exported under their mangled names by libtvm_ffi.map.
#include <tvm/ffi/extra/module.h>

#include <string>
#include <utility>
#include <vector>

#include "module.h"

namespace tvm {
namespace ffi {

// Appends without a cycle check, as ffi.ModuleImportModule does (module.h): imports_ is an
// Array the module owns alone once push_back copied it.
void ModuleObj::ImportModule(const Module& other) { imports_.push_back(other); }

Module Module::LoadFromFile(const String& file_name) {
  // The loader's errors (no such file, no loader for the extension, a refused library) come
  // back through the C ABI and are thrown here as the Error the caller catches.
  return Function::GetGlobalRequired("ffi.ModuleLoadFromFile")(file_name).cast<Module>();
}

void Module::VisitContextSymbols(const TypedFunction<void(String, void*)>& callback) {
  std::vector<std::pair<std::string, void*>> symbols;
  {  // a copy: the callback may register more symbols or load a library
    tvm_ffi_runtime::SystemLibRegistry& r = tvm_ffi_runtime::Registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    symbols = r.context_symbols;
  }
  for (const auto& [name, address] : symbols) callback(String(name), address);
}

}  // namespace ffi
}  // namespace tvm
