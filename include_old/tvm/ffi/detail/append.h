/*
 * AppendTo(std::string&, value): the text formatting behind TVM_FFI_THROW / TVM_FFI_CHECK.
 *
 * Why not std::ostringstream: <sstream> roughly doubles what every translation unit that
 * includes the core headers has to parse (nvcc parses it twice). The output matches what
 * `std::ostream <<` prints for the same values; docs/guides/cpp_core.md lists the types.
 */
#ifndef TVM_FFI_DETAIL_APPEND_H_
#define TVM_FFI_DETAIL_APPEND_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace detail {

template <typename T>
inline constexpr bool kAlwaysFalse = false;

template <typename T>
inline constexpr bool kIsCharType =
    std::is_same_v<T, char> || std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>;

inline void AppendSigned(std::string& out, long long value) {
  char buf[24];
  int n = std::snprintf(buf, sizeof(buf), "%lld", value);
  out.append(buf, static_cast<size_t>(n));
}

inline void AppendUnsigned(std::string& out, unsigned long long value) {
  char buf[24];
  int n = std::snprintf(buf, sizeof(buf), "%llu", value);
  out.append(buf, static_cast<size_t>(n));
}

/*! \brief "%g": what std::ostream prints with its default precision of 6. */
inline void AppendFloat(std::string& out, long double value) {
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf), "%Lg", value);
  out.append(buf, static_cast<size_t>(n));
}

/*! \brief Like std::ostream: "0x" and lowercase hex, "0" for null. */
inline void AppendPointer(std::string& out, const void* ptr) {
  if (ptr == nullptr) {
    out += '0';
    return;
  }
  char buf[2 + 2 * sizeof(void*) + 1];
  int n = std::snprintf(buf, sizeof(buf), "0x%llx",
                        static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(ptr)));
  out.append(buf, static_cast<size_t>(n));
}

/*! \brief An integer's decimal digits, viewable as a std::string_view: Concat's numbers. */
class DecimalText {
 public:
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  explicit DecimalText(Int value) noexcept {
    if constexpr (std::is_signed_v<Int>) {
      size_ = std::snprintf(buf_, sizeof(buf_), "%lld", static_cast<long long>(value));
    } else {
      size_ = std::snprintf(buf_, sizeof(buf_), "%llu", static_cast<unsigned long long>(value));
    }
  }
  operator std::string_view() const noexcept {  // NOLINT: implicit, for Concat's list
    return std::string_view(buf_, static_cast<size_t>(size_));
  }

 private:
  char buf_[24];
  int size_;
};

/*!
 * \brief The parts joined into one string. Error messages are built with this instead of
 *  chains of std::string operator+, each of which puts a temporary, its growth and its
 *  cleanup inline in the caller; -O2 then spends its time on code that runs only on failure.
 */
TVM_FFI_COLD inline std::string Concat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (std::string_view part : parts) out.append(part.data(), part.size());
  return out;
}

/*! \brief "float32", "int8", "bfloat16", "float8_e4m3fn", "float32x4", ... (dtype.h). */
void AppendDType(std::string& out, DLDataType dtype);
/*! \brief "cpu:0", "cuda:1", ... */
void AppendDevice(std::string& out, DLDevice device);

/*!
 * \brief True when `std::ostream << value` is declared for T (a user type's own operator<<).
 * OS stays a template parameter so that nothing here needs <ostream> until a type actually
 * uses it: with std::ostream still incomplete, only free operator<< overloads are candidates.
 */
template <typename T, typename OS = std::ostream, typename = void>
struct HasOstreamInsert : std::false_type {};
template <typename T, typename OS>
struct HasOstreamInsert<T, OS,
                        std::void_t<decltype(std::declval<OS&>() << std::declval<const T&>())>>
    : std::true_type {};

/*!
 * \brief A streambuf that appends to a std::string: formats through a type's operator<<
 * without <sstream>. Buf is a template parameter for the same reason as above; the user's
 * translation unit, which defined the operator<<, has <ostream>.
 */
template <typename Buf = std::streambuf>
class StringAppendBuf : public Buf {
 public:
  explicit StringAppendBuf(std::string* out) : out_(out) {}

 protected:
  typename Buf::int_type overflow(typename Buf::int_type c) override {
    if (!Buf::traits_type::eq_int_type(c, Buf::traits_type::eof())) {
      out_->push_back(Buf::traits_type::to_char_type(c));
    }
    return Buf::traits_type::not_eof(c);
  }
  // std::streamsize, named through Buf: libc++'s <iosfwd> does not declare it.
  using Size = decltype(std::declval<Buf&>().sputn(nullptr, 0));
  Size xsputn(const char* s, Size n) override {
    out_->append(s, static_cast<size_t>(n));
    return n;
  }

 private:
  std::string* out_;
};

template <typename T, typename OS = std::ostream>
void AppendThroughOstream(std::string& out, const T& value) {
  StringAppendBuf<std::basic_streambuf<typename OS::char_type, typename OS::traits_type>> buf(
      &out);
  OS os(&buf);
  os << value;
}

template <typename T>
void AppendTo(std::string& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    out += value ? '1' : '0';  // std::ostream without std::boolalpha
  } else if constexpr (kIsCharType<T>) {
    out += static_cast<char>(value);  // a character, as std::ostream prints int8_t/uint8_t
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    AppendSigned(out, static_cast<long long>(value));
  } else if constexpr (std::is_integral_v<T>) {
    AppendUnsigned(out, static_cast<unsigned long long>(value));
  } else if constexpr (std::is_enum_v<T> && std::is_convertible_v<T, long long>) {
    // Unscoped enums print their value; scoped ones fall through to the static_assert.
    if constexpr (std::is_signed_v<std::underlying_type_t<T>>) {
      AppendSigned(out, static_cast<long long>(value));
    } else {
      AppendUnsigned(out, static_cast<unsigned long long>(value));
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    AppendFloat(out, static_cast<long double>(value));
  } else if constexpr (std::is_same_v<T, std::nullptr_t>) {
    out += "nullptr";
  } else if constexpr (std::is_pointer_v<T> &&
                       kIsCharType<std::remove_cv_t<std::remove_pointer_t<T>>>) {
    if (value != nullptr) out += reinterpret_cast<const char*>(value);  // a C string
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    // std::string, std::string_view, String, Bytes, character arrays: every byte, NULs too.
    out += std::string_view(value);
  } else if constexpr (std::is_pointer_v<T> && !std::is_function_v<std::remove_pointer_t<T>>) {
    AppendPointer(out, const_cast<const void*>(static_cast<const volatile void*>(value)));
  } else if constexpr (std::is_same_v<T, DLDataType>) {
    AppendDType(out, value);
  } else if constexpr (std::is_same_v<T, DLDevice>) {
    AppendDevice(out, value);
  } else if constexpr (HasOstreamInsert<T>::value) {
    AppendThroughOstream(out, value);
  } else {
    static_assert(kAlwaysFalse<T>,
                  "TVM_FFI_THROW / TVM_FFI_CHECK cannot stream this type: it has no "
                  "operator<<(std::ostream&, const T&); format it into a std::string first "
                  "(see docs/guides/cpp_core.md)");
  }
}

inline void AppendDType(std::string& out, DLDataType dtype) {
  // Names as numpy/torch spell them; bits follow the base name except where the name fixes
  // them (bool, the float8/6/4 formats). Codes are DLPack's numbers, not its enum names, so
  // that an older dlpack.h included first (one without the newer codes) still compiles.
  const char* base = nullptr;
  bool with_bits = true;
  switch (dtype.code) {
    case 0: base = "int"; break;
    case 1: base = "uint"; break;
    case 2: base = "float"; break;
    case 3: base = "handle"; with_bits = dtype.bits != 64; break;
    case 4: base = "bfloat"; break;
    case 5: base = "complex"; break;
    case 6: base = "bool"; with_bits = false; break;
    case 7: base = "float8_e3m4"; with_bits = false; break;
    case 8: base = "float8_e4m3"; with_bits = false; break;
    case 9: base = "float8_e4m3b11fnuz"; with_bits = false; break;
    case 10: base = "float8_e4m3fn"; with_bits = false; break;
    case 11: base = "float8_e4m3fnuz"; with_bits = false; break;
    case 12: base = "float8_e5m2"; with_bits = false; break;
    case 13: base = "float8_e5m2fnuz"; with_bits = false; break;
    case 14: base = "float8_e8m0fnu"; with_bits = false; break;
    case 15: base = "float6_e2m3fn"; with_bits = false; break;
    case 16: base = "float6_e3m2fn"; with_bits = false; break;
    case 17: base = "float4_e2m1fn"; with_bits = false; break;
    default: break;
  }
  if (base == nullptr) {
    out += "dtype(code=";
    AppendUnsigned(out, dtype.code);
    out += ", bits=";
    AppendUnsigned(out, dtype.bits);
    out += ", lanes=";
    AppendUnsigned(out, dtype.lanes);
    out += ')';
    return;
  }
  out += base;
  if (with_bits) AppendUnsigned(out, dtype.bits);
  if (dtype.lanes != 1) {
    out += 'x';
    AppendUnsigned(out, dtype.lanes);
  }
}

inline void AppendDevice(std::string& out, DLDevice device) {
  const char* name = nullptr;
  switch (static_cast<int>(device.device_type)) {  // DLPack's numbers, as above
    case 1: name = "cpu"; break;
    case 2: name = "cuda"; break;
    case 3: name = "cuda_host"; break;
    case 4: name = "opencl"; break;
    case 7: name = "vulkan"; break;
    case 8: name = "metal"; break;
    case 9: name = "vpi"; break;
    case 10: name = "rocm"; break;
    case 11: name = "rocm_host"; break;
    case 12: name = "ext_dev"; break;
    case 13: name = "cuda_managed"; break;
    case 14: name = "oneapi"; break;
    case 15: name = "webgpu"; break;
    case 16: name = "hexagon"; break;
    case 17: name = "maia"; break;
    case 18: name = "trn"; break;
  }
  if (name != nullptr) {
    out += name;
  } else {
    out += "device_type(";
    AppendSigned(out, static_cast<long long>(device.device_type));
    out += ')';
  }
  out += ':';
  AppendSigned(out, device.device_id);
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_APPEND_H_
