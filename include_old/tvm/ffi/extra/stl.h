/*
 * Standard-library types as parameters and results of exported functions, beside the ones
 * the core already takes (std::string, std::vector, std::optional, std::tuple):
 * std::map and std::unordered_map (a dict), std::variant (the first alternative that
 * converts) and std::function (a callable: Python passes one in, or C++ returns one).
 */
#ifndef TVM_FFI_EXTRA_STL_H_
#define TVM_FFI_EXTRA_STL_H_

#include <tvm/ffi/detail/variant.h>
#include <tvm/ffi/detail/container_convert.h>
#include <tvm/ffi/detail/function.h>
#include <tvm/ffi/detail/names.h>  // the names apache-tvm-ffi's header brings

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

template <typename K, typename V, typename... Rest>
struct TypeTraits<std::map<K, V, Rest...>> : MapTraits<std::map<K, V, Rest...>, K, V> {};
template <typename K, typename V, typename... Rest>
struct TypeTraits<std::unordered_map<K, V, Rest...>>
    : MapTraits<std::unordered_map<K, V, Rest...>, K, V> {};

template <typename... Ts, typename F>
void VisitValue(const std::variant<Ts...>& v, F&& f) {
  std::visit(std::forward<F>(f), v);
}

template <typename... Ts>
struct TypeTraits<std::variant<Ts...>> : VariantTraits<std::variant<Ts...>, Ts...> {};

/*!
 * \brief std::function<R(Args...)>: an argument is a callable the C++ side may keep and call
 * (its result converted to R); a result becomes a Function.
 */
template <typename R, typename... Args>
struct TypeTraits<std::function<R(Args...)>> {
  using F = std::function<R(Args...)>;
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static constexpr bool kTopLevelOnly = true;
  static void AppendName(std::string* out) { *out += "Callable"; }
  static F FromArg(const TVMFFIAny& v) {
    Function func = TypeTraits<Function>::FromArg(v);
    return [func](Args... args) -> R {
      if constexpr (std::is_void_v<R>) {
        func(args...);
      } else {
        return func(args...).template cast<R>();
      }
    };
  }
  static size_t ResultBytes(const F&) { return 0; }
  static void ToResult(const F& v, TVMFFIAny* out, char** cursor) {
    if (!v) {
      SetScalar(out, kTVMFFINone);
      out->v_int64 = 0;
      return;
    }
    TypeTraits<Function>::ToResult(Function::FromTyped(v), out, cursor);
  }
};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_EXTRA_STL_H_
