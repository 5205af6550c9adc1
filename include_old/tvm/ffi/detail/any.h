/*
 * The implementation behind tvm/ffi/any.h (the public header).
 *
 * tvm::ffi::AnyView and tvm::ffi::Any: one value of any type the ABI carries.
 *
 * AnyView borrows (an argument of the call, or a C++ value that outlives the view); Any owns
 * (strings and containers are copied, objects hold a reference). Both convert to a typed value
 * with cast<T>() (throws TypeError) or as<T>() / try_cast<T>() (std::optional). As parameters
 * of an exported function they accept any argument; as results they return their value.
 */
#ifndef TVM_FFI_DETAIL_ANY_H_
#define TVM_FFI_DETAIL_ANY_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/any_convert.h>
#include <tvm/ffi/detail/export.h>
#include <tvm/ffi/detail/object_convert.h>
#include <tvm/ffi/detail/object.h>

#include <optional>
#include <type_traits>
#include <utility>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

namespace detail {

/*! \brief What an Any's value points into: a result block, shared by the copies of one Any. */
struct AnyBlock {
  RefCount<int32_t> refs{1};
  TVMFFIObject* block;
  explicit AnyBlock(TVMFFIObject* b) noexcept : block(b) {}
  ~AnyBlock() { block->deleter(block); }
};

/*! \brief cast<T>() of a value that is not a T: a TypeError naming both types. */
[[noreturn]] TVM_FFI_COLD inline void ThrowCastError(const ConversionError& e) {
  if (!e.value_error.empty()) throw Error("ValueError", Concat({"value ", e.value_error}));
  if (!e.type_error.empty()) throw Error("TypeError", Concat({"value ", e.type_error}));
  throw Error("TypeError", Concat({"Cannot convert from type `", e.received, "` to `",
                                   e.expected, "`"}));
}

template <typename T>
T CastValue(const TVMFFIAny& v) {
  using U = std::decay_t<T>;
  static_assert(TypeTraits<U>::kArg, "cast<T>(): T is not a type values convert to");
  try {
    return TypeTraits<U>::FromArg(v);
  } catch (const ConversionError& e) {
    ThrowCastError(e);
  }
}

template <typename T>
std::optional<T> TryCastValue(const TVMFFIAny& v) {
  try {
    return TypeTraits<std::decay_t<T>>::FromArg(v);
  } catch (const ConversionError&) {
    return std::nullopt;
  }
}

/*! \brief Sets `out` to borrow `value` (no copy): the value must outlive `out`. */
template <typename T>
void BorrowValue(const T& value, TVMFFIAny* out) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, std::nullptr_t>) {
    SetScalar(out, kTVMFFINone);
    out->v_int64 = 0;
  } else if constexpr (std::is_same_v<U, TensorView> || std::is_same_v<U, Tensor>) {
    SetScalar(out, kTVMFFIDLTensorPtr);
    out->v_tensor = const_cast<DLTensor*>(value.operator->());
  } else if constexpr (std::is_same_v<U, DLTensor*> || std::is_same_v<U, const DLTensor*>) {
    SetScalar(out, kTVMFFIDLTensorPtr);
    out->v_tensor = const_cast<DLTensor*>(value);
  } else if constexpr (std::is_base_of_v<ObjectRef, U>) {
    if (!value.defined()) {
      SetScalar(out, kTVMFFINone);
      out->v_int64 = 0;
      return;
    }
    SetScalar(out, kTVMFFIRefObject);
    out->v_ptr = ObjectCells::CellOfRef(value);
  } else if constexpr (std::is_same_v<U, std::string> || std::is_same_v<U, String> ||
                       std::is_same_v<U, std::string_view>) {
    SetScalar(out, kTVMFFIStr);
    out->v_str = value.data();
    out->size = static_cast<int64_t>(value.size());
  } else if constexpr (std::is_same_v<U, const char*> || std::is_same_v<U, char*>) {
    SetScalar(out, kTVMFFIStr);
    out->v_str = value;
    out->size = static_cast<int64_t>(std::char_traits<char>::length(value));
  } else {
    static_assert(TypeTraits<U>::kInlineResult, "AnyView: unsupported value type");
    TypeTraits<U>::ToResult(value, out, nullptr);  // scalars: no memory
  }
}

}  // namespace detail

// compat: apache-tvm-ffi (its hand-written C entries write a result through
// TypeTraits<T>::CopyToAnyView, e.g. None: TypeTraits<std::nullptr_t>::CopyToAnyView(nullptr, r))
template <typename T>
struct TypeTraits {
  static void CopyToAnyView(const T& value, TVMFFIAny* out) { detail::BorrowValue(value, out); }
};

namespace detail {

/*! \brief What AnyView and Any both offer, read from Derived::raw(). */
template <typename Derived>
class AnyReader {
 public:
  /*! \brief The value as a T; TypeError when it is not one. */
  template <typename T>
  T cast() const {
    return CastValue<T>(Raw());
  }
  /*! \brief The value as a T, or nothing when it is not one. */
  template <typename T>
  std::optional<T> as() const {
    return TryCastValue<T>(Raw());
  }
  template <typename T>
  std::optional<T> try_cast() const {
    return TryCastValue<T>(Raw());
  }
  /*! \brief The TVMFFITypeCode of the value. */
  int32_t type_code() const noexcept { return Raw().type_code; }
  /*! \brief The Python-facing name of the value's type ("int", "str", "Tensor", ...). */
  std::string GetTypeKey() const { return AnyTypeName(Raw()); }
  bool operator==(std::nullptr_t) const noexcept { return Raw().type_code == kTVMFFINone; }
  bool operator!=(std::nullptr_t) const noexcept { return Raw().type_code != kTVMFFINone; }

 private:
  const TVMFFIAny& Raw() const noexcept { return static_cast<const Derived&>(*this).raw(); }
};

}  // namespace detail

/*! \brief A borrowed value of any type; cheap to copy. */
class AnyView : public detail::AnyReader<AnyView> {
 public:
  AnyView() noexcept { detail::SetScalar(&value_, kTVMFFINone), value_.v_int64 = 0; }
  /*! \brief Views a value the ABI delivered (an argument). */
  AnyView(const TVMFFIAny& value) noexcept : value_(value) {}  // NOLINT: implicit on purpose
  template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, AnyView> &&
                                                    !std::is_same_v<std::decay_t<T>, TVMFFIAny>>>
  AnyView(const T& value) {  // NOLINT: implicit, as values pass to a function
    detail::BorrowValue(value, &value_);
  }
  AnyView(const char* value) { detail::BorrowValue(value, &value_); }  // NOLINT

  /*! \brief The raw ABI value. */
  const TVMFFIAny& raw() const noexcept { return value_; }

 private:
  TVMFFIAny value_;
};

/*! \brief An owned value of any type: copies share the memory, objects keep a reference. */
class Any : public detail::AnyReader<Any> {
 public:
  Any() noexcept { detail::SetScalar(&value_, kTVMFFINone), value_.v_int64 = 0; }
  Any(std::nullptr_t) noexcept : Any() {}  // NOLINT
  Any(const Any& other) noexcept : value_(other.value_), block_(other.block_) { Retain(); }
  Any(Any&& other) noexcept : value_(other.value_), block_(std::exchange(other.block_, nullptr)) {
    detail::SetScalar(&other.value_, kTVMFFINone);
  }
  Any& operator=(Any other) noexcept {
    std::swap(value_, other.value_);
    std::swap(block_, other.block_);
    return *this;
  }
  ~Any() { Release(); }

  /*! \brief A copy of what the view shows (strings and containers copied, objects retained). */
  Any(const AnyView& view) { Own(view.raw()); }  // NOLINT: implicit on purpose
  template <typename T,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, Any> &&
                                        !std::is_same_v<std::decay_t<T>, AnyView> &&
                                        !std::is_same_v<std::decay_t<T>, std::nullptr_t>>>
  Any(const T& value) {  // NOLINT: implicit, as values pass to a function
    if constexpr (std::is_base_of_v<ObjectRef, T> || std::is_same_v<T, TensorView> ||
                  std::is_same_v<T, Tensor> || std::is_same_v<T, const char*>) {
      Own(AnyView(value).raw());
    } else {
      TVMFFIResult result;
      detail::SetResult<T>(value, &result);
      value_ = result.value;
      if (result.owner != nullptr) block_ = new detail::AnyBlock(result.owner);
    }
  }
  Any(const char* value) { Own(AnyView(value).raw()); }  // NOLINT

  /*! \brief Takes over a call's successful result (its value and its owner). */
  static Any FromResult(const TVMFFIResult& result) {
    Any any;
    any.value_ = result.value;
    if (result.owner != nullptr) any.block_ = new detail::AnyBlock(result.owner);
    return any;
  }

  operator AnyView() const noexcept { return AnyView(value_); }  // NOLINT
  const TVMFFIAny& raw() const noexcept { return value_; }

 private:
  // Objects are counted through their cell; everything else through the shared block.
  void Retain() noexcept {
    if (value_.type_code == kTVMFFIRefObject) detail::RetainCell(Cell());
    if (block_ != nullptr) block_->refs.Increment();
  }
  void Release() noexcept {
    if (value_.type_code == kTVMFFIRefObject) detail::ReleaseCell(Cell());
    if (block_ != nullptr && block_->refs.Decrement()) delete block_;
    block_ = nullptr;
  }
  TVMFFIRefObject* Cell() const noexcept { return static_cast<TVMFFIRefObject*>(value_.v_ptr); }
  void Own(const TVMFFIAny& view) {
    TVMFFIResult result;
    detail::CopyValueToResult(view, &result);
    value_ = result.value;
    if (result.owner != nullptr) block_ = new detail::AnyBlock(result.owner);
    if (value_.type_code == kTVMFFIRefObject) detail::RetainCell(Cell());
  }

  TVMFFIAny value_;
  detail::AnyBlock* block_ = nullptr;
};

namespace detail {

template <>
struct TypeTraits<AnyView> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "Any"; }
  static AnyView FromArg(const TVMFFIAny& v) { return AnyView(v); }
  static size_t ResultBytes(const AnyView& v) { return ValueBytes(v.raw()); }
  static void ToResult(const AnyView& v, TVMFFIAny* out, char** cursor) {
    CopyValue(v.raw(), out, cursor, /*top_level=*/true);
    // An object result is the receiver's new reference.
    if (out->type_code == kTVMFFIRefObject) RetainCell(static_cast<TVMFFIRefObject*>(out->v_ptr));
  }
};

template <>
struct TypeTraits<Any> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "Any"; }
  static Any FromArg(const TVMFFIAny& v) { return Any(AnyView(v)); }
  static size_t ResultBytes(const Any& v) { return ValueBytes(v.raw()); }
  static void ToResult(const Any& v, TVMFFIAny* out, char** cursor) {
    CopyValue(v.raw(), out, cursor, /*top_level=*/true);
    // An object result is the receiver's new reference.
    if (out->type_code == kTVMFFIRefObject) RetainCell(static_cast<TVMFFIRefObject*>(out->v_ptr));
  }
};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_ANY_H_
