/*
 * TypeTraits<T>: how a C++ value travels in a TVMFFIAny (c_api.h), for every type that may be
 * an argument or result of a Function or an exported function. Scalars and generic object
 * handles are here; String, Array, Tensor, ... declare theirs beside themselves.
 *
 * An enabled TypeTraits<T> (T decayed) has:
 *   CopyToView(const T&, TVMFFIAny*)   a borrowed view of the value (arguments of a call);
 *   MoveToAny(T, TVMFFIAny*)           an owned value (results, Any);
 *   TryFromView(const TVMFFIAny&)      Maybe<T> holding its own copy, or nothing (nullopt)
 *                                      when the value is of another type; a value of the right
 *                                      type that does not fit throws ConversionError;
 *   TypeName(std::string*)             the Python-facing name used in messages ("int");
 *   Schema(std::string*)               the JSON type schema of the metadata export.
 */
#ifndef TVM_FFI_DETAIL_TYPE_TRAITS_H_
#define TVM_FFI_DETAIL_TYPE_TRAITS_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/detail/append.h>
#include <tvm/ffi/object.h>

#include <limits>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*!
 * \brief What TryFromView returns: a T, or nothing (std::nullopt), read as a std::optional is.
 *  Not std::optional itself: g++ 12 spends on one std::optional<T> as long as on some 300 lines
 *  of these headers, and every TypeTraits specialization that is not a template instantiates
 *  its return type in every translation unit, used or not (fourteen of them on load_inline's
 *  prelude; tests/cpp/test_header_cost.py).
 */
template <typename T>
class Maybe {
 public:
  Maybe(std::nullopt_t) noexcept {}                                         // NOLINT: implicit
  Maybe(T value) : has_value_(true) { new (&value_) T(std::move(value)); }  // NOLINT: implicit
  Maybe(Maybe&& other) : has_value_(other.has_value_) {
    if (has_value_) new (&value_) T(std::move(other.value_));
  }
  Maybe(const Maybe&) = delete;
  Maybe& operator=(const Maybe&) = delete;
  ~Maybe() { Reset(); }

  bool has_value() const noexcept { return has_value_; }
  T& operator*() noexcept { return value_; }
  const T& operator*() const noexcept { return value_; }
  T* operator->() noexcept { return &value_; }
  const T* operator->() const noexcept { return &value_; }
  template <typename... Args>
  void emplace(Args&&... args) {
    Reset();
    new (&value_) T(std::forward<Args>(args)...);
    has_value_ = true;
  }
  /*! \brief The std::optional the public API returns (AnyView::as<T>). */
  std::optional<T> ToStd() && {
    if (!has_value_) return std::nullopt;
    return std::optional<T>(std::move(value_));
  }

 private:
  void Reset() noexcept {
    if (has_value_) value_.~T();
    has_value_ = false;
  }
  union {
    T value_;
  };
  bool has_value_ = false;
};

/*!
 * \brief A value did not convert. The export wrapper adds the function and the position:
 * "f() argument 2[1] must be int, not str" (TypeError) or
 * "f() argument 1 must fit in uint8 [0, 255] (got 300)" (ValueError).
 */
struct ConversionError {
  std::string path;         // element indices inside the argument, e.g. "[1][0]"
  std::string expected;     // type error: expected type name
  std::string received;     // type error: received type name
  std::string value_error;  // non-empty for a ValueError: the text after the subject
};

/*! \brief The Python-facing name of a built-in type index, or nullptr for any other. */
inline const char* StaticTypeName(int32_t type_index) noexcept {
  switch (type_index) {
    case kTVMFFINone:
      return "None";
    case kTVMFFIInt:
      return "int";
    case kTVMFFIBool:
      return "bool";
    case kTVMFFIFloat:
      return "float";
    case kTVMFFIOpaquePtr:
      return "pointer";
    case kTVMFFIDataType:
      return "dtype";
    case kTVMFFIDevice:
      return "Device";
    case kTVMFFIDLTensorPtr:
    case kTVMFFITensor:
      return "Tensor";
    case kTVMFFIRawStr:
    case kTVMFFISmallStr:
    case kTVMFFIStr:
      return "str";
    case kTVMFFIByteArrayPtr:
    case kTVMFFISmallBytes:
    case kTVMFFIBytes:
      return "bytes";
    case kTVMFFIFunction:
      return "Function";
    case kTVMFFIShape:
      return "Shape";
    case kTVMFFIArray:
      return "Array";
    case kTVMFFIMap:
      return "Map";
    default:
      return nullptr;
  }
}

/*! \brief The Python-facing name of what a value holds, for "must be X, not Y". */
TVM_FFI_COLD inline std::string AnyTypeName(const TVMFFIAny& v) {
  if (const char* name = StaticTypeName(v.type_index)) return name;
  if (v.type_index >= kTVMFFIStaticObjectBegin) {
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(v.type_index);
    return std::string(info->type_key.data, info->type_key.size);
  }
  return Concat({"<type index ", DecimalText(v.type_index), ">"});
}

template <typename T, typename = void>
struct TypeTraits {
  static constexpr bool kEnabled = false;
};

template <typename T>
TVM_FFI_COLD std::string TypeName() {
  std::string name;
  TypeTraits<T>::TypeName(&name);
  return name;
}

template <typename T>
[[noreturn]] TVM_FFI_COLD void ThrowTypeMismatch(const TVMFFIAny& v) {
  throw ConversionError{"", TypeName<T>(), AnyTypeName(v), ""};
}

/*! \brief Converts or throws ConversionError: for elements of containers and for Any::cast. */
template <typename T>
T ConvertFromView(const TVMFFIAny& v) {
  Maybe<T> out = TypeTraits<T>::TryFromView(v);
  if (TVM_FFI_UNLIKELY(!out.has_value())) ThrowTypeMismatch<T>(v);
  return std::move(*out);
}

inline void SetPOD(TVMFFIAny* out, int32_t type_index) noexcept {
  out->type_index = type_index;
  out->zero_padding = 0;
  out->v_uint64 = 0;
}

inline bool IsObjectIndex(int32_t type_index) noexcept {
  return type_index >= kTVMFFIStaticObjectBegin;
}

/*! \brief The bytes of a str value in any of its forms, or false when it is no str. */
inline bool ViewStrBytes(const TVMFFIAny& v, TVMFFIByteArray* out) noexcept {
  if (v.type_index == kTVMFFISmallStr) {
    *out = {v.v_bytes, v.small_str_len};
  } else if (v.type_index == kTVMFFIRawStr) {
    *out = {v.v_c_str, std::char_traits<char>::length(v.v_c_str)};
  } else if (v.type_index == kTVMFFIStr) {
    *out = *reinterpret_cast<const TVMFFIByteArray*>(reinterpret_cast<const char*>(v.v_obj) +
                                                     sizeof(TVMFFIObject));
  } else {
    return false;
  }
  return true;
}

/*! \brief For traits whose value is a plain payload: views and owned values are the same. */
template <typename T>
struct PODTraits {
  static constexpr bool kEnabled = true;
  static void MoveToAny(T v, TVMFFIAny* out) { TypeTraits<T>::CopyToView(v, out); }
};

// ---- integers, floats, bool, enums ---------------------------------------------------------

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
    : PODTraits<T> {
  static void CopyToView(T v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIInt);
    out->v_int64 = static_cast<int64_t>(v);
  }
  static Maybe<T> TryFromView(const TVMFFIAny& v) {
    // bool is accepted because Python's bool is an int.
    if (TVM_FFI_UNLIKELY(v.type_index != kTVMFFIInt && v.type_index != kTVMFFIBool)) {
      return std::nullopt;
    }
    const int64_t x = v.v_int64;
    if constexpr (std::is_signed_v<T>) {
      if (TVM_FFI_LIKELY(x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                         x <= static_cast<int64_t>(std::numeric_limits<T>::max()))) {
        return static_cast<T>(x);
      }
    } else {
      if (TVM_FFI_LIKELY(x >= 0 && static_cast<uint64_t>(x) <= std::numeric_limits<T>::max())) {
        return static_cast<T>(x);
      }
    }
    ThrowOutOfRange(x);
  }
  static void TypeName(std::string* out) { *out += "int"; }
  static void Schema(std::string* out) { *out += R"({"type":"int"})"; }

 private:
  [[noreturn]] TVM_FFI_COLD static void ThrowOutOfRange(int64_t got) {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    throw ConversionError{
        "", "", "",
        Concat({"must fit in ", std::is_signed_v<T> ? "int" : "uint", DecimalText(sizeof(T) * 8),
                " [", DecimalText(static_cast<Wide>(std::numeric_limits<T>::min())), ", ",
                DecimalText(static_cast<Wide>(std::numeric_limits<T>::max())), "] (got ",
                DecimalText(got), ")"})};
  }
};

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> : PODTraits<T> {
  static void CopyToView(T v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIFloat);
    out->v_float64 = static_cast<double>(v);
  }
  static Maybe<T> TryFromView(const TVMFFIAny& v) noexcept {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIFloat)) return static_cast<T>(v.v_float64);
    if (v.type_index == kTVMFFIInt || v.type_index == kTVMFFIBool) {
      return static_cast<T>(v.v_int64);
    }
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "float"; }
  static void Schema(std::string* out) { *out += R"({"type":"float"})"; }
};

template <>
struct TypeTraits<bool> : PODTraits<bool> {
  static void CopyToView(bool v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIBool);
    out->v_int64 = v ? 1 : 0;
  }
  static Maybe<bool> TryFromView(const TVMFFIAny& v) noexcept {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIBool)) return v.v_int64 != 0;
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "bool"; }
  static void Schema(std::string* out) { *out += R"({"type":"bool"})"; }
};

/*! \brief Enumerations travel as their underlying integer. */
template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_enum_v<T>>> : PODTraits<T> {
  using Int = TypeTraits<std::underlying_type_t<T>>;
  static void CopyToView(T v, TVMFFIAny* out) noexcept {
    Int::CopyToView(static_cast<std::underlying_type_t<T>>(v), out);
  }
  static Maybe<T> TryFromView(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIInt) return std::nullopt;
    return static_cast<T>(*Int::TryFromView(v));
  }
  static void TypeName(std::string* out) { *out += "int"; }
  static void Schema(std::string* out) { *out += R"({"type":"int"})"; }
};

/*! \brief An opaque address: a pointer, None (NULL), or a non-negative int. */
template <>
struct TypeTraits<void*> : PODTraits<void*> {
  static void CopyToView(void* v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIOpaquePtr);  // NULL too, as apache's headers send it
    out->v_ptr = v;
  }
  static Maybe<void*> TryFromView(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIOpaquePtr)) return v.v_ptr;
    if (v.type_index == kTVMFFINone) return nullptr;
    if (v.type_index == kTVMFFIInt) {
      if (v.v_int64 >= 0) return reinterpret_cast<void*>(static_cast<uintptr_t>(v.v_int64));
      throw ConversionError{
          "", "", "",
          Concat({"must be a non-negative address (got ", DecimalText(v.v_int64), ")"})};
    }
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "pointer"; }
  static void Schema(std::string* out) { *out += R"({"type":"void*"})"; }
};

/*! \brief A data type: a dtype value, or its string form ("float32", "bfloat16", "int8x4"). */
template <>
struct TypeTraits<DLDataType> : PODTraits<DLDataType> {
  static void CopyToView(DLDataType v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIDataType);
    out->v_dtype = v;
  }
  static Maybe<DLDataType> TryFromView(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIDataType)) return v.v_dtype;
    TVMFFIByteArray text;
    if (!ViewStrBytes(v, &text)) return std::nullopt;
    DLDataType dtype;
    if (TVMFFIDataTypeFromString(&text, &dtype) != 0) {
      TVMFFIObjectHandle raised = nullptr;  // the runtime's wording is replaced by ours
      TVMFFIErrorMoveFromRaised(&raised);
      if (raised != nullptr) TVMFFIObjectDecRef(raised);
      throw ConversionError{"", "", "",
                            Concat({"must name a data type such as float32 (got \"",
                                    std::string_view(text.data, text.size), "\")"})};
    }
    return dtype;
  }
  static void TypeName(std::string* out) { *out += "dtype"; }
  static void Schema(std::string* out) { *out += R"({"type":"DataType"})"; }
};

template <>
struct TypeTraits<DLDevice> : PODTraits<DLDevice> {
  static void CopyToView(DLDevice v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIDevice);
    out->v_device = v;
  }
  static Maybe<DLDevice> TryFromView(const TVMFFIAny& v) noexcept {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIDevice)) return v.v_device;
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "Device"; }
  static void Schema(std::string* out) { *out += R"({"type":"Device"})"; }
};

// ---- object handles ------------------------------------------------------------------------

/*! \brief Handle classes whose traits are their own (String, Array, Tensor, ...), not below. */
template <typename T, typename = void>
struct HasOwnTraits : std::false_type {};

/*! \brief Reads an object handle of type Ref from a view: borrowed + counted, or moved. */
template <typename Ref>
Maybe<Ref> ObjectRefFromView(const TVMFFIAny& v) {
  using Obj = typename Ref::ContainerType;
  // Registers Obj's type now if needed; a refusal (its key taken by another layout) throws with
  // the runtime's message instead of reading as "not an Obj".
  (void)Obj::RuntimeTypeIndex();
  if (v.type_index == kTVMFFINone) {
    if constexpr (Ref::_type_is_nullable) return Ref(UnsafeInit{});
    return std::nullopt;
  }
  if (v.type_index == kTVMFFIObjectRValueRef) {
    // The caller lets the callee take its reference (std::move of an argument).
    ObjectRef* src = static_cast<ObjectRef*>(v.v_ptr);
    const TVMFFIObject* h = ObjectUnsafe::HeaderOf(*src);
    if (h == nullptr || !ObjectUnsafe::FromHeader(h)->IsInstance<Obj>()) return std::nullopt;
    return ObjectUnsafe::RefFromOwned<Ref>(ObjectUnsafe::MoveRefToOwned(src));
  }
  if (!IsObjectIndex(v.type_index) || !ObjectUnsafe::FromHeader(v.v_obj)->IsInstance<Obj>()) {
    return std::nullopt;
  }
  return ObjectUnsafe::RefFromBorrowed<Ref>(v.v_obj);
}

/*! \brief Writes a handle as an object value (None when empty). */
inline void ObjectHeaderToAny(TVMFFIObject* h, TVMFFIAny* out) noexcept {
  if (h == nullptr) {
    SetPOD(out, kTVMFFINone);
  } else {
    out->type_index = h->type_index;
    out->zero_padding = 0;
    out->v_obj = h;
  }
}

template <typename Ref>
struct ObjectRefTraits {
  static constexpr bool kEnabled = true;
  static void CopyToView(const Ref& v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::HeaderOf(v), out);
  }
  static void MoveToAny(Ref v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::MoveRefToOwned(&v), out);
  }
  static Maybe<Ref> TryFromView(const TVMFFIAny& v) { return ObjectRefFromView<Ref>(v); }
  static void TypeName(std::string* out) { *out += Ref::ContainerType::_type_key; }
  static void Schema(std::string* out) {
    *out += R"({"type":")";
    *out += Ref::ContainerType::_type_key;
    *out += R"("})";
  }
};

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_base_of_v<ObjectRef, T> && !HasOwnTraits<T>::value>>
    : ObjectRefTraits<T> {};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_TYPE_TRAITS_H_
