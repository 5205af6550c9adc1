/*
 * Standard-library types as arguments and results: std::vector<T> and std::array<T, N>
 * (as an Array), std::tuple<Ts...> (as a Tuple), std::optional<T> (T or None) and
 * std::function<R(Args...)> (as a Function). Each converts by value at the boundary.
 */
#ifndef TVM_FFI_EXTRA_STL_H_
#define TVM_FFI_EXTRA_STL_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>

#include <array>
#include <functional>
#include <optional>
#include <tuple>
#include <vector>

// compat: apache-tvm-ffi. The standard headers its stl.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#include <map>
#include <variant>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief A container that travels as an Array of its elements' values. */
template <typename C, typename T>
struct SequenceTraits {
  static constexpr bool kEnabled = TypeTraits<T>::kEnabled;
  static void CopyToView(const C&, TVMFFIAny*) = delete;  // an Array must be built: MoveToAny
  static void MoveToAny(const C& v, TVMFFIAny* out) {
    TypeTraits<Array<T>>::MoveToAny(Array<T>(v.begin(), v.end()), out);
  }
  static void TypeName(std::string* out) { TypeTraits<Array<T>>::TypeName(out); }
  static void Schema(std::string* out) { TypeTraits<Array<T>>::Schema(out); }
  /*! \brief The elements of an Array value, each converted (errors name the element). */
  static std::optional<std::vector<T>> Elements(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIArray) return std::nullopt;
    const auto* src = static_cast<const ArrayObj*>(ObjectUnsafe::FromHeader(v.v_obj));
    std::vector<T> out;
    out.reserve(src->size_());
    for (size_t i = 0; i < src->size_(); ++i) {
      out.push_back(ConvertElement<T>(AnyUnsafe::View((*src)[i]), i));
    }
    return out;
  }
};

template <typename T>
struct TypeTraits<std::vector<T>> : SequenceTraits<std::vector<T>, T> {
  static std::optional<std::vector<T>> TryFromView(const TVMFFIAny& v) {
    return SequenceTraits<std::vector<T>, T>::Elements(v);
  }
};

template <typename T, size_t N>
struct TypeTraits<std::array<T, N>> : SequenceTraits<std::array<T, N>, T> {
  static std::optional<std::array<T, N>> TryFromView(const TVMFFIAny& v) {
    std::optional<std::vector<T>> items = SequenceTraits<std::array<T, N>, T>::Elements(v);
    if (!items.has_value()) return std::nullopt;
    if (items->size() != N) {
      throw ConversionError{"", "", "",
                            Concat({"must have ", DecimalText(N), " elements (got ",
                                    DecimalText(items->size()), ")"})};
    }
    std::array<T, N> out;
    for (size_t i = 0; i < N; ++i) out[i] = std::move((*items)[i]);
    return out;
  }
};

template <typename T>
struct TypeTraits<std::optional<T>> {
  static constexpr bool kEnabled = TypeTraits<T>::kEnabled;
  static void MoveToAny(std::optional<T> v, TVMFFIAny* out) {
    TypeTraits<Optional<T>>::MoveToAny(Optional<T>(std::move(v)), out);
  }
  static std::optional<std::optional<T>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index == kTVMFFINone) return std::optional<T>();
    std::optional<T> value = TypeTraits<T>::TryFromView(v);
    if (!value.has_value()) return std::nullopt;
    return value;
  }
  static void TypeName(std::string* out) { TypeTraits<Optional<T>>::TypeName(out); }
  static void Schema(std::string* out) { TypeTraits<Optional<T>>::Schema(out); }
};

template <typename... Ts>
struct TypeTraits<std::tuple<Ts...>> {
  using Tup = Tuple<Ts...>;
  static constexpr bool kEnabled = TypeTraits<Tup>::kEnabled;
  static void MoveToAny(std::tuple<Ts...> v, TVMFFIAny* out) {
    TypeTraits<Tup>::MoveToAny(std::apply([](auto&&... e) { return Tup(std::move(e)...); }, v),
                               out);
  }
  static std::optional<std::tuple<Ts...>> TryFromView(const TVMFFIAny& v) {
    std::optional<Tup> t = TypeTraits<Tup>::TryFromView(v);
    if (!t.has_value()) return std::nullopt;
    return Unpack(*t, std::index_sequence_for<Ts...>{});
  }
  static void TypeName(std::string* out) { TypeTraits<Tup>::TypeName(out); }
  static void Schema(std::string* out) { TypeTraits<Tup>::Schema(out); }

 private:
  template <size_t... I>
  static std::tuple<Ts...> Unpack(const Tup& t, std::index_sequence<I...>) {
    return std::tuple<Ts...>(t.template get<I>()...);
  }
};

template <typename R, typename... Args>
struct TypeTraits<std::function<R(Args...)>> {
  using Typed = TypedFunction<R(Args...)>;
  static constexpr bool kEnabled = true;
  static void MoveToAny(std::function<R(Args...)> v, TVMFFIAny* out) {
    TypeTraits<Typed>::MoveToAny(Typed(std::move(v), "std::function"), out);
  }
  static std::optional<std::function<R(Args...)>> TryFromView(const TVMFFIAny& v) {
    std::optional<Typed> f = TypeTraits<Typed>::TryFromView(v);
    if (!f.has_value()) return std::nullopt;
    return std::function<R(Args...)>(std::move(*f));
  }
  static void TypeName(std::string* out) { *out += "Function"; }
  static void Schema(std::string* out) { *out += R"({"type":"ffi.Function"})"; }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_EXTRA_STL_H_
