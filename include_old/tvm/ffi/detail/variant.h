/*
 * The implementation behind tvm/ffi/container/variant.h (the public header).
 *
 * tvm::ffi::Variant<Ts...>: a value of one of several types. As a parameter of an exported
 * function it takes the first alternative, in order, that the argument converts to (so list
 * `double` before `int64_t` only if an int should become a double); as a result it returns the
 * alternative it holds. (std::variant converts the same way once extra/stl.h is included.)
 */
#ifndef TVM_FFI_DETAIL_VARIANT_H_
#define TVM_FFI_DETAIL_VARIANT_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/any_convert.h>
#include <tvm/ffi/detail/error.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <initializer_list>
#include <new>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

namespace detail {
template <typename T, typename... Ts>
constexpr size_t IndexOf() {
  size_t i = 0;
  const bool found = ((std::is_same_v<T, Ts> ? true : (++i, false)) || ...);
  return found ? i : sizeof...(Ts);
}
template <typename T>
constexpr T MaxOf(std::initializer_list<T> values) {
  T best = 0;
  for (T v : values) best = v > best ? v : best;
  return best;
}
}  // namespace detail

/*!
 * A tagged union written out rather than std::variant: <variant> alone would add a fifth to
 * the parse cost of every wrapper that includes tensor.h.
 */
template <typename... Ts>
class Variant {
  static_assert(sizeof...(Ts) > 0, "Variant needs at least one alternative");

 public:
  template <typename U, size_t I = detail::IndexOf<std::decay_t<U>, Ts...>(),
            typename = std::enable_if_t<(I < sizeof...(Ts))>>
  Variant(U&& value) {  // NOLINT: implicit on purpose
    new (storage_) std::decay_t<U>(std::forward<U>(value));
    index_ = I;
  }
  Variant(const Variant& other) { other.Visit([this](const auto& v) { Emplace(v); }); }
  Variant(Variant&& other) noexcept {
    other.Visit([this](auto& v) { Emplace(std::move(v)); });
  }
  Variant& operator=(const Variant& other) {
    if (this != &other) {
      Variant copy(other);
      Destroy();
      copy.Visit([this](auto& v) { Emplace(std::move(v)); });
    }
    return *this;
  }
  Variant& operator=(Variant&& other) noexcept {
    if (this != &other) {
      Destroy();
      other.Visit([this](auto& v) { Emplace(std::move(v)); });
    }
    return *this;
  }
  ~Variant() { Destroy(); }

  /*! \brief The value as a T when it holds one, else nothing. */
  template <typename T>
  std::optional<T> as() const {
    if (holds<T>()) return *reinterpret_cast<const T*>(storage_);
    return std::nullopt;
  }
  /*! \brief The value as a T; TypeError when it holds another alternative. */
  template <typename T>
  T get() const {
    if (holds<T>()) return *reinterpret_cast<const T*>(storage_);
    throw Error("TypeError", "Variant::get<T>(): the variant holds another alternative");
  }
  template <typename T>
  bool holds() const noexcept {
    return index_ == detail::IndexOf<T, Ts...>();
  }
  /*! \brief The index of the alternative it holds, in the order of Ts. */
  size_t index() const noexcept { return index_; }

  /*! \brief Calls `f` with the value it holds (as its own type). */
  template <typename F>
  void Visit(F&& f) const {
    size_t i = 0;
    (void)((index_ == i++ ? (f(*reinterpret_cast<const Ts*>(storage_)), true) : false) || ...);
  }

 private:
  template <typename F>
  void Visit(F&& f) {
    size_t i = 0;
    (void)((index_ == i++ ? (f(*reinterpret_cast<Ts*>(storage_)), true) : false) || ...);
  }
  template <typename U>
  void Emplace(U&& value) {
    new (storage_) std::decay_t<U>(std::forward<U>(value));
    index_ = detail::IndexOf<std::decay_t<U>, Ts...>();
  }
  void Destroy() noexcept {
    Visit([](auto& v) {
      using T = std::decay_t<decltype(v)>;
      v.~T();
    });
    index_ = sizeof...(Ts);
  }

  alignas(Ts...) unsigned char storage_[detail::MaxOf<size_t>({sizeof(Ts)...})];
  size_t index_ = sizeof...(Ts);
};

namespace detail {

/*! \brief Calls f with the value a Variant (or, in extra/stl.h, a std::variant) holds. */
template <typename... Ts, typename F>
void VisitValue(const Variant<Ts...>& v, F&& f) {
  v.Visit(std::forward<F>(f));
}

/*!
 * \brief Variant and std::variant: an argument takes the first alternative it converts to; a
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
    size_t bytes = 0;
    VisitValue(v, [&](const auto& x) {
      bytes = TypeTraits<std::decay_t<decltype(x)>>::ResultBytes(x);
    });
    return bytes;
  }
  static void ToResult(const V& v, TVMFFIAny* out, char** cursor) {
    VisitValue(v, [&](const auto& x) {
      TypeTraits<std::decay_t<decltype(x)>>::ToResult(x, out, cursor);
    });
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
};

template <typename... Ts>
struct TypeTraits<Variant<Ts...>> : VariantTraits<Variant<Ts...>, Ts...> {};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_VARIANT_H_
