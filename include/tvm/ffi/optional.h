/*
 * tvm::ffi::Optional<T>: a T or nothing (None in Python). For object handles it is one
 * pointer (empty handle = nothing); for String and Bytes it is one TVMFFIAny (nothing =
 * kTVMFFINone), as in apache-tvm-ffi, whose ABI passes Optional<String> in 16-byte slots (a
 * module's GetFunctionMetadata result); for other types it holds a std::optional<T>.
 */
#ifndef TVM_FFI_OPTIONAL_H_
#define TVM_FFI_OPTIONAL_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/string.h>

#include <cstring>
#include <new>
#include <optional>
#include <utility>

namespace tvm {
namespace ffi {

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace details {
[[noreturn]] TVM_FFI_COLD inline void ThrowEmptyOptional() {
  throw Error("RuntimeError", "Optional::value() on an empty Optional");
}
template <typename T>
constexpr bool kIsHandle = std::is_base_of_v<ObjectRef, T>;
template <typename T>
constexpr bool kIsChars = std::is_same_v<T, String> || std::is_same_v<T, Bytes>;
}  // namespace details
TVM_FFI_DETAIL_HIDDEN_END

template <typename T, typename>
class TVM_FFI_HIDDEN_MEMBERS Optional {
  static_assert(!details::kIsChars<T>, "String and Bytes take the one-TVMFFIAny Optional");
 public:
  using value_type = T;
  TVM_FFI_HIDDEN Optional() noexcept = default;
  TVM_FFI_HIDDEN Optional(std::nullopt_t) noexcept {}                            // NOLINT: implicit
  TVM_FFI_HIDDEN Optional(T value) : value_(std::move(value)) {}                 // NOLINT: implicit
  TVM_FFI_HIDDEN Optional(std::optional<T> value) : value_(std::move(value)) {}  // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Optional);
  TVM_FFI_HIDDEN ~Optional() = default;

  TVM_FFI_HIDDEN bool has_value() const noexcept { return value_.has_value(); }
  TVM_FFI_HIDDEN explicit operator bool() const noexcept { return has_value(); }
  TVM_FFI_HIDDEN const T& value() const& {
    if (TVM_FFI_UNLIKELY(!has_value())) details::ThrowEmptyOptional();
    return *value_;
  }
  TVM_FFI_HIDDEN T&& value() && {
    if (TVM_FFI_UNLIKELY(!has_value())) details::ThrowEmptyOptional();
    return std::move(*value_);
  }
  template <typename U>
  TVM_FFI_HIDDEN T value_or(U&& other) const {
    return has_value() ? *value_ : T(std::forward<U>(other));
  }
  TVM_FFI_HIDDEN const T& operator*() const noexcept { return *value_; }
  TVM_FFI_HIDDEN const T* operator->() const noexcept { return &*value_; }
  TVM_FFI_HIDDEN bool operator==(std::nullopt_t) const noexcept { return !has_value(); }
  TVM_FFI_HIDDEN bool operator!=(std::nullopt_t) const noexcept { return has_value(); }

 private:
  std::optional<T> value_;
};

/*! \brief For object handles: one pointer, the empty handle meaning nothing. */
template <typename T>
class TVM_FFI_HIDDEN_MEMBERS Optional<T, std::enable_if_t<details::kIsHandle<T>>> {
 public:
  using value_type = T;
  TVM_FFI_HIDDEN Optional() noexcept : value_(UnsafeInit{}) {}
  TVM_FFI_HIDDEN Optional(std::nullopt_t) noexcept : value_(UnsafeInit{}) {}  // NOLINT
  TVM_FFI_HIDDEN Optional(std::nullptr_t) noexcept : value_(UnsafeInit{}) {}  // NOLINT
  TVM_FFI_HIDDEN Optional(T value) noexcept : value_(std::move(value)) {}     // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Optional);
  TVM_FFI_HIDDEN ~Optional() = default;

  TVM_FFI_HIDDEN bool has_value() const noexcept { return value_.defined(); }
  TVM_FFI_HIDDEN bool defined() const noexcept {
    return value_.defined();
  }  // compat: apache-tvm-ffi
  TVM_FFI_HIDDEN explicit operator bool() const noexcept { return has_value(); }
  TVM_FFI_HIDDEN const T& value() const& {
    if (TVM_FFI_UNLIKELY(!has_value())) details::ThrowEmptyOptional();
    return value_;
  }
  TVM_FFI_HIDDEN T&& value() && {
    if (TVM_FFI_UNLIKELY(!has_value())) details::ThrowEmptyOptional();
    return std::move(value_);
  }
  template <typename U>
  TVM_FFI_HIDDEN T value_or(U&& other) const {
    return has_value() ? value_ : T(std::forward<U>(other));
  }
  TVM_FFI_HIDDEN const T& operator*() const noexcept { return value_; }
  TVM_FFI_HIDDEN const T* operator->() const noexcept { return &value_; }
  TVM_FFI_HIDDEN bool operator==(std::nullopt_t) const noexcept { return !has_value(); }
  TVM_FFI_HIDDEN bool operator!=(std::nullopt_t) const noexcept { return has_value(); }

 private:
  T value_;
};


/*!
 * \brief For String and Bytes: the value's own TVMFFIAny, or one whose type_index is
 * kTVMFFINone (a String or Bytes never has that index), so the slot is 16 bytes like apache's.
 */
template <typename T>
class TVM_FFI_HIDDEN_MEMBERS Optional<T, std::enable_if_t<details::kIsChars<T>>> {
 public:
  using value_type = T;
  TVM_FFI_HIDDEN Optional() noexcept { SetNone(); }
  TVM_FFI_HIDDEN Optional(std::nullopt_t) noexcept { SetNone(); }  // NOLINT: implicit
  TVM_FFI_HIDDEN Optional(T value) noexcept { new (storage_) T(std::move(value)); }  // NOLINT
  TVM_FFI_HIDDEN Optional(std::optional<T> value) noexcept {  // NOLINT: implicit
    if (value.has_value()) {
      new (storage_) T(std::move(*value));
    } else {
      SetNone();
    }
  }
  TVM_FFI_HIDDEN Optional(const Optional& other) noexcept {
    if (other.has_value()) {
      new (storage_) T(*other);
    } else {
      SetNone();
    }
  }
  TVM_FFI_HIDDEN Optional(Optional&& other) noexcept {
    // The bytes move whole (a TVMFFIAny owns through its bits); the source becomes nothing.
    std::memcpy(storage_, other.storage_, sizeof(storage_));
    other.SetNone();
  }
  TVM_FFI_HIDDEN Optional& operator=(const Optional& other) noexcept {
    Optional(other).Swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN Optional& operator=(Optional&& other) noexcept {
    Optional(std::move(other)).Swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN ~Optional() {
    if (has_value()) Ptr()->~T();
  }

  TVM_FFI_HIDDEN bool has_value() const noexcept {
    int32_t type_index = 0;
    std::memcpy(&type_index, storage_, sizeof(type_index));  // TVMFFIAny's first field
    return type_index != kTVMFFINone;
  }
  TVM_FFI_HIDDEN explicit operator bool() const noexcept { return has_value(); }
  TVM_FFI_HIDDEN const T& value() const& {
    if (TVM_FFI_UNLIKELY(!has_value())) details::ThrowEmptyOptional();
    return *Ptr();
  }
  TVM_FFI_HIDDEN T value() && {
    if (TVM_FFI_UNLIKELY(!has_value())) details::ThrowEmptyOptional();
    T out(std::move(*Ptr()));
    return out;
  }
  template <typename U>
  TVM_FFI_HIDDEN T value_or(U&& other) const {
    return has_value() ? *Ptr() : T(std::forward<U>(other));
  }
  TVM_FFI_HIDDEN const T& operator*() const noexcept { return *Ptr(); }
  TVM_FFI_HIDDEN const T* operator->() const noexcept { return Ptr(); }
  TVM_FFI_HIDDEN bool operator==(std::nullopt_t) const noexcept { return !has_value(); }
  TVM_FFI_HIDDEN bool operator!=(std::nullopt_t) const noexcept { return has_value(); }

 private:
  TVM_FFI_HIDDEN const T* Ptr() const noexcept {
    return std::launder(reinterpret_cast<const T*>(storage_));
  }
  TVM_FFI_HIDDEN T* Ptr() noexcept { return std::launder(reinterpret_cast<T*>(storage_)); }
  TVM_FFI_HIDDEN void SetNone() noexcept {
    TVMFFIAny none{};
    none.type_index = kTVMFFINone;
    std::memcpy(storage_, &none, sizeof(none));
  }
  TVM_FFI_HIDDEN void Swap(Optional& other) noexcept {
    unsigned char tmp[sizeof(storage_)];
    std::memcpy(tmp, storage_, sizeof(tmp));
    std::memcpy(storage_, other.storage_, sizeof(tmp));
    std::memcpy(other.storage_, tmp, sizeof(tmp));
  }
  static_assert(sizeof(T) == sizeof(TVMFFIAny), "String and Bytes are one TVMFFIAny");
  alignas(TVMFFIAny) unsigned char storage_[sizeof(TVMFFIAny)];
};

static_assert(sizeof(Optional<String>) == sizeof(TVMFFIAny),
              "Optional<String> is one TVMFFIAny, as apache-tvm-ffi's ABI slots expect");
static_assert(sizeof(Optional<Bytes>) == sizeof(TVMFFIAny),
              "Optional<Bytes> is one TVMFFIAny, as apache-tvm-ffi's ABI slots expect");

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

template <typename T>
struct TypeTraits<Optional<T>> {
  static constexpr bool kEnabled = TypeTraits<T>::kEnabled;
  static void CopyToView(const Optional<T>& v, TVMFFIAny* out) noexcept {
    if (v.has_value()) {
      TypeTraits<T>::CopyToView(*v, out);
    } else {
      SetPOD(out, kTVMFFINone);
    }
  }
  static void MoveToAny(Optional<T> v, TVMFFIAny* out) {
    if (v.has_value()) {
      TypeTraits<T>::MoveToAny(std::move(v).value(), out);
    } else {
      SetPOD(out, kTVMFFINone);
    }
  }
  static Maybe<Optional<T>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index == kTVMFFINone) return Optional<T>();
    Maybe<T> value = TypeTraits<T>::TryFromView(v);
    if (!value.has_value()) return std::nullopt;
    return Optional<T>(std::move(*value));
  }
  static void TypeName(std::string* out) {
    TypeTraits<T>::TypeName(out);
    *out += " | None";
  }
  static void Schema(std::string* out) {
    *out += R"({"type":"Optional","args":[)";
    TypeTraits<T>::Schema(out);
    *out += "]}";
  }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_OPTIONAL_H_
