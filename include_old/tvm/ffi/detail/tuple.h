/*
 * The implementation behind tvm/ffi/container/tuple.h (the public header).
 *
 * tvm::ffi::Tuple<Ts...>: a fixed-size group of values of different types. As a parameter it
 * accepts a Python tuple or list of exactly that length; as a result it comes back as a
 * tuple. get<I>() and structured bindings read the elements.
 */
#ifndef TVM_FFI_DETAIL_TUPLE_H_
#define TVM_FFI_DETAIL_TUPLE_H_

#include <tvm/ffi/base.h>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

template <typename... Ts>
class Tuple;

namespace detail {
template <typename T>
struct IsTuple : std::false_type {};
template <typename... Ts>
struct IsTuple<Tuple<Ts...>> : std::true_type {};
}  // namespace detail

template <typename... Ts>
class Tuple {
 public:
  Tuple() = default;
  template <typename... Us,
            typename = std::enable_if_t<sizeof...(Us) == sizeof...(Ts) && sizeof...(Ts) != 0 &&
                                        !(sizeof...(Us) == 1 &&
                                          (detail::IsTuple<std::decay_t<Us>>::value && ...)) &&
                                        (std::is_constructible_v<Ts, Us&&> && ...)>>
  Tuple(Us&&... values) : items_(std::forward<Us>(values)...) {}  // NOLINT
  Tuple(std::tuple<Ts...> items) : items_(std::move(items)) {}    // NOLINT
  // compat: apache-tvm-ffi (a Tuple of other element types converts element by element, as a
  // deduced `Tuple(a, b)` does into a declared result type)
  template <typename... Us,
            typename = std::enable_if_t<sizeof...(Us) == sizeof...(Ts) &&
                                        !std::is_same_v<Tuple<Us...>, Tuple<Ts...>> &&
                                        (std::is_constructible_v<Ts, const Us&> && ...)>>
  Tuple(const Tuple<Us...>& other) : items_(other.as_std()) {}  // NOLINT
  template <typename... Us,
            typename = std::enable_if_t<sizeof...(Us) == sizeof...(Ts) &&
                                        !std::is_same_v<Tuple<Us...>, Tuple<Ts...>> &&
                                        (std::is_constructible_v<Ts, Us&&> && ...)>>
  Tuple(Tuple<Us...>&& other) : items_(std::move(other).as_std()) {}  // NOLINT

  static constexpr size_t size() noexcept { return sizeof...(Ts); }

  template <size_t I>
  const std::tuple_element_t<I, std::tuple<Ts...>>& get() const& noexcept {
    return std::get<I>(items_);
  }
  template <size_t I>
  std::tuple_element_t<I, std::tuple<Ts...>>& get() & noexcept {
    return std::get<I>(items_);
  }
  template <size_t I>
  std::tuple_element_t<I, std::tuple<Ts...>>&& get() && noexcept {
    return std::get<I>(std::move(items_));
  }
  template <size_t I, typename U>
  void Set(U&& value) {
    std::get<I>(items_) = std::forward<U>(value);
  }

  const std::tuple<Ts...>& as_std() const& noexcept { return items_; }
  std::tuple<Ts...>&& as_std() && noexcept { return std::move(items_); }
  operator std::tuple<Ts...>() const { return items_; }  // NOLINT: implicit on purpose

 private:
  std::tuple<Ts...> items_;
};

// compat: apache-tvm-ffi (`Tuple(a, b)` deduces its element types)
template <typename... Us>
Tuple(Us&&...) -> Tuple<std::remove_cv_t<std::remove_reference_t<Us>>...>;

// compat: apache-tvm-ffi (`get<I>(tuple)`, found by argument-dependent lookup)
template <size_t I, typename... Ts>
std::tuple_element_t<I, std::tuple<Ts...>> get(const Tuple<Ts...>& t) {
  return t.template get<I>();
}
template <size_t I, typename... Ts>
std::tuple_element_t<I, std::tuple<Ts...>> get(Tuple<Ts...>&& t) {
  return std::move(t).template get<I>();
}

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// Structured bindings: auto [a, b] = tuple;
namespace std {
template <typename... Ts>
struct tuple_size<::tvm::ffi::Tuple<Ts...>> : std::integral_constant<size_t, sizeof...(Ts)> {};
template <size_t I, typename... Ts>
struct tuple_element<I, ::tvm::ffi::Tuple<Ts...>> : tuple_element<I, std::tuple<Ts...>> {};
}  // namespace std

#endif  // TVM_FFI_DETAIL_TUPLE_H_
