/*
 * tvm::ffi::ModuleObj and tvm::ffi::Module: an object that hands out functions by name.
 *
 * Derive from ModuleObj, implement kind() and GetFunction(name), and return a Module from an
 * exported function: Python receives an object whose attributes (`mod.run(...)`) and items
 * (`mod["run"]`) are those functions.
 */
#ifndef TVM_FFI_EXTRA_MODULE_H_
#define TVM_FFI_EXTRA_MODULE_H_

#include <tvm/ffi/detail/export.h>
#include <tvm/ffi/detail/object_convert.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/function.h>
#include <tvm/ffi/detail/object.h>
#include <tvm/ffi/detail/optional.h>
#include <tvm/ffi/detail/string.h>
#include <tvm/ffi/detail/names.h>  // the names apache-tvm-ffi's header brings

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

TVM_FFI_DETAIL_HIDDEN_END  // default visibility, as Object's (detail/object.h says why)

class ModuleObj : public Object {
 public:
  static constexpr const char* _type_key = "ffi.Module";
  static constexpr bool _type_mutable = true;
  static constexpr int32_t _type_ffi_flags = TVM_FFI_OBJECT_IS_CXX | TVM_FFI_OBJECT_IS_MODULE;
  static int _type_ffi_get_function(TVMFFIRefObject* self, const char* name,
                                    TVMFFIResult* result) noexcept {
    try {
      auto* module = static_cast<ModuleObj*>(detail::ObjectCells::ObjectOfCxx(self));
      Optional<Function> func = module->GetFunction(String(name));
      detail::TypeTraits<Optional<Function>>::ToResult(func, &result->value, nullptr);
      result->owner = nullptr;
      return 0;
    } catch (...) {
      return detail::ReportCurrentException(name, detail::kStageCall, result);
    }
  }

  virtual ~ModuleObj() = default;
  /*! \brief What kind of module this is, for messages ("fp8_gemm_runner", ...). */
  virtual const char* kind() const = 0;
  /*! \brief The function called `name`, or nothing when the module has none. */
  virtual Optional<Function> GetFunction(const String& name) = 0;
  /*! \brief apache-tvm-ffi's property bits (runnable, binary-serializable, ...); none here. */
  virtual int GetPropertyMask() const { return 0; }
  virtual bool ImplementsFunction(const String& name) { return GetFunction(name).has_value(); }
  virtual Optional<String> GetFunctionDoc(const String&) { return std::nullopt; }
  virtual Optional<String> GetFunctionMetadata(const String&) { return std::nullopt; }
};

TVM_FFI_DETAIL_HIDDEN_BEGIN

/*! \brief A handle to a module: one made in C++, or one another library or Python made. */
class Module : public ObjectRef {
 public:
  // get() and -> give the C++ module, or nullptr when it is not a C++ ModuleObj of this ABI.
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(Module, ObjectRef, ModuleObj);
  Module(std::nullptr_t) noexcept {}  // NOLINT: implicit, like a pointer

  /*!
   * \brief The function called `name`, or nothing. Works for any module, also one made by
   * another library. (`query_imports` is accepted for apache-tvm-ffi's signature; modules
   * here have no imports.)
   */
  Optional<Function> GetFunction(const String& name, bool query_imports = false) const {
    (void)query_imports;
    TVMFFIRefObject* cell = detail::ObjectCells::CellOfRef(*this);
    if (cell == nullptr) throw Error("RuntimeError", "GetFunction on an empty Module");
    TVMFFIResult result;
    if (cell->type->get_function(cell, name.c_str(), &result) != 0) {
      detail::ThrowCallError(&result);
    }
    if (result.value.type_code == kTVMFFINone) return std::nullopt;
    return Function(ObjectPtr<FunctionObj>::Adopt(static_cast<TVMFFIRefObject*>(result.value.v_ptr)));
  }
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_EXTRA_MODULE_H_
