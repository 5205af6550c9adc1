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

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

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
  } else {
    static_assert(kAlwaysFalse<T>,
                  "TVM_FFI_THROW / TVM_FFI_CHECK cannot stream this type: stream strings, "
                  "numbers, bool, char or pointers, or format it into a std::string first "
                  "(see docs/guides/cpp_core.md)");
  }
}

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_APPEND_H_
