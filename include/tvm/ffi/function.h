/*
 * tvm::ffi::Function (a callable object: FunctionObj, whose C cell holds the safe call),
 * TypedFunction<R(Args...)>, PackedArgs, and TVM_FFI_DLL_EXPORT_TYPED_FUNC, which exports a
 * typed C++ function as the symbol `__tvm_ffi_<name>`:
 *
 *   int64_t AddOne(int64_t x) { return x + 1; }
 *   TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
 *
 * Functions made here set the cell's cpp_call to NULL and calls always go through safe_call,
 * so no C++ exception crosses a library: errors travel as error objects (error.h).
 */
#ifndef TVM_FFI_FUNCTION_H_
#define TVM_FFI_FUNCTION_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/export.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <string>
#include <string_view>
#include <utility>

// compat: apache-tvm-ffi. The standard headers its function.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#include <array>
#if __has_include(<compare>)
#include <compare>
#endif
#include <functional>
#include <unordered_map>

namespace tvm {
namespace ffi {

/*! \brief The arguments of a packed call: a view of size() values. */
class TVM_FFI_HIDDEN_MEMBERS PackedArgs {
 public:
  TVM_FFI_HIDDEN PackedArgs(const AnyView* data, int32_t size) noexcept
      : data_(data), size_(size) {}
  TVM_FFI_HIDDEN int32_t size() const noexcept { return size_; }
  TVM_FFI_HIDDEN AnyView operator[](int32_t i) const noexcept { return data_[i]; }
  TVM_FFI_HIDDEN const AnyView* data() const noexcept { return data_; }

 private:
  const AnyView* data_;
  int32_t size_;
};

/*! \brief A function object: the header, then the cell (safe_call, cpp_call) at offset 24. */
class TVM_FFI_HIDDEN_MEMBERS FunctionObj : public Object, public TVMFFIFunctionCell {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Function", FunctionObj, Object, kTVMFFIFunction);
  static constexpr bool _type_final = true;
  TVM_FFI_HIDDEN FunctionObj() noexcept : TVMFFIFunctionCell{nullptr, nullptr} {}
};

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief A FunctionObj over a C++ callable `int(const TVMFFIAny*, int32_t, TVMFFIAny*)`. */
template <typename Callable>
class FunctionObjImpl : public FunctionObj {
 public:
  explicit FunctionObjImpl(Callable callable) : callable_(std::move(callable)) {
    safe_call = &SafeCall;
    cpp_call = nullptr;  // never a C++-ABI shortcut: see the file comment
  }

 private:
  static int SafeCall(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
    auto* obj =
        static_cast<FunctionObjImpl*>(ObjectUnsafe::FromHeader(static_cast<TVMFFIObject*>(self)));
    return obj->callable_(args, num_args, result);
  }
  Callable callable_;
};

template <typename F>
struct TypedCallable {
  F func;
  std::string name;
  int operator()(const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) const noexcept {
    return SignatureOf<F>::Call(func, name.c_str(), args, num_args, result);
  }
};

/*! \brief func(PackedArgs args, Any* result). */
template <typename F>
struct PackedCallable {
  F func;
  int operator()(const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) const noexcept {
    try {
      Any value;
      func(PackedArgs(reinterpret_cast<const AnyView*>(args), num_args), &value);
      *result = AnyUnsafe::MoveToTVMFFIAny(std::move(value));
      return 0;
    } catch (...) {
      return RaiseCurrentException("<packed function>", kStageCall);
    }
  }
};

/*! \brief Calls a function object through its safe call; throws the callee's error. */
inline Any CallSafe(const TVMFFIObject* func, const TVMFFIAny* args, int32_t num_args) {
  if (TVM_FFI_UNLIKELY(func == nullptr)) {
    throw Error("RuntimeError", "calling an empty tvm::ffi::Function");
  }
  const auto* cell = static_cast<const FunctionObj*>(ObjectUnsafe::FromHeader(func));
  TVMFFIAny result;
  SetPOD(&result, kTVMFFINone);
  const int rc = cell->safe_call(const_cast<TVMFFIObject*>(func), args, num_args, &result);
  if (TVM_FFI_UNLIKELY(rc != 0)) {
    if (rc == -2) throw EnvErrorAlreadySet{};
    throw MoveFromRaised("a function call");
  }
  return AnyUnsafe::FromOwned(result);
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

namespace tvm {
namespace ffi {

/*! \brief A handle to a callable object: C++ (FromTyped, FromPacked), Python, or another library's.
 */
class TVM_FFI_HIDDEN_MEMBERS Function : public ObjectRef {
 public:
  TVM_FFI_DETAIL_NULLABLE_REF_METHODS(Function, ObjectRef, FunctionObj, TVM_FFI_HIDDEN);
  TVM_FFI_HIDDEN ~Function() = default;
  TVM_FFI_HIDDEN Function(std::nullptr_t) noexcept : ObjectRef(UnsafeInit{}) {}  // NOLINT

  /*! \brief Wraps a typed callable; arguments are checked as an exported function's are. */
  template <typename F>
  TVM_FFI_HIDDEN static Function FromTyped(F func, std::string name = "function") {
    using Impl = details::FunctionObjImpl<details::TypedCallable<F>>;
    return Function(make_object<Impl>(details::TypedCallable<F>{std::move(func), std::move(name)}));
  }
  /*! \brief Wraps `func(PackedArgs args, Any* result)`. */
  template <typename F>
  TVM_FFI_HIDDEN static Function FromPacked(F func) {
    using Impl = details::FunctionObjImpl<details::PackedCallable<F>>;
    return Function(make_object<Impl>(details::PackedCallable<F>{std::move(func)}));
  }

  /*! \brief Calls with the arguments as they are; an error the callee raised is thrown. */
  TVM_FFI_HIDDEN Any CallPacked(const AnyView* args, int32_t num_args) const {
    return details::CallSafe(details::ObjectUnsafe::HeaderOf(*this),
                             reinterpret_cast<const TVMFFIAny*>(args), num_args);
  }
  TVM_FFI_HIDDEN Any CallPacked(PackedArgs args) const {
    return CallPacked(args.data(), args.size());
  }
  // compat: apache-tvm-ffi (the result through a pointer)
  TVM_FFI_HIDDEN void CallPacked(PackedArgs args, Any* result) const { *result = CallPacked(args); }
  TVM_FFI_HIDDEN void CallPacked(const AnyView* args, int32_t num_args, Any* result) const {
    *result = CallPacked(args, num_args);
  }

  template <typename... Args>
  TVM_FFI_HIDDEN Any operator()(const Args&... args) const {
    const AnyView packed[sizeof...(Args) > 0 ? sizeof...(Args) : 1] = {AnyView(args)...};
    return CallPacked(packed, static_cast<int32_t>(sizeof...(Args)));
  }

  /*! \brief The global function registered under `name`, or nothing. */
  TVM_FFI_HIDDEN static Optional<Function> GetGlobal(std::string_view name) {
    const TVMFFIByteArray key{name.data(), name.size()};
    TVMFFIObjectHandle out = nullptr;
    if (TVMFFIFunctionGetGlobal(&key, &out) != 0) {
      throw details::MoveFromRaised("TVMFFIFunctionGetGlobal");
    }
    if (out == nullptr) return std::nullopt;
    return details::ObjectUnsafe::RefFromOwned<Function>(static_cast<TVMFFIObject*>(out));
  }
  /*! \brief The global function registered under `name`; ValueError when there is none. */
  TVM_FFI_HIDDEN static Function GetGlobalRequired(std::string_view name) {
    Optional<Function> func = GetGlobal(name);
    if (!func.has_value()) {
      TVM_FFI_THROW(ValueError) << "no global function is registered as '" << name << "'";
    }
    return *func;
  }
  /*! \brief Registers `func` under `name`; the runtime's error when taken (unless override). */
  TVM_FFI_HIDDEN static void SetGlobal(std::string_view name, const Function& func,
                                       bool can_override = false) {
    const TVMFFIByteArray key{name.data(), name.size()};
    if (TVMFFIFunctionSetGlobal(&key, details::ObjectUnsafe::HeaderOf(func),
                                can_override ? 1 : 0) != 0) {
      throw details::MoveFromRaised("TVMFFIFunctionSetGlobal");
    }
  }
};

template <typename FType>
class TypedFunction;

/*! \brief A Function with a C++ signature: arguments and result converted on each call. */
template <typename R, typename... Args>
class TVM_FFI_HIDDEN_MEMBERS TypedFunction<R(Args...)> {
 public:
  TVM_FFI_HIDDEN TypedFunction() noexcept = default;
  TVM_FFI_HIDDEN TypedFunction(std::nullptr_t) noexcept {}                 // NOLINT
  TVM_FFI_HIDDEN TypedFunction(Function func) : func_(std::move(func)) {}  // NOLINT
  template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<R, F, Args...> &&
                                                    !std::is_same_v<std::decay_t<F>, Function>>>
  TVM_FFI_HIDDEN TypedFunction(F func, std::string name = "function")  // NOLINT
      : func_(Function::FromTyped(std::move(func), std::move(name))) {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(TypedFunction);
  TVM_FFI_HIDDEN ~TypedFunction() = default;

  TVM_FFI_HIDDEN R operator()(Args... args) const {
    if constexpr (std::is_void_v<R>) {
      func_(args...);
    } else {
      return func_(args...).template cast<R>();
    }
  }
  TVM_FFI_HIDDEN operator Function() const { return func_; }  // NOLINT
  TVM_FFI_HIDDEN const Function& packed() const noexcept { return func_; }
  TVM_FFI_HIDDEN bool defined() const noexcept { return func_.defined(); }
  TVM_FFI_HIDDEN bool operator==(std::nullptr_t) const noexcept { return !func_.defined(); }
  TVM_FFI_HIDDEN bool operator!=(std::nullptr_t) const noexcept { return func_.defined(); }

 private:
  Function func_;
};

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

template <>
struct HasOwnTraits<Function> : std::true_type {};
template <>
struct TypeTraits<Function> : ObjectRefTraits<Function> {
  static void TypeName(std::string* out) { *out += "Function"; }
};

template <typename R, typename... Args>
struct TypeTraits<TypedFunction<R(Args...)>> {
  using Self = TypedFunction<R(Args...)>;
  static constexpr bool kEnabled = true;
  static void CopyToView(const Self& v, TVMFFIAny* out) noexcept {
    TypeTraits<Function>::CopyToView(v.packed(), out);
  }
  static void MoveToAny(Self v, TVMFFIAny* out) noexcept {
    TypeTraits<Function>::MoveToAny(v.packed(), out);
  }
  static Maybe<Self> TryFromView(const TVMFFIAny& v) {
    Maybe<Function> f = TypeTraits<Function>::TryFromView(v);
    if (!f.has_value()) return std::nullopt;
    return Self(std::move(*f));
  }
  static void TypeName(std::string* out) { *out += "Function"; }
  static void Schema(std::string* out) { *out += R"({"type":"ffi.Function"})"; }
};

/*! \brief The function exported by TVM_FFI_DLL_EXPORT_TYPED_FUNC (its safe-call body). */
template <typename F>
int ExportCall(const F& func, const char* name, const TVMFFIAny* args, int32_t num_args,
               TVMFFIAny* result) noexcept {
  return SignatureOf<F>::Call(func, name, args, num_args, result);
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief compat: apache-tvm-ffi. Brackets the body of a hand-written safe-call function (the
 * C signature of c_api.h): an exception thrown inside becomes the return code -1 with the error
 * in the runtime's slot, as in an exported typed function. The body may not return itself.
 *
 *   TVM_FFI_DLL_EXPORT int __tvm_ffi_run(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* r) {
 *     TVM_FFI_SAFE_CALL_BEGIN();
 *     ...
 *     TVM_FFI_SAFE_CALL_END();
 *   }
 */
#define TVM_FFI_SAFE_CALL_BEGIN() \
  try {                           \
  (void)0
#define TVM_FFI_SAFE_CALL_END()                                                         \
  return 0;                                                                             \
  }                                                                                     \
  catch (...) {                                                                         \
    return ::tvm::ffi::details::RaiseCurrentException("<safe call>",                    \
                                                      ::tvm::ffi::details::kStageCall); \
  }                                                                                     \
  TVM_FFI_UNREACHABLE()
/*! \brief compat: apache-tvm-ffi. Throws the raised error when `func` (a safe call) fails. */
#define TVM_FFI_CHECK_SAFE_CALL(func)                                                     \
  {                                                                                       \
    const int tvm_ffi_safe_call_code_ = (func);                                           \
    if (TVM_FFI_UNLIKELY(tvm_ffi_safe_call_code_ != 0)) {                                 \
      if (tvm_ffi_safe_call_code_ == -2) throw ::tvm::ffi::details::EnvErrorAlreadySet{}; \
      throw ::tvm::ffi::details::MoveFromRaised(#func);                                   \
    }                                                                                     \
  }

/*!
 * \brief Exports `...` (a function name or a lambda expression; variadic so a lambda body may
 * contain commas) as `__tvm_ffi_<ExportName>`, with its type schema as
 * `__tvm_ffi__metadata_<ExportName>` (the loader reads which parameters are DLTensor*).
 */
// The callable lives in a function-local static (constant-initialized for a function pointer or
// a lambda without captures: the call compiles to a direct call). The expansion ends with a
// function body, so a `;` after it is optional, as with apache-tvm-ffi's macro.
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(ExportName, ...)                                            \
  static const auto& TvmFfiExported_##ExportName() {                                              \
    static const auto callable = (__VA_ARGS__);                                                   \
    return callable;                                                                              \
  }                                                                                               \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi__metadata_##ExportName(                             \
      void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {                   \
    (void)self, (void)args, (void)num_args;                                                       \
    return ::tvm::ffi::details::ExportMetadata<                                                   \
        std::decay_t<decltype(TvmFfiExported_##ExportName())>>(result);                           \
  }                                                                                               \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi_##ExportName(void* self, const TVMFFIAny* args,     \
                                                           int32_t num_args, TVMFFIAny* result) { \
    (void)self;                                                                                   \
    return ::tvm::ffi::details::ExportCall(TvmFfiExported_##ExportName(), #ExportName, args,      \
                                           num_args, result);                                     \
  }

/*! \brief The docstring of an exported function, as `__tvm_ffi__doc_<ExportName>`. */
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC(ExportName, DocString)                \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi__doc_##ExportName(                \
      void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) { \
    (void)self, (void)args, (void)num_args;                                     \
    return ::tvm::ffi::details::SetRuntimeString(DocString, result);            \
  }

#endif  // TVM_FFI_FUNCTION_H_
