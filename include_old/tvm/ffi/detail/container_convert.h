/*
 * TypeTraits (any_convert.h) of the containers: std::optional, std::vector, std::tuple and
 * their tvm::ffi counterparts Optional, Array, Tuple, plus Shape and Map. Lists and tuples
 * travel as kTVMFFIArray, dicts as kTVMFFIMap; a failed element is named by its path.
 */
#ifndef TVM_FFI_DETAIL_CONTAINER_CONVERT_H_
#define TVM_FFI_DETAIL_CONTAINER_CONVERT_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/array.h>
#include <tvm/ffi/detail/map.h>
#include <tvm/ffi/detail/shape.h>
#include <tvm/ffi/detail/tuple.h>
#include <tvm/ffi/detail/any_convert.h>
#include <tvm/ffi/detail/optional.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

// ---- containers ----------------------------------------------------------------------------

/*! \brief Converts element `index` of an array argument, prefixing errors with "[index]". */
template <typename T>
T ElementFromArg(const TVMFFIAny* elements, size_t index) {
  try {
    return TypeTraits<T>::FromArg(elements[index]);
  } catch (ConversionError& e) {
    e.path = Concat({"[", DecimalText(index), "]", e.path});
    throw;
  }
}

template <typename T>
void ElementToResult(const T& value, size_t index, TVMFFIAny* out, char** cursor) {
  // A result block is freed with one deleter call, which cannot release object references.
  static_assert(!IsTopLevelOnly<T>::value,
                "objects (Function, Module, ObjectRef) can be returned only at the top level of "
                "a result, not inside a container");
  try {
    TypeTraits<T>::ToResult(value, out, cursor);
  } catch (ConversionError& e) {
    e.path = Concat({"[", DecimalText(index), "]", e.path});
    throw;
  }
}

template <typename T>
struct TypeTraits<std::optional<T>> {
  static constexpr bool kArg = TypeTraits<T>::kArg;
  static constexpr bool kResult = TypeTraits<T>::kResult;
  static constexpr bool kInlineResult = TypeTraits<T>::kInlineResult;
  static void AppendName(std::string* out) {
    TypeTraits<T>::AppendName(out);
    *out += " | None";
  }
  static std::optional<T> FromArg(const TVMFFIAny& v) {
    if (v.type_code == kTVMFFINone) return std::nullopt;
    try {
      return TypeTraits<T>::FromArg(v);
    } catch (ConversionError& e) {
      // A mismatch of the value itself: say that None was also fine.
      if (e.path.empty() && e.value_error.empty() && e.type_error.empty()) {
        e.expected = TypeName<std::optional<T>>();
      }
      throw;
    }
  }
  static size_t ResultBytes(const std::optional<T>& v) {
    return v.has_value() ? TypeTraits<T>::ResultBytes(*v) : 0;
  }
  static void ToResult(const std::optional<T>& v, TVMFFIAny* out, char** cursor) {
    if (v.has_value()) {
      TypeTraits<T>::ToResult(*v, out, cursor);
    } else {
      SetScalar(out, kTVMFFINone);
      out->v_int64 = 0;
    }
  }
};

/*! \brief Accepts a list or a tuple; returned as a list. */
template <typename T>
struct TypeTraits<std::vector<T>> {
  static constexpr bool kArg = TypeTraits<T>::kArg;
  static constexpr bool kResult = TypeTraits<T>::kResult;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) {
    *out += "list[";
    TypeTraits<T>::AppendName(out);
    *out += "]";
  }
  static std::vector<T> FromArg(const TVMFFIAny& v) {
    if (v.type_code != kTVMFFIArray) ThrowTypeMismatch<std::vector<T>>(v);
    size_t n = static_cast<size_t>(v.size);
    std::vector<T> result;
    result.reserve(n);
    for (size_t i = 0; i < n; ++i) result.push_back(ElementFromArg<T>(v.v_array, i));
    return result;
  }
  static size_t ResultBytes(const std::vector<T>& v) {
    size_t bytes = v.size() * sizeof(TVMFFIAny);
    for (const T& item : v) bytes += TypeTraits<T>::ResultBytes(item);
    return bytes;
  }
  static void ToResult(const std::vector<T>& v, TVMFFIAny* out, char** cursor) {
    TVMFFIAny* items = reinterpret_cast<TVMFFIAny*>(*cursor);
    *cursor += v.size() * sizeof(TVMFFIAny);
    for (size_t i = 0; i < v.size(); ++i) ElementToResult<T>(v[i], i, &items[i], cursor);
    SetScalar(out, kTVMFFIArray);
    out->size = static_cast<int64_t>(v.size());
    out->v_array = items;
  }
};

/*! \brief Accepts a tuple or a list of exactly the right length; returned as a tuple. */
template <typename... Ts>
struct TypeTraits<std::tuple<Ts...>> {
  static constexpr bool kArg = (true && ... && TypeTraits<Ts>::kArg);
  static constexpr bool kResult = (true && ... && TypeTraits<Ts>::kResult);
  static constexpr bool kInlineResult = false;
  static constexpr size_t kSize = sizeof...(Ts);

  static void AppendName(std::string* out) {
    *out += "tuple[";
    AppendNames(out, std::index_sequence_for<Ts...>{});
    *out += "]";
  }
  static std::tuple<Ts...> FromArg(const TVMFFIAny& v) {
    if (v.type_code != kTVMFFIArray) ThrowTypeMismatch<std::tuple<Ts...>>(v);
    if (static_cast<size_t>(v.size) != kSize) ThrowWrongLength(v);
    return FromElements(v.v_array, std::index_sequence_for<Ts...>{});
  }
  static size_t ResultBytes(const std::tuple<Ts...>& v) {
    return std::apply(
        [](const Ts&... items) {
          return kSize * sizeof(TVMFFIAny) + (size_t{0} + ... + TypeTraits<Ts>::ResultBytes(items));
        },
        v);
  }
  static void ToResult(const std::tuple<Ts...>& v, TVMFFIAny* out, char** cursor) {
    TVMFFIAny* items = reinterpret_cast<TVMFFIAny*>(*cursor);
    *cursor += kSize * sizeof(TVMFFIAny);
    ToElements(v, items, cursor, std::index_sequence_for<Ts...>{});
    SetScalar(out, kTVMFFIArray);
    out->flags = TVM_FFI_ARRAY_IS_TUPLE;
    out->size = static_cast<int64_t>(kSize);
    out->v_array = items;
  }

 private:
  template <size_t... I>
  static void AppendNames(std::string* out, std::index_sequence<I...>) {
    (void)out;  // unused for tuple<>
    ((*out += (I == 0 ? "" : ", "), TypeTraits<Ts>::AppendName(out)), ...);
  }
  template <size_t... I>
  static std::tuple<Ts...> FromElements(const TVMFFIAny* elements, std::index_sequence<I...>) {
    (void)elements;
    // Braced initialization converts left to right, so the first bad element is reported.
    return std::tuple<Ts...>{ElementFromArg<Ts>(elements, I)...};
  }
  template <size_t... I>
  static void ToElements(const std::tuple<Ts...>& v, TVMFFIAny* items, char** cursor,
                         std::index_sequence<I...>) {
    (void)v, (void)items, (void)cursor;
    (ElementToResult<Ts>(std::get<I>(v), I, &items[I], cursor), ...);
  }
  [[noreturn]] TVM_FFI_COLD static void ThrowWrongLength(const TVMFFIAny& v) {
    throw ConversionError{"", TypeName<std::tuple<Ts...>>(),
                          Concat({AnyTypeName(v), " of length ", DecimalText(v.size)}), ""};
  }
};

/*!
 * \brief A device travels as the pair (device_type, device_id), as tvm_ffi.Device is: Python
 * passes a tvm_ffi.Device, a torch.device or a pair of ints, and gets a pair back.
 */
template <>
struct TypeTraits<DLDevice> {
  using Pair = TypeTraits<std::tuple<int32_t, int32_t>>;
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "Device"; }
  static DLDevice FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_UNLIKELY(v.type_code != kTVMFFIArray || v.size != 2)) {
      ThrowTypeMismatch<DLDevice>(v);
    }
    const auto [device_type, device_id] = Pair::FromArg(v);
    return DLDevice{static_cast<DLDeviceType>(device_type), device_id};
  }
  static size_t ResultBytes(DLDevice v) { return Pair::ResultBytes(AsPair(v)); }
  static void ToResult(DLDevice v, TVMFFIAny* out, char** cursor) {
    Pair::ToResult(AsPair(v), out, cursor);
  }

 private:
  static std::tuple<int32_t, int32_t> AsPair(DLDevice v) {
    return {static_cast<int32_t>(v.device_type), v.device_id};
  }
};

// ---- the tvm::ffi containers: the same wire forms as their std:: counterparts ------------

template <typename T>
struct TypeTraits<Optional<T>> : TypeTraits<std::optional<T>> {
  using Base = TypeTraits<std::optional<T>>;
  static Optional<T> FromArg(const TVMFFIAny& v) { return Optional<T>(Base::FromArg(v)); }
  static size_t ResultBytes(const Optional<T>& v) { return Base::ResultBytes(v.as_std()); }
  static void ToResult(const Optional<T>& v, TVMFFIAny* out, char** cursor) {
    Base::ToResult(v.as_std(), out, cursor);
  }
};

template <typename T>
struct TypeTraits<Array<T>> : TypeTraits<std::vector<T>> {
  using Base = TypeTraits<std::vector<T>>;
  static Array<T> FromArg(const TVMFFIAny& v) { return Array<T>(Base::FromArg(v)); }
  static size_t ResultBytes(const Array<T>& v) { return Base::ResultBytes(v.as_vector()); }
  static void ToResult(const Array<T>& v, TVMFFIAny* out, char** cursor) {
    Base::ToResult(v.as_vector(), out, cursor);
  }
};

template <typename... Ts>
struct TypeTraits<Tuple<Ts...>> : TypeTraits<std::tuple<Ts...>> {
  using Base = TypeTraits<std::tuple<Ts...>>;
  static Tuple<Ts...> FromArg(const TVMFFIAny& v) { return Tuple<Ts...>(Base::FromArg(v)); }
  static size_t ResultBytes(const Tuple<Ts...>& v) { return Base::ResultBytes(v.as_std()); }
  static void ToResult(const Tuple<Ts...>& v, TVMFFIAny* out, char** cursor) {
    Base::ToResult(v.as_std(), out, cursor);
  }
};

/*!
 * \brief A list or tuple of ints; returned as a tuple. A template (ShapeT is always Shape) so
 *  that its vector code is instantiated only in a library that exports a Shape, not in all.
 */
template <typename ShapeT>
struct ShapeTraits {
  using Base = TypeTraits<std::vector<int64_t>>;
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "tuple[int, ...]"; }
  static ShapeT FromArg(const TVMFFIAny& v) {
    if (v.type_code != kTVMFFIArray) ThrowTypeMismatch<ShapeT>(v);
    return ShapeT(Base::FromArg(v));
  }
  static size_t ResultBytes(const ShapeT& v) { return v.size() * sizeof(TVMFFIAny); }
  static void ToResult(const ShapeT& v, TVMFFIAny* out, char** cursor) {
    Base::ToResult(v.as_vector(), out, cursor);
    out->flags = TVM_FFI_ARRAY_IS_TUPLE;
  }
};

template <>
struct TypeTraits<Shape> : ShapeTraits<Shape> {};

/*! \brief "'key'" for a string key, else the entry's position: where a conversion failed. */
TVM_FFI_COLD inline std::string MapEntryLabel(const TVMFFIAny& key, size_t index) {
  if (key.type_code == kTVMFFIStr) {
    return Concat({"['", std::string_view(key.v_str, static_cast<size_t>(key.size)), "']"});
  }
  return Concat({"[entry ", DecimalText(index), "]"});
}

template <typename K, typename V>
void PutEntry(Map<K, V>& map, K key, V value) {
  map.Set(std::move(key), std::move(value));
}
template <typename M, typename K, typename V>
void PutEntry(M& map, K key, V value) {  // std::map, std::unordered_map
  map.insert_or_assign(std::move(key), std::move(value));
}

/*!
 * \brief A dict, as Map<K, V> (insertion order kept) or std::map / std::unordered_map
 * (extra/stl.h); returned as a dict.
 */
template <typename M, typename K, typename V>
struct MapTraits {
  static constexpr bool kArg = TypeTraits<K>::kArg && TypeTraits<V>::kArg;
  static constexpr bool kResult = TypeTraits<K>::kResult && TypeTraits<V>::kResult;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) {
    *out += "dict[";
    TypeTraits<K>::AppendName(out);
    *out += ", ";
    TypeTraits<V>::AppendName(out);
    *out += "]";
  }
  static M FromArg(const TVMFFIAny& v) {
    if (v.type_code != kTVMFFIMap) ThrowTypeMismatch<M>(v);
    M result;
    for (size_t i = 0; i < static_cast<size_t>(v.size); ++i) {
      const TVMFFIAny& key = v.v_array[2 * i];
      try {
        PutEntry(result, TypeTraits<K>::FromArg(key),
                 TypeTraits<V>::FromArg(v.v_array[2 * i + 1]));
      } catch (ConversionError& e) {
        e.path = MapEntryLabel(key, i) + e.path;
        throw;
      }
    }
    return result;
  }
  static size_t ResultBytes(const M& v) {
    size_t bytes = 2 * v.size() * sizeof(TVMFFIAny);
    for (const auto& e : v) {
      bytes += TypeTraits<K>::ResultBytes(e.first) + TypeTraits<V>::ResultBytes(e.second);
    }
    return bytes;
  }
  static void ToResult(const M& v, TVMFFIAny* out, char** cursor) {
    TVMFFIAny* items = reinterpret_cast<TVMFFIAny*>(*cursor);
    *cursor += 2 * v.size() * sizeof(TVMFFIAny);
    size_t i = 0;
    for (const auto& e : v) {
      ElementToResult<K>(e.first, i, &items[2 * i], cursor);
      ElementToResult<V>(e.second, i, &items[2 * i + 1], cursor);
      ++i;
    }
    SetScalar(out, kTVMFFIMap);
    out->size = static_cast<int64_t>(v.size());
    out->v_array = items;
  }
};

template <typename K, typename V>
struct TypeTraits<Map<K, V>> : MapTraits<Map<K, V>, K, V> {};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_CONTAINER_CONVERT_H_
