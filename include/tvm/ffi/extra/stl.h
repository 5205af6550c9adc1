/*
 * Standard-library types as arguments and results: std::vector<T> and std::array<T, N>
 * (as an Array), std::map and std::unordered_map (as a Map), std::tuple<Ts...> (as a Tuple),
 * std::optional<T> (T or None), std::variant (the alternative it holds) and
 * std::function<R(Args...)> (as a Function). Each converts by value at the boundary.
 */
#ifndef TVM_FFI_EXTRA_STL_H_
#define TVM_FFI_EXTRA_STL_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/list.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/object.h>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

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
  static Maybe<std::vector<T>> Elements(const TVMFFIAny& v) {
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
  static Maybe<std::vector<T>> TryFromView(const TVMFFIAny& v) {
    return SequenceTraits<std::vector<T>, T>::Elements(v);
  }
};

template <typename T, size_t N>
struct TypeTraits<std::array<T, N>> : SequenceTraits<std::array<T, N>, T> {
  static Maybe<std::array<T, N>> TryFromView(const TVMFFIAny& v) {
    Maybe<std::vector<T>> items = SequenceTraits<std::array<T, N>, T>::Elements(v);
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
  static Maybe<std::optional<T>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index == kTVMFFINone) return std::optional<T>();
    Maybe<T> value = TypeTraits<T>::TryFromView(v);
    if (!value.has_value()) return std::nullopt;
    return std::optional<T>(std::move(*value));
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
  static Maybe<std::tuple<Ts...>> TryFromView(const TVMFFIAny& v) {
    Maybe<Tup> t = TypeTraits<Tup>::TryFromView(v);
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

/*! \brief std::map and std::unordered_map travel as a Map of their entries' values. */
template <typename M, typename K, typename V>
struct StdMapTraits {
  static constexpr bool kEnabled = TypeTraits<Map<K, V>>::kEnabled;
  static void CopyToView(const M&, TVMFFIAny*) = delete;  // a Map must be built: MoveToAny
  static void MoveToAny(const M& v, TVMFFIAny* out) {
    Map<K, V> map;
    for (const auto& kv : v) map.Set(kv.first, kv.second);
    TypeTraits<Map<K, V>>::MoveToAny(std::move(map), out);
  }
  static Maybe<M> TryFromView(const TVMFFIAny& v) {
    Maybe<Map<K, V>> map = TypeTraits<Map<K, V>>::TryFromView(v);
    if (!map.has_value()) return std::nullopt;
    M out;
    for (const auto& kv : *map) out.emplace(kv.first, kv.second);
    return out;
  }
  static void TypeName(std::string* out) { TypeTraits<Map<K, V>>::TypeName(out); }
  static void Schema(std::string* out) { TypeTraits<Map<K, V>>::Schema(out); }
};

template <typename K, typename V, typename C, typename A>
struct TypeTraits<std::map<K, V, C, A>> : StdMapTraits<std::map<K, V, C, A>, K, V> {};
template <typename K, typename V, typename H, typename E, typename A>
struct TypeTraits<std::unordered_map<K, V, H, E, A>>
    : StdMapTraits<std::unordered_map<K, V, H, E, A>, K, V> {};

/*! \brief std::variant travels as the alternative it holds; read as Variant reads. */
template <typename... Ts>
struct TypeTraits<std::variant<Ts...>> : AlternativesTraits<Ts...> {
  static void MoveToAny(std::variant<Ts...> v, TVMFFIAny* out) {
    std::visit([out](auto&& e) { TypeTraits<ValueType<decltype(e)>>::MoveToAny(std::move(e), out); },
               std::move(v));
  }
  static Maybe<std::variant<Ts...>> TryFromView(const TVMFFIAny& v) {
    return AlternativesTraits<Ts...>::template TryFirst<std::variant<Ts...>>(v, [](auto&& value) {
      using T = std::decay_t<decltype(value)>;
      return std::variant<Ts...>(std::in_place_type<T>, std::move(value));
    });
  }
};

template <typename R, typename... Args>
struct TypeTraits<std::function<R(Args...)>> {
  using Typed = TypedFunction<R(Args...)>;
  static constexpr bool kEnabled = true;
  static void MoveToAny(std::function<R(Args...)> v, TVMFFIAny* out) {
    TypeTraits<Typed>::MoveToAny(Typed(std::move(v), "std::function"), out);
  }
  static Maybe<std::function<R(Args...)>> TryFromView(const TVMFFIAny& v) {
    Maybe<Typed> f = TypeTraits<Typed>::TryFromView(v);
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
