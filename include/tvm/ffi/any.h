/*
 * tvm::ffi::AnyView (a borrowed value: what arguments are) and tvm::ffi::Any (an owned one:
 * what results are). Each is exactly one TVMFFIAny (16 bytes), so arrays of them are the
 * argument arrays of the C calling convention. Conversions go through TypeTraits<T>
 * (detail/type_traits.h and beside each type).
 */
#ifndef TVM_FFI_ANY_H_
#define TVM_FFI_ANY_H_

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/type_traits.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/string.h>

#include <optional>
#include <string>

namespace tvm {
namespace ffi {
class Any;
class AnyView;
}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {
/*! \brief The type a value of type T is viewed or stored as (string literals: const char*). */
template <typename T>
using ValueType =
    std::conditional_t<std::is_same_v<std::decay_t<T>, char*>, const char*, std::decay_t<T>>;
template <typename T>
struct IsAnyType : std::bool_constant<std::is_same_v<T, Any> || std::is_same_v<T, AnyView>> {};
template <typename T>
struct HasTraits : std::bool_constant<TypeTraits<T>::kEnabled> {};
/*! \brief Whether T converts to a value; Any and AnyView themselves are copied instead. */
template <typename T>
constexpr bool kIsValue =
    std::conjunction_v<std::negation<IsAnyType<ValueType<T>>>, HasTraits<ValueType<T>>>;
template <>
struct TypeTraits<Any>;
template <>
struct TypeTraits<AnyView>;
struct AnyUnsafe;
}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

namespace tvm {
namespace ffi {

namespace details {
/*!
 * \brief What AnyView and Any read alike, over the one TVMFFIAny each of them is; the two differ
 *  only in ownership (how they are made, copied and destroyed).
 */
class TVM_FFI_HIDDEN_MEMBERS AnyBase {
 public:
  TVM_FFI_HIDDEN int32_t type_index() const noexcept { return data_.type_index; }
  /*! \brief The Python-facing name of what it holds ("int", "str", "ffi.Array", ...). */
  TVM_FFI_HIDDEN std::string GetTypeKey() const { return AnyTypeName(data_); }
  TVM_FFI_HIDDEN bool operator==(std::nullptr_t) const noexcept {
    return data_.type_index == kTVMFFINone;
  }
  TVM_FFI_HIDDEN bool operator!=(std::nullptr_t) const noexcept {
    return data_.type_index != kTVMFFINone;
  }
  /*! \brief The value as a T, or nothing when it holds another type or does not fit. */
  template <typename T>
  TVM_FFI_HIDDEN std::optional<T> as() const {
    try {
      return TypeTraits<T>::TryFromView(data_).ToStd();
    } catch (const ConversionError&) {
      return std::nullopt;
    }
  }
  /*! \brief The value as a T; TypeError (or ValueError) naming both types otherwise. */
  template <typename T>
  TVM_FFI_HIDDEN T cast() const;

 protected:
  TVM_FFI_HIDDEN AnyBase() noexcept { SetPOD(&data_, kTVMFFINone); }
  TVM_FFI_HIDDEN explicit AnyBase(const TVMFFIAny& data) noexcept : data_(data) {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(AnyBase);
  TVM_FFI_HIDDEN ~AnyBase() = default;
  TVMFFIAny data_;
};
}  // namespace details

/*! \brief A value borrowed from its owner: valid while the owner lives (a call's duration). */
class TVM_FFI_HIDDEN_MEMBERS AnyView : public details::AnyBase {
 public:
  TVM_FFI_HIDDEN AnyView() noexcept = default;
  TVM_FFI_HIDDEN AnyView(std::nullptr_t) noexcept {}  // NOLINT
  TVM_FFI_HIDDEN AnyView(std::nullopt_t) noexcept {}  // NOLINT
  template <typename T, typename = std::enable_if_t<details::kIsValue<T>>>
  TVM_FFI_HIDDEN AnyView(const T& value) noexcept {  // NOLINT: implicit, as an argument
    details::TypeTraits<details::ValueType<T>>::CopyToView(value, &data_);
  }
  TVM_FFI_HIDDEN AnyView(const Any& value) noexcept;  // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(AnyView);
  TVM_FFI_HIDDEN ~AnyView() = default;

 private:
  friend struct details::AnyUnsafe;
  friend class Any;
};

/*! \brief An owned value: holds a reference when it holds an object. */
class TVM_FFI_HIDDEN_MEMBERS Any : public details::AnyBase {
 public:
  TVM_FFI_HIDDEN Any() noexcept = default;
  TVM_FFI_HIDDEN Any(std::nullptr_t) noexcept {}  // NOLINT
  TVM_FFI_HIDDEN Any(std::nullopt_t) noexcept {}  // NOLINT
  template <typename T, typename = std::enable_if_t<details::kIsValue<T>>>
  TVM_FFI_HIDDEN Any(T&& value) {  // NOLINT: implicit, as a result
    using V = details::ValueType<T>;
    details::TypeTraits<V>::MoveToAny(V(std::forward<T>(value)), &data_);
  }
  /*! \brief An owned copy of a view (borrowed text becomes a String, objects are counted). */
  TVM_FFI_HIDDEN explicit Any(const AnyView& view) { CopyOwned(view.data_); }
  TVM_FFI_HIDDEN Any(const Any& other) noexcept : AnyBase(other.data_) {
    if (details::IsObjectIndex(data_.type_index)) details::IncRef(data_.v_obj);
  }
  TVM_FFI_HIDDEN Any(Any&& other) noexcept : AnyBase(other.data_) {
    details::SetPOD(&other.data_, kTVMFFINone);
  }
  TVM_FFI_HIDDEN Any& operator=(const Any& other) noexcept {
    Any(other).swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN Any& operator=(Any&& other) noexcept {
    Any(std::move(other)).swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN ~Any() {
    if (details::IsObjectIndex(data_.type_index)) details::DecRef(data_.v_obj);
  }
  TVM_FFI_HIDDEN void swap(Any& other) noexcept { std::swap(data_, other.data_); }

 private:
  TVM_FFI_HIDDEN void CopyOwned(const TVMFFIAny& v);
  friend struct details::AnyUnsafe;
};

static_assert(sizeof(Any) == sizeof(TVMFFIAny) && sizeof(AnyView) == sizeof(TVMFFIAny),
              "Any and AnyView are one TVMFFIAny");

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief Raw access for the call machinery (function.h) and containers. */
struct AnyUnsafe {
  static const TVMFFIAny& View(const AnyView& v) noexcept { return v.data_; }
  static const TVMFFIAny& View(const Any& v) noexcept { return v.data_; }
  /*! \brief Gives the owned value away (into a result slot or a container). */
  static TVMFFIAny MoveToTVMFFIAny(Any&& v) noexcept {
    TVMFFIAny out = v.data_;
    SetPOD(&v.data_, kTVMFFINone);
    return out;
  }
  static AnyView ViewFrom(const TVMFFIAny& v) noexcept {
    AnyView out;
    out.data_ = v;
    return out;
  }
  /*! \brief Adopts an owned value (a call's result). */
  static Any FromOwned(const TVMFFIAny& v) noexcept {
    Any out;
    out.data_ = v;
    return out;
  }
};

/*! \brief An owned copy of a value of a view: borrowed forms become owned ones. */
inline void CopyToOwned(const TVMFFIAny& v, TVMFFIAny* out) {
  if (IsObjectIndex(v.type_index)) {
    IncRef(v.v_obj);
    *out = v;
  } else if (v.type_index == kTVMFFIRawStr) {
    TypeTraits<String>::MoveToAny(String(v.v_c_str), out);
  } else if (v.type_index == kTVMFFIByteArrayPtr) {
    const TVMFFIByteArray* b = static_cast<const TVMFFIByteArray*>(v.v_ptr);
    TypeTraits<Bytes>::MoveToAny(Bytes(b->data, b->size), out);
  } else if (v.type_index == kTVMFFIObjectRValueRef) {
    ObjectHeaderToAny(ObjectUnsafe::MoveRefToOwned(static_cast<ObjectRef*>(v.v_ptr)), out);
  } else {
    *out = v;  // plain values (a DLTensor* stays the caller's pointer)
  }
}

/*! \brief "cannot convert str to int" (TypeError) or the value's own ValueError. */
[[noreturn]] TVM_FFI_COLD inline void ThrowCastError(const ConversionError& e) {
  if (!e.value_error.empty()) throw Error("ValueError", "value " + e.value_error);
  throw Error("TypeError", "cannot convert " + e.received + " to " + e.expected);
}

template <>
struct TypeTraits<AnyView> {
  static constexpr bool kEnabled = true;
  static void CopyToView(const AnyView& v, TVMFFIAny* out) noexcept { *out = AnyUnsafe::View(v); }
  static void MoveToAny(const AnyView& v, TVMFFIAny* out) {
    *out = AnyUnsafe::MoveToTVMFFIAny(Any(v));
  }
  static Maybe<AnyView> TryFromView(const TVMFFIAny& v) noexcept { return AnyUnsafe::ViewFrom(v); }
  static void TypeName(std::string* out) { *out += "Any"; }
  static void Schema(std::string* out) { *out += R"({"type":"Any"})"; }
};

template <>
struct TypeTraits<Any> {
  static constexpr bool kEnabled = true;
  static void CopyToView(const Any& v, TVMFFIAny* out) noexcept { *out = AnyUnsafe::View(v); }
  static void MoveToAny(Any v, TVMFFIAny* out) noexcept {
    *out = AnyUnsafe::MoveToTVMFFIAny(std::move(v));
  }
  static Maybe<Any> TryFromView(const TVMFFIAny& v) { return Any(AnyUnsafe::ViewFrom(v)); }
  static void TypeName(std::string* out) { *out += "Any"; }
  static void Schema(std::string* out) { *out += R"({"type":"Any"})"; }
};

/*! \brief None, as a value (what a safe call without result stores). */
template <>
struct TypeTraits<std::nullptr_t> : PODTraits<std::nullptr_t> {
  static void CopyToView(std::nullptr_t, TVMFFIAny* out) noexcept { SetPOD(out, kTVMFFINone); }
  static Maybe<std::nullptr_t> TryFromView(const TVMFFIAny& v) noexcept {
    if (v.type_index == kTVMFFINone) return nullptr;
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "None"; }
  static void Schema(std::string* out) { *out += R"({"type":"None"})"; }
};

}  // namespace details

/*!
 * \brief compat: apache-tvm-ffi. Its conversion traits by its names, for host code generated
 * against them (`tvm::ffi::TypeTraits<std::nullptr_t>::CopyToAnyView(nullptr, result)`); a
 * thin adapter over details::TypeTraits, the one implementation.
 */
template <typename T, typename = void>
struct TypeTraits {
  static void CopyToAnyView(const T& value, TVMFFIAny* out) {
    details::TypeTraits<T>::CopyToView(value, out);
  }
  static void MoveToAny(T value, TVMFFIAny* out) {
    details::TypeTraits<T>::MoveToAny(std::move(value), out);
  }
  static std::optional<T> TryCastFromAnyView(const TVMFFIAny* value) {
    return details::AnyUnsafe::ViewFrom(*value).template as<T>();
  }
  static std::string TypeStr() { return details::TypeName<T>(); }
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

namespace tvm {
namespace ffi {

TVM_FFI_HIDDEN inline AnyView::AnyView(const Any& value) noexcept
    : AnyBase(details::AnyUnsafe::View(value)) {}

TVM_FFI_HIDDEN inline void Any::CopyOwned(const TVMFFIAny& v) { details::CopyToOwned(v, &data_); }

template <typename T>
TVM_FFI_HIDDEN T details::AnyBase::cast() const {
  try {
    return details::ConvertFromView<T>(data_);
  } catch (const details::ConversionError& e) {
    details::ThrowCastError(e);
  }
}

/*!
 * \brief `ref` as the handle type SubRef (a checked conversion between handles, beside
 *  Any::cast; here because it throws, and error.h includes object.h); TypeError naming both types
 * unless it holds a SubRef::ContainerType (an empty handle passes when SubRef is nullable).
 */
template <typename SubRef, typename BaseRef,
          typename = std::enable_if_t<std::is_base_of_v<ObjectRef, SubRef>>>
TVM_FFI_HIDDEN SubRef Downcast(BaseRef ref) {
  using Obj = typename SubRef::ContainerType;
  const Object* obj = ref.get();
  if (obj == nullptr ? !SubRef::_type_is_nullable : !obj->template IsInstance<Obj>()) {
    TVM_FFI_THROW(TypeError) << "Downcast from " << ref.GetTypeKey() << " to " << Obj::_type_key
                             << " failed";
  }
  return details::ObjectUnsafe::RefFromOwned<SubRef>(details::ObjectUnsafe::MoveRefToOwned(&ref));
}

}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_ANY_H_
