/*
 * tvm::ffi::Variant<Ts...>: a value of one of the listed types, held as an Any. An argument
 * converts to the first alternative that accepts it, in the order listed.
 */
#ifndef TVM_FFI_CONTAINER_VARIANT_H_
#define TVM_FFI_CONTAINER_VARIANT_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/optional.h>

namespace tvm {
namespace ffi {

template <typename... Ts>
class TVM_FFI_HIDDEN_MEMBERS Variant {
 public:
  static_assert(sizeof...(Ts) > 0, "Variant needs at least one alternative");
  template <typename T,
            typename = std::enable_if_t<(std::is_same_v<details::ValueType<T>, Ts> || ...)>>
  TVM_FFI_HIDDEN Variant(T&& value) : value_(std::forward<T>(value)) {}  // NOLINT: implicit
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Variant);
  TVM_FFI_HIDDEN ~Variant() = default;

  /*! \brief The value as a T when it holds one (or converts to one). */
  template <typename T>
  TVM_FFI_HIDDEN std::optional<T> as() const {
    return value_.as<T>();
  }
  /*! \brief The value as a T; TypeError otherwise. */
  template <typename T>
  TVM_FFI_HIDDEN T get() const {
    return value_.cast<T>();
  }
  TVM_FFI_HIDDEN const Any& value() const noexcept { return value_; }
  TVM_FFI_HIDDEN int32_t type_index() const noexcept { return value_.type_index(); }
  TVM_FFI_HIDDEN std::string GetTypeKey() const { return value_.GetTypeKey(); }

 private:
  TVM_FFI_HIDDEN explicit Variant(Any value, int) : value_(std::move(value)) {}
  Any value_;
  friend struct details::TypeTraits<Variant>;
};

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*!
 * \brief What Variant<Ts...> and std::variant<Ts...> (extra/stl.h) share: the name and schema
 *  of the alternatives, and reading a value as the first of them, in the order listed, that
 *  accepts it.
 */
template <typename... Ts>
struct AlternativesTraits {
  static constexpr bool kEnabled = (TypeTraits<Ts>::kEnabled && ...);
  static void TypeName(std::string* out) {
    bool first = true;
    ((*out += first ? "" : " | ", first = false, TypeTraits<Ts>::TypeName(out)), ...);
  }
  static void Schema(std::string* out) {
    *out += R"({"type":"Variant","args":[)";
    bool first = true;
    ((*out += first ? "" : ",", first = false, TypeTraits<Ts>::Schema(out)), ...);
    *out += "]}";
  }
  /*! \brief The first alternative T that accepts v, as make(T&&); nothing when none does. */
  template <typename Result, typename Make>
  static Maybe<Result> TryFirst(const TVMFFIAny& v, Make make) {
    Maybe<Result> out = std::nullopt;
    (void)(TryOne<Ts>(v, make, &out) || ...);
    return out;
  }

 private:
  template <typename T, typename Result, typename Make>
  static bool TryOne(const TVMFFIAny& v, Make& make, Maybe<Result>* out) {
    Maybe<T> value = TypeTraits<T>::TryFromView(v);
    if (!value.has_value()) return false;
    out->emplace(make(std::move(*value)));
    return true;
  }
};

template <typename... Ts>
struct TypeTraits<Variant<Ts...>> : AlternativesTraits<Ts...> {
  using Self = Variant<Ts...>;
  static void CopyToView(const Self& v, TVMFFIAny* out) noexcept {
    *out = AnyUnsafe::View(v.value_);
  }
  static void MoveToAny(Self v, TVMFFIAny* out) noexcept {
    *out = AnyUnsafe::MoveToTVMFFIAny(std::move(v.value_));
  }
  static Maybe<Self> TryFromView(const TVMFFIAny& v) {
    // Each alternative stored in its own representation.
    return AlternativesTraits<Ts...>::template TryFirst<Self>(
        v, [](auto&& value) { return Self(Any(std::move(value)), 0); });
  }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_VARIANT_H_
