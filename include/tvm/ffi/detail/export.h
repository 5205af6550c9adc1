/*
 * The body of every typed call: arity check, argument conversion with messages that name the
 * function and the argument, the call, the result, and every exception turned into an error
 * in the runtime's per-thread slot (the safe-call convention of c_api.h). Used by
 * TVM_FFI_DLL_EXPORT_TYPED_FUNC, Function::FromTyped and reflection's methods.
 */
#ifndef TVM_FFI_DETAIL_EXPORT_H_
#define TVM_FFI_DETAIL_EXPORT_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/detail/type_traits.h>
#include <tvm/ffi/error.h>

#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief Where a call was when it threw, to word conversion errors. */
constexpr int32_t kStageCall = -1;    // inside the user's function
constexpr int32_t kStageResult = -2;  // converting the result
// stage >= 0: converting argument `stage` (0-based)

TVM_FFI_COLD inline int RaiseFromCStr(const char* kind, const std::string& message) noexcept {
  TVMFFIErrorSetRaisedFromCStr(kind, message.c_str());
  return -1;
}

/*! \brief Leaves the exception being handled in the runtime's slot; returns -1. */
TVM_FFI_COLD inline int RaiseCurrentException(const char* func_name, int32_t stage) noexcept {
  try {
    try {
      throw;
    } catch (const ConversionError& e) {
      // "f() argument 2[1] must be int, not str" / "f() argument 1 must fit in ..."
      const std::string subject = Concat(
          {func_name, "() ", stage >= 0 ? "argument " : "result",
           stage >= 0 ? std::string_view(DecimalText(stage + 1)) : std::string_view(), e.path});
      if (!e.value_error.empty()) return RaiseFromCStr("ValueError", subject + " " + e.value_error);
      return RaiseFromCStr("TypeError",
                           Concat({subject, " must be ", e.expected, ", not ", e.received}));
    } catch (const Error& e) {
      // The slot adds a reference of its own (c_api.h); e keeps and releases its one.
      TVMFFIErrorSetRaised(ObjectUnsafe::HeaderOf(e.object()));
      return -1;
    } catch (const ErrorRaisedInRuntime&) {
      return -1;  // already in the slot, as the runtime worded it
    } catch (const EnvErrorAlreadySet&) {
      return -2;  // pending in the caller's frontend
    } catch (const std::bad_alloc& e) {
      return RaiseFromCStr("MemoryError", e.what());
    } catch (const std::exception& e) {
      return RaiseFromCStr("RuntimeError", e.what());
    } catch (...) {
      return RaiseFromCStr("RuntimeError",
                           Concat({func_name, "() threw a C++ exception of unknown type"}));
    }
  } catch (...) {  // composing the message itself failed (out of memory)
    TVMFFIErrorSetRaisedFromCStr("MemoryError", "out of memory while reporting an error");
    return -1;
  }
}

TVM_FFI_COLD inline int RaiseArgCount(const char* func_name, int32_t expected,
                                      int32_t given) noexcept {
  try {
    return RaiseFromCStr("TypeError", Concat({func_name, "() takes ", DecimalText(expected),
                                              expected == 1 ? " argument (" : " arguments (",
                                              DecimalText(given), " given)"}));
  } catch (...) {
    TVMFFIErrorSetRaisedFromCStr("MemoryError", "out of memory while reporting an error");
    return -1;
  }
}

/*! \brief One converted argument; an aggregate of these is braced-initialized left to right. */
template <size_t I, typename T>
struct ArgSlot {
  T value;
};
template <typename Indices, typename... Ts>
struct ArgPack;
template <size_t... I, typename... Ts>
struct ArgPack<std::index_sequence<I...>, Ts...> : ArgSlot<I, Ts>... {};

template <typename R, typename... Args>
struct Signature {
  static constexpr int32_t kNumArgs = static_cast<int32_t>(sizeof...(Args));
  static_assert((TypeTraits<ValueType<Args>>::kEnabled && ...),
                "unsupported argument type for a tvm::ffi function");
  static_assert(std::is_void_v<R> || TypeTraits<ValueType<R>>::kEnabled,
                "unsupported result type for a tvm::ffi function");

  /*! \brief The safe call: 0 with *result set, or -1 with the error in the runtime's slot. */
  template <typename F>
  static int Call(const F& func, const char* name, const TVMFFIAny* args, int32_t num_args,
                  TVMFFIAny* result) noexcept {
    if (TVM_FFI_UNLIKELY(num_args != kNumArgs)) return RaiseArgCount(name, kNumArgs, num_args);
    int32_t stage = 0;
    try {
      CallUnpacked(func, args, result, &stage, std::index_sequence_for<Args...>{});
      return 0;
    } catch (...) {
      return RaiseCurrentException(name, stage);
    }
  }

  /*! \brief The JSON schema apache-tvm-ffi's metadata export states for this signature. */
  TVM_FFI_COLD static std::string Schema() {
    std::string out = R"({"type":"ffi.Function","named_args":{"return":[)";
    if constexpr (std::is_void_v<R>) {
      out += R"({"type":"None"})";
    } else {
      TypeTraits<ValueType<R>>::Schema(&out);
    }
    out += R"(],"params":[)";
    bool first = true;
    ((out += first ? "" : ",", first = false, TypeTraits<ValueType<Args>>::Schema(&out)), ...);
    out += "]}}";
    return out;
  }

 private:
  template <typename T>
  static ValueType<T> ConvertArg(const TVMFFIAny& arg, int32_t index, int32_t* stage) {
    *stage = index;
    Maybe<ValueType<T>> value = TypeTraits<ValueType<T>>::TryFromView(arg);
    if (TVM_FFI_UNLIKELY(!value.has_value())) ThrowTypeMismatch<ValueType<T>>(arg);
    return std::move(*value);
  }

  template <typename F, size_t... I>
  static void CallUnpacked(const F& func, const TVMFFIAny* args, TVMFFIAny* result, int32_t* stage,
                           std::index_sequence<I...>) {
    // Braced initialization converts left to right: the first bad argument is the one reported.
    ArgPack<std::index_sequence<I...>, ValueType<Args>...> values{
        {ConvertArg<Args>(args[I], static_cast<int32_t>(I), stage)}...};
    (void)args, (void)values;
    *stage = kStageCall;
    if constexpr (std::is_void_v<R>) {
      func(std::move(static_cast<ArgSlot<I, ValueType<Args>>&>(values).value)...);
      SetPOD(result, kTVMFFINone);
    } else {
      ValueType<R> value =
          func(std::move(static_cast<ArgSlot<I, ValueType<Args>>&>(values).value)...);
      *stage = kStageResult;
      TypeTraits<ValueType<R>>::MoveToAny(std::move(value), result);
    }
  }
};

/*! \brief The Signature of a function pointer, a lambda or a functor. */
template <typename F>
struct SignatureOf : SignatureOf<decltype(&F::operator())> {};
template <typename R, typename... Args>
struct SignatureOf<R (*)(Args...)> : Signature<R, Args...> {
  using FuncType = R(Args...);
};
template <typename R, typename... Args>
struct SignatureOf<R (*)(Args...) noexcept> : SignatureOf<R (*)(Args...)> {};
template <typename C, typename R, typename... Args>
struct SignatureOf<R (C::*)(Args...) const> : SignatureOf<R (*)(Args...)> {};
template <typename C, typename R, typename... Args>
struct SignatureOf<R (C::*)(Args...) const noexcept> : SignatureOf<R (*)(Args...)> {};
template <typename C, typename R, typename... Args>
struct SignatureOf<R (C::*)(Args...)> : SignatureOf<R (*)(Args...)> {};
template <typename C, typename R, typename... Args>
struct SignatureOf<R (C::*)(Args...) noexcept> : SignatureOf<R (*)(Args...)> {};

/*! \brief A string result that the runtime owns (it outlives this library). */
inline int SetRuntimeString(const std::string& text, TVMFFIAny* result) noexcept {
  const TVMFFIByteArray bytes{text.data(), text.size()};
  return TVMFFIStringFromByteArray(&bytes, result);
}

/*! \brief The metadata export: {"type_schema": "<the signature's schema as a JSON string>"}. */
TVM_FFI_COLD inline int SetMetadataResult(const std::string& schema, TVMFFIAny* result) {
  std::string out = R"({"type_schema":")";
  for (char c : schema) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += "\"}";
  return SetRuntimeString(out, result);
}

template <typename F>
TVM_FFI_COLD int ExportMetadata(TVMFFIAny* result) noexcept {
  try {
    return SetMetadataResult(SignatureOf<F>::Schema(), result);
  } catch (...) {
    return RaiseCurrentException("metadata", kStageCall);
  }
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_EXPORT_H_
