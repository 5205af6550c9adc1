/*
 * tvm::ffi::Variant<Ts...>: a value of one of several types. As a parameter of an exported
 * function it takes the first alternative, in order, that the argument converts to (so list
 * `double` before `int64_t` only if an int should become a double); as a result it returns the
 * alternative it holds. A thin layer over std::variant.
 */
#ifndef TVM_FFI_CONTAINER_VARIANT_H_
#define TVM_FFI_CONTAINER_VARIANT_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/any_convert.h>
#include <tvm/ffi/error.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

template <typename... Ts>
class Variant {
  static_assert(sizeof...(Ts) > 0, "Variant needs at least one alternative");

 public:
  template <typename U, typename = std::enable_if_t<
                            !std::is_same_v<std::decay_t<U>, Variant> &&
                            std::is_constructible_v<std::variant<Ts...>, U&&>>>
  Variant(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT: implicit on purpose

  /*! \brief The value as a T when it holds one, else nothing. */
  template <typename T>
  std::optional<T> as() const {
    if (const T* value = std::get_if<T>(&value_)) return *value;
    return std::nullopt;
  }
  /*! \brief The value as a T; TypeError when it holds another alternative. */
  template <typename T>
  T get() const {
    if (const T* value = std::get_if<T>(&value_)) return *value;
    throw Error("TypeError", "Variant::get<T>(): the variant holds another alternative");
  }
  template <typename T>
  bool holds() const noexcept {
    return std::holds_alternative<T>(value_);
  }
  /*! \brief The index of the alternative it holds, in the order of Ts. */
  size_t index() const noexcept { return value_.index(); }
  const std::variant<Ts...>& AsStdVariant() const noexcept { return value_; }

 private:
  std::variant<Ts...> value_;
};

namespace detail {

/*!
 * \brief std::variant and Variant: an argument takes the first alternative it converts to; a
 * result is its alternative's.
 */
template <typename V, typename... Ts>
struct VariantTraits {
  static constexpr bool kArg = (true && ... && TypeTraits<Ts>::kArg);
  static constexpr bool kResult = (true && ... && TypeTraits<Ts>::kResult);
  static constexpr bool kInlineResult = (true && ... && TypeTraits<Ts>::kInlineResult);
  static constexpr bool kTopLevelOnly = (false || ... || IsTopLevelOnly<Ts>::value);
  static void AppendName(std::string* out) {
    size_t i = 0;
    ((*out += (i++ == 0 ? "" : " | "), TypeTraits<Ts>::AppendName(out)), ...);
  }
  static V FromArg(const TVMFFIAny& v) {
    std::optional<V> result;
    // Left to right; the first alternative that converts wins.
    (void)(... || TryAlternative<Ts>(v, &result));
    if (!result.has_value()) ThrowTypeMismatch<V>(v);
    return std::move(*result);
  }
  static size_t ResultBytes(const V& v) {
    return std::visit(
        [](const auto& x) { return TypeTraits<std::decay_t<decltype(x)>>::ResultBytes(x); },
        AsStd(v));
  }
  static void ToResult(const V& v, TVMFFIAny* out, char** cursor) {
    std::visit(
        [&](const auto& x) { TypeTraits<std::decay_t<decltype(x)>>::ToResult(x, out, cursor); },
        AsStd(v));
  }

 private:
  template <typename T>
  static bool TryAlternative(const TVMFFIAny& v, std::optional<V>* result) {
    try {
      result->emplace(TypeTraits<T>::FromArg(v));
      return true;
    } catch (const ConversionError&) {
      return false;
    }
  }
  static const std::variant<Ts...>& AsStd(const V& v) {
    if constexpr (std::is_same_v<V, std::variant<Ts...>>) {
      return v;
    } else {
      return v.AsStdVariant();
    }
  }
};

template <typename... Ts>
struct TypeTraits<Variant<Ts...>> : VariantTraits<Variant<Ts...>, Ts...> {};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_VARIANT_H_
