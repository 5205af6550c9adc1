/*
 * tvm::ffi::ModuleObj and tvm::ffi::Module: a loaded library (or any other module kind) and
 * the functions it holds.
 *
 * ModuleObj is a C++ class whose layout and vtable every side shares: the vtable pointer at
 * offset 0, the object header at 8, imports_ at 32, the import lookup cache at 40, and the
 * virtual functions in the order below (docs/dev/abi.md). Its out-of-line members
 * (GetFunction(name, query_imports) and the like, ImportModule, ClearImports, the vtable and
 * typeinfo, Module::LoadFromFile) live in libtvm_ffi.so: the one place a library built with
 * these headers binds to C++ symbols of the runtime.
 */
#ifndef TVM_FFI_EXTRA_MODULE_H_
#define TVM_FFI_EXTRA_MODULE_H_

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/function.h>

namespace tvm {
namespace ffi {

class Module;

class TVM_FFI_DLL ModuleObj : public Object {
 public:
  TVM_FFI_HIDDEN ModuleObj() = default;
  // Not virtual, as in every runtime's ModuleObj: the deleter make_object set knows the type.
  TVM_FFI_HIDDEN ~ModuleObj() = default;
  /*! \brief The kind of module ("library", "cuda", ...). */
  virtual const char* kind() const = 0;
  /*! \brief Module::ModulePropertyMask bits. */
  TVM_FFI_HIDDEN virtual int GetPropertyMask() const { return 0; }
  /*! \brief The function `name` of this module itself, or nothing. */
  virtual Optional<Function> GetFunction(const String& name) = 0;
  TVM_FFI_HIDDEN virtual bool ImplementsFunction(const String& name) {
    return GetFunction(name).has_value();
  }
  TVM_FFI_HIDDEN virtual Optional<String> GetFunctionDoc(const String&) { return std::nullopt; }
  TVM_FFI_HIDDEN virtual Optional<String> GetFunctionMetadata(const String&) {
    return std::nullopt;
  }
  TVM_FFI_HIDDEN virtual void WriteToFile(const String&, const String&) const {
    TVM_FFI_THROW(RuntimeError) << "a module of kind " << kind() << " cannot be written to a file";
  }
  TVM_FFI_HIDDEN virtual Array<String> GetWriteFormats() const { return Array<String>(); }
  TVM_FFI_HIDDEN virtual Bytes SaveToBytes() const {
    TVM_FFI_THROW(RuntimeError) << "a module of kind " << kind() << " cannot be saved to bytes";
  }
  TVM_FFI_HIDDEN virtual String InspectSource(const String&) const { return String(); }
  // Out of line, in the runtime (the first of them is the class's key function: the vtable
  // and typeinfo are emitted there once).
  virtual void ImportModule(const Module& other);
  virtual void ClearImports();

  // In the runtime: the same, also searching the imports when query_imports is true.
  Optional<Function> GetFunction(const String& name, bool query_imports);
  bool ImplementsFunction(const String& name, bool query_imports);
  Optional<String> GetFunctionDoc(const String& name, bool query_imports);
  Optional<String> GetFunctionMetadata(const String& name, bool query_imports);

  TVM_FFI_HIDDEN const Array<Any>& imports() const noexcept { return imports_; }

  static constexpr bool _type_mutable = true;
  static constexpr bool _type_final = true;
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Module", ModuleObj, Object, kTVMFFIModule);

 protected:
  Array<Any> imports_;

 private:
  // A Map<String, Function> (container/map.h): functions found among the imports, by name.
  ObjectRef import_lookup_cache_;
};

class TVM_FFI_HIDDEN_MEMBERS Module : public ObjectRef {
 public:
  enum ModulePropertyMask : int {
    kBinarySerializable = 0b001,
    kRunnable = 0b010,
    kCompilationExportable = 0b100,
  };
  /*! \brief Loads a shared library as a module (in the runtime: its loader). */
  TVM_FFI_DLL static Module LoadFromFile(const String& file_name);
  /*! \brief Calls `callback(name, address)` for each context symbol registered so far. */
  TVM_FFI_DLL static void VisitContextSymbols(const TypedFunction<void(String, void*)>& callback);

  TVM_FFI_HIDDEN explicit Module(ObjectPtr<ModuleObj> n) noexcept
      : ObjectRef(ObjectPtr<Object>(std::move(n))) {}
  static constexpr bool _type_is_nullable = false;
  TVM_FFI_DETAIL_REF_METHODS(Module, ObjectRef, ModuleObj, TVM_FFI_HIDDEN);
  TVM_FFI_HIDDEN ~Module() = default;
};

}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_EXTRA_MODULE_H_
