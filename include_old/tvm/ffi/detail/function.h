/*
 * The implementation behind tvm/ffi/function.h (the public header).
 *
 * TVM_FFI_DLL_EXPORT_TYPED_FUNC: export a typed C++ function through the C ABI of c_api.h.
 *
 *   void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y);
 *   TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
 *
 * defines the symbol `__tvm_ffi_add_one`, which a loader finds with dlsym (or by listing the
 * library's dynamic symbols). Supported types are listed in docs/guides/cpp_core.md.
 */
#ifndef TVM_FFI_DETAIL_FUNCTION_H_
#define TVM_FFI_DETAIL_FUNCTION_H_

#include <tvm/ffi/detail/any.h>
#include <tvm/ffi/base.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/tensor.h>
#include <tvm/ffi/detail/export.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/object.h>
#include <tvm/ffi/detail/optional.h>
#include <tvm/ffi/detail/string.h>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*! \brief The arguments of a packed call: a view of `size()` values. */
class PackedArgs {
 public:
  PackedArgs(const AnyView* data, int32_t size) noexcept : data_(data), size_(size) {}
  int32_t size() const noexcept { return size_; }
  AnyView operator[](int32_t i) const noexcept { return data_[i]; }
  const AnyView* data() const noexcept { return data_; }

 private:
  const AnyView* data_;
  int32_t size_;
};
static_assert(sizeof(AnyView) == sizeof(TVMFFIAny), "AnyView views a TVMFFIAny in place");

/*! \brief A C++ function as an object: what Function::FromTyped and FromPacked create. */
class FunctionObj : public Object {
 public:
  static constexpr const char* _type_key = "ffi.Function";
  static constexpr int32_t _type_ffi_flags = TVM_FFI_OBJECT_IS_CXX | TVM_FFI_OBJECT_IS_FUNCTION;
  static int _type_ffi_call(TVMFFIRefObject* self, const TVMFFICallContext* ctx,
                            const TVMFFIAny* args, int32_t num_args,
                            TVMFFIResult* result) noexcept {
    auto* func = static_cast<FunctionObj*>(detail::ObjectCells::ObjectOfCxx(self));
    return func->CallPacked(ctx, args, num_args, result);
  }
  virtual ~FunctionObj() = default;
  /*! \brief The TVMFFIFunctionEntry contract: 0 and a result, or -1 and an error result. */
  virtual int CallPacked(const TVMFFICallContext* ctx, const TVMFFIAny* args, int32_t num_args,
                         TVMFFIResult* result) noexcept = 0;
};

namespace detail {

/*! \brief A typed callable: arguments checked and converted as an exported function's are. */
template <typename F>
class TypedFunctionObj final : public FunctionObj {
 public:
  TypedFunctionObj(F func, std::string name) : func_(std::move(func)), name_(std::move(name)) {}
  int CallPacked(const TVMFFICallContext* ctx, const TVMFFIAny* args, int32_t num_args,
                 TVMFFIResult* result) noexcept override {
    return ExportTraits<F>::Call(func_, name_.c_str(), ctx, args, num_args, result);
  }

 private:
  F func_;
  std::string name_;
};

/*! \brief A packed callable: `func(PackedArgs args, Any* result)`. */
template <typename F>
class PackedFunctionObj final : public FunctionObj {
 public:
  explicit PackedFunctionObj(F func) : func_(std::move(func)) {}
  int CallPacked(const TVMFFICallContext* ctx, const TVMFFIAny* args, int32_t num_args,
                 TVMFFIResult* result) noexcept override {
    try {
      Any value;
      {
        EnvCallScope env(ctx);
        func_(PackedArgs(reinterpret_cast<const AnyView*>(args), num_args), &value);
      }
      SetResult<Any>(value, result);
      return 0;
    } catch (...) {
      return ReportCurrentException("<packed function>", kStageCall, result);
    }
  }

 private:
  F func_;
};

/*! \brief Throws the error a failed call reported, releasing its result. */
[[noreturn]] TVM_FFI_COLD inline void ThrowCallError(TVMFFIResult* result) {
  const TVMFFIErrorInfo* info = static_cast<const TVMFFIErrorInfo*>(result->value.v_ptr);
  Error error(info->kind, info->message, info->file, info->line);
  if (result->owner != nullptr) result->owner->deleter(result->owner);
  throw error;
}

[[noreturn]] TVM_FFI_COLD inline void ThrowNoRegistry(std::string_view what) {
  throw Error("RuntimeError",
              Concat({what, ": the global registry (libtvm_ffi) is not loaded; import tvm_ffi "
                            "first, or link the library with -ltvm_ffi"}));
}

}  // namespace detail

/*!
 * \brief A handle to a callable object: a C++ function (FromTyped, FromPacked), a function
 * Python passed in, or one found in the global registry. Calling it returns an Any.
 */
class Function : public ObjectRef {
 public:
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(Function, ObjectRef, FunctionObj);
  Function(std::nullptr_t) noexcept {}  // NOLINT: implicit, like a pointer

  /*! \brief Wraps a typed callable; arguments are checked as an exported function's are. */
  template <typename F>
  static Function FromTyped(F func, std::string name = "function") {
    return Function(make_object<detail::TypedFunctionObj<F>>(std::move(func), std::move(name)));
  }
  /*! \brief Wraps `func(PackedArgs args, Any* result)`. */
  template <typename F>
  static Function FromPacked(F func) {
    return Function(make_object<detail::PackedFunctionObj<F>>(std::move(func)));
  }

  /*! \brief Calls with the arguments as they are; an error the callee reports is thrown. */
  Any CallPacked(const AnyView* args, int32_t num_args) const {
    TVMFFIRefObject* cell = detail::ObjectCells::CellOfRef(*this);
    if (TVM_FFI_UNLIKELY(cell == nullptr)) {
      throw Error("RuntimeError", "calling an empty tvm::ffi::Function");
    }
    TVMFFIResult result;
    // Nested calls see the caller's stream and allocator.
    const TVMFFICallContext* ctx = detail::GetEnvState()->ctx;
    if (TVM_FFI_UNLIKELY(cell->type->call(cell, ctx, reinterpret_cast<const TVMFFIAny*>(args),
                                          num_args, &result) != 0)) {
      detail::ThrowCallError(&result);
    }
    return Any::FromResult(result);
  }
  Any CallPacked(PackedArgs args) const { return CallPacked(args.data(), args.size()); }
  // compat: apache-tvm-ffi (its CallPacked stores the result through a pointer)
  void CallPacked(const AnyView* args, int32_t num_args, Any* result) const {
    *result = CallPacked(args, num_args);
  }
  // compat: apache-tvm-ffi
  void CallPacked(PackedArgs args, Any* result) const { *result = CallPacked(args); }

  template <typename... Args>
  Any operator()(const Args&... args) const {
    const AnyView packed[sizeof...(Args) > 0 ? sizeof...(Args) : 1] = {AnyView(args)...};
    return CallPacked(packed, static_cast<int32_t>(sizeof...(Args)));
  }

  /*! \brief The function registered under `name`, or nothing. */
  static Optional<Function> GetGlobal(std::string_view name) {
    if (TVMFFIFunctionGetGlobal == nullptr) detail::ThrowNoRegistry("Function::GetGlobal");
    std::string key(name);
    TVMFFIRefObject* cell = TVMFFIFunctionGetGlobal(key.c_str());
    if (cell == nullptr) return std::nullopt;
    return Function(ObjectPtr<FunctionObj>::Adopt(cell));
  }
  /*! \brief The function registered under `name`; ValueError when there is none. */
  static Function GetGlobalRequired(std::string_view name) {
    Optional<Function> func = GetGlobal(name);
    if (!func.has_value()) {
      throw Error("ValueError", detail::Concat({"no global function is registered as '",
                                                 name, "'"}));
    }
    return *func;
  }
  /*! \brief Registers `func` under `name`; RuntimeError when it is taken (unless override). */
  static void SetGlobal(std::string_view name, const Function& func, bool can_override = false) {
    if (TVMFFIFunctionSetGlobal == nullptr) detail::ThrowNoRegistry("Function::SetGlobal");
    std::string key(name);
    if (TVMFFIFunctionSetGlobal(key.c_str(), detail::ObjectCells::CellOfRef(func),
                                can_override ? 1 : 0) != 0) {
      throw Error("RuntimeError",
                  detail::Concat({"a global function is already registered as '", name, "'"}));
    }
  }
};

namespace detail {

// compat: apache-tvm-ffi. The error the last TVM_FFI_SAFE_CALL_END of this thread caught, for
// the TVM_FFI_CHECK_SAFE_CALL that checks its return code. Private to the library: a
// hand-written C entry and the C++ that checks it live in one library.
TVM_FFI_DETAIL_TLS_MODEL_BEGIN
TVM_FFI_DLL_LOCAL inline std::optional<Error>& SafeCallRaised() noexcept {
  static thread_local std::optional<Error> raised TVM_FFI_DETAIL_TLS_MODEL;
  return raised;
}
TVM_FFI_DETAIL_TLS_MODEL_END

/*! \brief Stores the exception being handled for TVM_FFI_CHECK_SAFE_CALL; returns -1. */
TVM_FFI_COLD inline int SetSafeCallRaised() noexcept {
  try {
    try {
      throw;
    } catch (const Error& e) {
      SafeCallRaised() = e;
    } catch (const std::exception& e) {
      // apache-tvm-ffi's kind for an exception that is no tvm::ffi::Error.
      SafeCallRaised() = Error("InternalError", e.what());
    } catch (...) {
      SafeCallRaised() = Error("InternalError", "a C++ exception of unknown type");
    }
  } catch (...) {  // building the Error ran out of memory; the code still says it failed
  }
  return -1;
}

/*! \brief Throws what the failed safe call stored (`code` is its return code). */
[[noreturn]] TVM_FFI_COLD inline void ThrowSafeCallRaised(int code) {
  std::optional<Error>& raised = SafeCallRaised();
  if (raised.has_value()) {
    Error error = *raised;
    raised.reset();
    throw error;
  }
  throw Error("InternalError", Concat({"a safe call returned ", DecimalText(code),
                                       " without an error raised in this library"}));
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief compat: apache-tvm-ffi. Brackets the body of a C function that returns 0 on success:
 * an exception thrown inside becomes the return code -1, and the error is kept (per thread, in
 * this library) for TVM_FFI_CHECK_SAFE_CALL. The body may not return on its own.
 *
 *   extern "C" int Run(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
 *     TVM_FFI_SAFE_CALL_BEGIN();
 *     ...
 *     TVM_FFI_SAFE_CALL_END();
 *   }
 */
#define TVM_FFI_SAFE_CALL_BEGIN() \
  try {                           \
  (void)0
#define TVM_FFI_SAFE_CALL_END()                             \
  return 0;                                                 \
  }                                                         \
  catch (...) {                                             \
    return ::tvm::ffi::detail::SetSafeCallRaised();         \
  }                                                         \
  TVM_FFI_UNREACHABLE()
/*! \brief compat: apache-tvm-ffi. Throws the kept error when `func` (a safe call) returns non-zero. */
#define TVM_FFI_CHECK_SAFE_CALL(func)                                                  \
  {                                                                                    \
    const int tvm_ffi_safe_call_code_ = (func);                                        \
    if (TVM_FFI_UNLIKELY(tvm_ffi_safe_call_code_ != 0)) {                              \
      ::tvm::ffi::detail::ThrowSafeCallRaised(tvm_ffi_safe_call_code_);                \
    }                                                                                  \
  }

/*!
 * \brief Exports `...` (a function name or a lambda expression; variadic so a lambda body may
 * contain commas) as the C symbol `__tvm_ffi_<Name>`.
 *
 * The callable lives in a function-local static: for a function pointer or a lambda without
 * captures that is constant-initialized, so the call compiles to a direct call. The expansion
 * ends with the function's body, so it may be followed by `;` (an empty declaration, valid
 * since C++11) or not.
 */
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(Name, ...)                                                 \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi_##Name(const TVMFFICallContext* ctx,               \
                                                     const TVMFFIAny* args, int32_t num_args,    \
                                                     TVMFFIResult* result) {                     \
    static const auto tvm_ffi_callable_ = (__VA_ARGS__);                                         \
    using TvmFfiExportTraits_ =                                                                  \
        ::tvm::ffi::detail::ExportTraits<std::remove_cv_t<decltype(tvm_ffi_callable_)>>;         \
    if (TVM_FFI_UNLIKELY(num_args == TVM_FFI_QUERY_INFO)) {                                      \
      static const TVMFFIFunctionInfo* const tvm_ffi_info_ =                                     \
          TvmFfiExportTraits_::NewFunctionInfo(#Name);                                           \
      return ::tvm::ffi::detail::SetFunctionInfoResult(tvm_ffi_info_, result);                   \
    }                                                                                            \
    return TvmFfiExportTraits_::Call(tvm_ffi_callable_, #Name, ctx, args, num_args, result);     \
  }

#endif  // TVM_FFI_DETAIL_FUNCTION_H_
