/*
 * tvm::ffi::Tuple<Ts...>: a fixed number of values of fixed types, stored as an ArrayObj
 * (so it crosses the ABI as an Array: a Python tuple arrives as one, and a result reads as one).
 */
#ifndef TVM_FFI_CONTAINER_TUPLE_H_
#define TVM_FFI_CONTAINER_TUPLE_H_

#include <tvm/ffi/container/array.h>

#include <tuple>

namespace tvm {
namespace ffi {

template <typename... Ts>
class TVM_FFI_HIDDEN_MEMBERS Tuple : public ObjectRef {
 public:
  using ContainerType = ArrayObj;
  static constexpr bool _type_is_nullable = false;
  static constexpr size_t kSize = sizeof...(Ts);

  // Default-constructed elements; the empty tuple is an empty array.
  TVM_FFI_HIDDEN Tuple() : ObjectRef(ArrayObj::Empty(kSize)) {
    ArrayObj* obj = static_cast<ArrayObj*>(const_cast<Object*>(ObjectRef::get()));
    (obj->EmplaceBack(Any(Ts())), ...);
  }
  TVM_FFI_HIDDEN explicit Tuple(UnsafeInit tag) noexcept : ObjectRef(tag) {}
  template <typename... Us, typename = std::enable_if_t<sizeof...(Us) == kSize && (kSize > 0)>>
  TVM_FFI_HIDDEN Tuple(Us&&... values) : ObjectRef(ArrayObj::Empty(kSize)) {  // NOLINT
    ArrayObj* obj = static_cast<ArrayObj*>(const_cast<Object*>(ObjectRef::get()));
    (obj->EmplaceBack(Any(Ts(std::forward<Us>(values)))), ...);
  }
  // compat: apache-tvm-ffi: a Tuple of other element types converts element-wise (a deduced
  // Tuple(offsets, count, 0.5) into a declared Tuple<Array<int64_t>, int64_t, double>).
  template <typename... Us,
            typename = std::enable_if_t<sizeof...(Us) == kSize && (kSize > 0) &&
                                        !std::is_same_v<Tuple<Us...>, Tuple<Ts...>>>>
  TVM_FFI_HIDDEN Tuple(const Tuple<Us...>& other)  // NOLINT: implicit, as apache-tvm-ffi's
      : Tuple(other, std::index_sequence_for<Us...>()) {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Tuple);
  TVM_FFI_HIDDEN ~Tuple() = default;

  template <size_t I>
  TVM_FFI_HIDDEN auto get() const {
    using T = std::tuple_element_t<I, std::tuple<Ts...>>;
    return (*static_cast<const ArrayObj*>(ObjectRef::get()))[I].template cast<T>();
  }

 private:
  template <typename... Us, size_t... I>
  TVM_FFI_HIDDEN Tuple(const Tuple<Us...>& other, std::index_sequence<I...>)
      : Tuple(other.template get<I>()...) {}

 public:
  template <size_t I, typename U>
  TVM_FFI_HIDDEN void Set(U&& value) {
    using T = std::tuple_element_t<I, std::tuple<Ts...>>;
    if (!data_.unique()) {
      const auto* src = static_cast<const ArrayObj*>(ObjectRef::get());
      ObjectPtr<ArrayObj> copy = ArrayObj::Empty(kSize);
      for (const Any& v : *src) copy->EmplaceBack(v);
      data_ = std::move(copy);
    }
    static_cast<ArrayObj*>(const_cast<Object*>(ObjectRef::get()))->MutableElements()[I] =
        Any(T(std::forward<U>(value)));
  }
};

// compat: apache-tvm-ffi: get<I>(tuple), as std::get.
template <size_t I, typename... Ts>
TVM_FFI_HIDDEN inline auto get(const Tuple<Ts...>& t) {
  return t.template get<I>();
}

// compat: apache-tvm-ffi: Tuple(a, b) deduces Tuple<A, B>.
template <typename... Us>
Tuple(Us...) -> Tuple<Us...>;

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

template <typename... Ts>
struct HasOwnTraits<Tuple<Ts...>> : std::true_type {};

template <typename... Ts>
struct TypeTraits<Tuple<Ts...>> {
  using Self = Tuple<Ts...>;
  static constexpr bool kEnabled = (TypeTraits<Ts>::kEnabled && ...);
  static void CopyToView(const Self& v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::HeaderOf(v), out);
  }
  static void MoveToAny(Self v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::MoveRefToOwned(&v), out);
  }
  static Maybe<Self> TryFromView(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIArray) return std::nullopt;
    const auto* src = static_cast<const ArrayObj*>(ObjectUnsafe::FromHeader(v.v_obj));
    if (src->size_() != sizeof...(Ts)) {
      throw ConversionError{"", "", "",
                            Concat({"must have ", DecimalText(sizeof...(Ts)), " elements (got ",
                                    DecimalText(src->size_()), ")"})};
    }
    return Convert(*src, std::index_sequence_for<Ts...>{});
  }
  static void TypeName(std::string* out) {
    *out += "tuple[";
    bool first = true;
    ((*out += first ? "" : ", ", first = false, TypeTraits<Ts>::TypeName(out)), ...);
    *out += "]";
  }
  static void Schema(std::string* out) {
    *out += R"({"type":"Tuple","args":[)";
    bool first = true;
    ((*out += first ? "" : ",", first = false, TypeTraits<Ts>::Schema(out)), ...);
    *out += "]}";
  }

 private:
  template <size_t... I>
  static Self Convert(const ArrayObj& src, std::index_sequence<I...>) {
    return Self(ConvertElement<Ts>(AnyUnsafe::View(src[I]), I)...);
  }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_TUPLE_H_
