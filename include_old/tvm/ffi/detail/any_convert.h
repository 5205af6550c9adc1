/*
 * Conversions between TVMFFIAny and the C++ types an exported function may take or return.
 *
 * TypeTraits<T> (for decayed T) provides:
 *   AppendName(out)            the Python-facing type name used in signatures and errors;
 *   FromArg(any) -> T          when kArg; throws ConversionError on a mismatch;
 *   ResultBytes(v) -> size_t   when kResult: heap bytes the value needs (a multiple of 8);
 *   ToResult(v, out, cursor)   when kResult: writes the value, carving memory from cursor;
 *   kInlineResult              true when a value with ResultBytes() == 0 never touches cursor
 *                              (scalars, empty strings), so no allocation is made at all.
 * A result is written in two passes (measure, then fill) so that all of its memory is one
 * allocation, freed by one deleter call. The containers' traits are in container_convert.h.
 */
#ifndef TVM_FFI_DETAIL_ANY_CONVERT_H_
#define TVM_FFI_DETAIL_ANY_CONVERT_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/dtype.h>
#include <tvm/ffi/detail/tensor.h>
#include <tvm/ffi/detail/string.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

/*!
 * \brief A value did not convert. The export wrapper adds the function name and the argument
 * position: "f() argument 2[1] must be int, not str" (TypeError) or
 * "f() argument 1 must fit in uint8 [0, 255] (got 300)" (ValueError).
 */
struct ConversionError {
  std::string path;         // element indices inside the argument, e.g. "[1][0]"
  std::string expected;     // type error: expected type name
  std::string received;     // type error: received type name
  std::string value_error;  // non-empty for a ValueError: the text after the subject
  std::string type_error = {};  // non-empty for a TypeError not worded "must be X, not Y"
};

TVM_FFI_COLD inline std::string AnyTypeName(const TVMFFIAny& v) {
  const char* name = nullptr;
  switch (v.type_code) {
    case kTVMFFINone: name = "None"; break;
    case kTVMFFIInt: name = "int"; break;
    case kTVMFFIFloat: name = "float"; break;
    case kTVMFFIBool: name = "bool"; break;
    case kTVMFFIStr: name = "str"; break;
    case kTVMFFIBytes: name = "bytes"; break;
    case kTVMFFIDLTensorPtr: name = "Tensor"; break;
    case kTVMFFIArray: name = (v.flags & TVM_FFI_ARRAY_IS_TUPLE) ? "tuple" : "list"; break;
    case kTVMFFIOpaquePtr: name = "pointer"; break;
    case kTVMFFIMap: name = "dict"; break;
    case kTVMFFIUnsupported: name = v.v_str != nullptr ? v.v_str : "unknown"; break;
    case kTVMFFIRefObject: name = static_cast<TVMFFIRefObject*>(v.v_ptr)->type->type_key; break;
    default: return Concat({"<type code ", DecimalText(v.type_code), ">"});
  }
  return name;
}

template <typename T, typename = void>
struct TypeTraits {
  static constexpr bool kArg = false;
  static constexpr bool kResult = false;
  static constexpr bool kInlineResult = false;
};

/*! \brief Types whose results hold references a result block cannot release (objects). */
template <typename T, typename = void>
struct IsTopLevelOnly : std::false_type {};
template <typename T>
struct IsTopLevelOnly<T, std::void_t<decltype(TypeTraits<T>::kTopLevelOnly)>>
    : std::bool_constant<TypeTraits<T>::kTopLevelOnly> {};

template <typename T>
TVM_FFI_COLD std::string TypeName() {
  std::string name;
  TypeTraits<T>::AppendName(&name);
  return name;
}

template <typename T>
[[noreturn]] TVM_FFI_COLD void ThrowTypeMismatch(const TVMFFIAny& v) {
  throw ConversionError{"", TypeName<T>(), AnyTypeName(v), ""};
}

// An integer type's range without <limits> (one header fewer for every wrapper to parse).
template <typename T>
constexpr T IntMax() {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(std::is_signed_v<T> ? static_cast<U>(static_cast<U>(~U{0}) >> 1)
                                            : static_cast<U>(~U{0}));
}
template <typename T>
constexpr T IntMin() {
  return std::is_signed_v<T> ? static_cast<T>(-IntMax<T>() - 1) : T{0};
}

constexpr size_t RoundUp8(size_t n) { return (n + 7) & ~static_cast<size_t>(7); }

inline void SetScalar(TVMFFIAny* out, int32_t type_code) {
  out->type_code = type_code;
  out->flags = 0;
  out->size = 0;
}

// ---- strings -------------------------------------------------------------------------------

/*! \brief Shared by every type that travels as kTVMFFIStr or kTVMFFIBytes. */
template <int32_t kTypeCode>
struct CharsResult {
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static size_t ResultBytes(std::string_view v) { return v.empty() ? 0 : RoundUp8(v.size() + 1); }
  static void ToResult(std::string_view v, TVMFFIAny* out, char** cursor) {
    SetScalar(out, kTypeCode);
    out->size = static_cast<int64_t>(v.size());
    if (v.empty()) {
      out->v_str = "";  // static storage: an empty result needs no allocation
      return;
    }
    // No string reaches PTRDIFF_MAX bytes; saying so keeps GCC 12 at -O1 from warning
    // (-Wstringop-overflow) about a size it imagines near SIZE_MAX.
    if (TVM_FFI_UNLIKELY(v.size() >= static_cast<size_t>(PTRDIFF_MAX))) throw std::bad_alloc();
    char* dst = *cursor;
    std::memcpy(dst, v.data(), v.size());
    dst[v.size()] = '\0';
    out->v_str = dst;
    *cursor += RoundUp8(v.size() + 1);
  }
};

template <typename T>
struct StrTraits : CharsResult<kTVMFFIStr> {
  static constexpr bool kArg = true;
  static void AppendName(std::string* out) { *out += "str"; }
  static T FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIStr)) {
      return T(v.v_str, static_cast<size_t>(v.size));
    }
    ThrowTypeMismatch<T>(v);
  }
};

template <>
struct TypeTraits<String> : StrTraits<String> {};
template <>
struct TypeTraits<std::string> : StrTraits<std::string> {};
/*! \brief Zero-copy: views the caller's characters, valid until the function returns. */
template <>
struct TypeTraits<std::string_view> : StrTraits<std::string_view> {};

/*! \brief Argument only (NUL-terminated, borrowed); return String to return text. */
template <>
struct TypeTraits<const char*> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = false;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "str"; }
  static const char* FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIStr)) {
      // The callee would see only the text before the first NUL: refuse, never cut.
      if (TVM_FFI_UNLIKELY(std::memchr(v.v_str, '\0', static_cast<size_t>(v.size)) != nullptr)) {
        throw ConversionError{"", "", "",
                              "holds a NUL character, where a const char* parameter would end "
                              "(take std::string or tvm::ffi::String for text with NULs)"};
      }
      return v.v_str;
    }
    ThrowTypeMismatch<const char*>(v);
  }
};

template <>
struct TypeTraits<Bytes> : CharsResult<kTVMFFIBytes> {
  static constexpr bool kArg = true;
  static void AppendName(std::string* out) { *out += "bytes"; }
  static Bytes FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIBytes)) {
      return Bytes(v.v_str, static_cast<size_t>(v.size));
    }
    ThrowTypeMismatch<Bytes>(v);
  }
};

// ---- scalars -------------------------------------------------------------------------------

/*! \brief Every integer type but bool. Python ints arrive as int64 and are range-checked. */
template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static void AppendName(std::string* out) { *out += "int"; }

  static T FromArg(const TVMFFIAny& v) {
    // bool is accepted because Python's bool is an int.
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIInt || v.type_code == kTVMFFIBool)) {
      int64_t x = v.v_int64;
      if (TVM_FFI_UNLIKELY(v.flags & TVM_FFI_INT_IS_UNSIGNED)) {  // 2**63 .. 2**64-1
        const uint64_t u = static_cast<uint64_t>(x);
        if constexpr (std::is_unsigned_v<T> && sizeof(T) == sizeof(uint64_t)) return u;
        ThrowOutOfRange(DecimalText(u));
      }
      if (TVM_FFI_LIKELY(Fits(x))) return static_cast<T>(x);
      ThrowOutOfRange(DecimalText(x));
    }
    ThrowTypeMismatch<T>(v);
  }
  static size_t ResultBytes(T) { return 0; }
  static void ToResult(T v, TVMFFIAny* out, char**) {
    SetScalar(out, kTVMFFIInt);
    out->v_int64 = static_cast<int64_t>(v);
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      if (v > static_cast<T>(INT64_MAX)) {
        out->flags = TVM_FFI_INT_IS_UNSIGNED;
      }
    }
  }

 private:
  static bool Fits(int64_t x) {
    if constexpr (std::is_signed_v<T>) {
      return x >= static_cast<int64_t>(IntMin<T>()) &&
             x <= static_cast<int64_t>(IntMax<T>());
    } else {
      return x >= 0 && static_cast<uint64_t>(x) <= IntMax<T>();
    }
  }
  [[noreturn]] TVM_FFI_COLD static void ThrowOutOfRange(const DecimalText& got) {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    throw ConversionError{
        "", "", "",
        Concat({"must fit in ", std::is_signed_v<T> ? "int" : "uint", DecimalText(sizeof(T) * 8),
                " [", DecimalText(static_cast<Wide>(IntMin<T>())), ", ",
                DecimalText(static_cast<Wide>(IntMax<T>())), "] (got ", got,
                ")"})};
  }
};

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static void AppendName(std::string* out) { *out += "float"; }
  static T FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIFloat)) return static_cast<T>(v.v_float64);
    if (v.type_code == kTVMFFIInt || v.type_code == kTVMFFIBool) {
      return static_cast<T>(v.v_int64);
    }
    ThrowTypeMismatch<T>(v);
  }
  static size_t ResultBytes(T) { return 0; }
  static void ToResult(T v, TVMFFIAny* out, char**) {
    SetScalar(out, kTVMFFIFloat);
    out->v_float64 = static_cast<double>(v);
  }
};

template <>
struct TypeTraits<bool> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static void AppendName(std::string* out) { *out += "bool"; }
  static bool FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIBool)) return v.v_int64 != 0;
    ThrowTypeMismatch<bool>(v);
  }
  static size_t ResultBytes(bool) { return 0; }
  static void ToResult(bool v, TVMFFIAny* out, char**) {
    SetScalar(out, kTVMFFIBool);
    out->v_int64 = v ? 1 : 0;
  }
};

/*! \brief Enumerations travel as their underlying integer. */
template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_enum_v<T>>> {
  using Int = TypeTraits<std::underlying_type_t<T>>;
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static void AppendName(std::string* out) { *out += "int"; }
  static T FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_UNLIKELY(v.type_code != kTVMFFIInt)) ThrowTypeMismatch<T>(v);
    return static_cast<T>(Int::FromArg(v));
  }
  static size_t ResultBytes(T) { return 0; }
  static void ToResult(T v, TVMFFIAny* out, char** cursor) {
    Int::ToResult(static_cast<std::underlying_type_t<T>>(v), out, cursor);
  }
};

/*!
 * \brief A data type travels as its string form ("float32", "bfloat16", "int8x4"): Python
 * passes a str, a torch.dtype or a numpy dtype, and gets a str back.
 */
template <>
struct TypeTraits<DLDataType> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "dtype"; }
  static DLDataType FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_UNLIKELY(v.type_code != kTVMFFIStr)) ThrowTypeMismatch<DLDataType>(v);
    const std::string_view text(v.v_str, static_cast<size_t>(v.size));
    try {
      return StringToDLDataType(text);
    } catch (const Error&) {
      throw ConversionError{"", "", "",
                            Concat({"must name a data type such as float32 (got \"", text,
                                    "\")"})};
    }
  }
  static size_t ResultBytes(DLDataType v) { return RoundUp8(Text(v).size() + 1); }
  static void ToResult(DLDataType v, TVMFFIAny* out, char** cursor) {
    CharsResult<kTVMFFIStr>::ToResult(Text(v), out, cursor);
  }

 private:
  static std::string Text(DLDataType v) {
    std::string text;
    AppendDType(text, v);
    return text;
  }
};

/*! \brief An opaque address: accepts a pointer, a non-negative int, or None (NULL). */
template <>
struct TypeTraits<void*> {
  static constexpr bool kArg = true;
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;
  static void AppendName(std::string* out) { *out += "pointer"; }
  static void* FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIOpaquePtr)) return v.v_ptr;
    if (v.type_code == kTVMFFINone) return nullptr;
    if (v.type_code == kTVMFFIInt) {
      // 2**63 .. 2**64-1 arrive flagged unsigned: addresses too.
      if (v.v_int64 >= 0 || (v.flags & TVM_FFI_INT_IS_UNSIGNED) != 0) {
        return reinterpret_cast<void*>(static_cast<uintptr_t>(v.v_int64));
      }
      throw ConversionError{
          "", "", "", Concat({"must be a non-negative address (got ", DecimalText(v.v_int64), ")"})};
    }
    ThrowTypeMismatch<void*>(v);
  }
  static size_t ResultBytes(void*) { return 0; }
  static void ToResult(void* v, TVMFFIAny* out, char**) {
    SetScalar(out, kTVMFFIOpaquePtr);
    out->v_ptr = v;
  }
};

// ---- tensors (arguments only: the caller owns the memory) -----------------------------------

template <typename T>
struct TensorTraits {
  static constexpr bool kArg = true;
  static constexpr bool kResult = false;
  static constexpr bool kInlineResult = false;
  static void AppendName(std::string* out) { *out += "Tensor"; }
  static T FromArg(const TVMFFIAny& v) {
    if (TVM_FFI_LIKELY(v.type_code == kTVMFFIDLTensorPtr)) {
      if constexpr (std::is_same_v<T, TensorView> || std::is_same_v<T, Tensor>) {
        return T(v.v_tensor, (v.flags & TVM_FFI_TENSOR_IS_READ_ONLY) != 0);
      } else {
        return T(v.v_tensor);
      }
    }
    ThrowTypeMismatch<T>(v);
  }
};

template <>
struct TypeTraits<TensorView> : TensorTraits<TensorView> {};
template <>
struct TypeTraits<DLTensor*> : TensorTraits<DLTensor*> {};
template <>
struct TypeTraits<const DLTensor*> : TensorTraits<const DLTensor*> {};

/*!
 * \brief An owning Tensor. As an argument it borrows the caller's tensor for the call; as a
 * result its memory goes to the caller (kTVMFFIDLManagedTensor), which becomes the owner.
 * Returning a borrowed argument hands back its DLTensor (kTVMFFIDLTensorPtr): the caller
 * recognises one of its own arguments and returns that object.
 */
template <>
struct TypeTraits<Tensor> : TensorTraits<Tensor> {
  static constexpr bool kResult = true;
  static constexpr bool kInlineResult = true;  // the memory travels by pointer: no block
  static size_t ResultBytes(const Tensor&) { return 0; }
  static void ToResult(const Tensor& v, TVMFFIAny* out, char**) {
    if (!v.defined()) {
      SetScalar(out, kTVMFFINone);
      out->v_int64 = 0;
      return;
    }
    if (v.borrowed() != nullptr) {
      SetScalar(out, kTVMFFIDLTensorPtr);
      out->v_tensor = const_cast<DLTensor*>(v.borrowed());
      return;
    }
    SetScalar(out, kTVMFFIDLManagedTensor);
    out->v_ptr = v.ReleaseToCaller();
  }
};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_ANY_CONVERT_H_
