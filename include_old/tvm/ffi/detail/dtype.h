/*
 * The implementation behind tvm/ffi/dtype.h (the public header).
 *
 * DLDataType helpers: comparison, the string form ("float32", "bfloat16", "int8x4") and
 * printing to a std::ostream, as kernel-library wrappers use them in checks and messages.
 */
#ifndef TVM_FFI_DETAIL_DTYPE_H_
#define TVM_FFI_DETAIL_DTYPE_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/append.h>
#include <tvm/ffi/dlpack.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/string.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*! \brief "float32", "int64", "bool", "bfloat16", "float8_e4m3fn", "float16x2", ... */
inline String DLDataTypeToString(DLDataType dtype) {
  std::string out;
  detail::AppendDType(out, dtype);
  return String(out);
}

/*!
 * \brief Parses the string form back: "float32", "int8", "uint1", "bool", "bfloat16",
 *  "float8_e5m2", "handle", with an optional "xLANES" suffix. ValueError otherwise.
 */
inline DLDataType StringToDLDataType(std::string_view text) {
  struct Named {
    const char* name;
    uint8_t code;
    uint8_t bits;  // 0: the bits follow the name
  };
  // Longest names first, so "float8_e4m3fn" is not read as "float" + "8_e4m3fn".
  // DLPack's fixed code values rather than its enumerators: a dlpack.h included before ours
  // may predate the newer codes.
  static const Named kNames[] = {
      {"float8_e4m3b11fnuz", 9 /* kDLFloat8_e4m3b11fnuz */, 8},
      {"float8_e4m3fnuz", 11 /* kDLFloat8_e4m3fnuz */, 8},
      {"float8_e5m2fnuz", 13 /* kDLFloat8_e5m2fnuz */, 8},
      {"float8_e8m0fnu", 14 /* kDLFloat8_e8m0fnu */, 8},
      {"float8_e4m3fn", 10 /* kDLFloat8_e4m3fn */, 8},
      {"float6_e2m3fn", 15 /* kDLFloat6_e2m3fn */, 6},
      {"float6_e3m2fn", 16 /* kDLFloat6_e3m2fn */, 6},
      {"float4_e2m1fn", 17 /* kDLFloat4_e2m1fn */, 4},
      {"float8_e3m4", 7 /* kDLFloat8_e3m4 */, 8},
      {"float8_e4m3", 8 /* kDLFloat8_e4m3 */, 8},
      {"float8_e5m2", 12 /* kDLFloat8_e5m2 */, 8},
      {"complex", 5 /* kDLComplex */, 0},
      {"bfloat", 4 /* kDLBfloat */, 0},
      {"handle", 3 /* kDLOpaqueHandle */, 64},
      {"float", 2 /* kDLFloat */, 0},
      {"uint", 1 /* kDLUInt */, 0},
      {"bool", 6 /* kDLBool */, 8},
      {"int", 0 /* kDLInt */, 0},
  };
  auto fail = [&]() -> DLDataType {
    TVM_FFI_THROW(ValueError) << "cannot parse \"" << text << "\" as a data type (expected e.g. "
                              << "float32, int8, bool, bfloat16, float8_e4m3fn, float16x2)";
  };
  auto parse_uint = [&](std::string_view digits, unsigned limit) -> unsigned {
    if (digits.empty() || digits.size() > 5) fail();
    unsigned value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') fail();
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > limit) fail();
    return value;
  };
  for (const Named& n : kNames) {
    std::string_view name(n.name);
    if (text.substr(0, name.size()) != name) continue;
    std::string_view rest = text.substr(name.size());
    DLDataType dtype{n.code, n.bits, 1};
    const size_t x = rest.find('x');
    std::string_view bits = rest.substr(0, x);
    if (n.bits == 0) {
      dtype.bits = static_cast<uint8_t>(parse_uint(bits, 255));
    } else if (!bits.empty()) {
      fail();
    }
    if (x != std::string_view::npos) {
      dtype.lanes = static_cast<uint16_t>(parse_uint(rest.substr(x + 1), 65535));
    }
    return dtype;
  }
  return fail();
}

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// In the global namespace, where DLDataType lives, so that argument-dependent lookup finds
// them from any namespace.
inline bool operator==(const DLDataType& a, const DLDataType& b) noexcept {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(const DLDataType& a, const DLDataType& b) noexcept { return !(a == b); }

/*! \brief Prints the string form. A template so that <ostream> is needed only where used. */
template <typename CharT, typename Traits>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os,
                                              const DLDataType& dtype) {
  std::string text;
  ::tvm::ffi::detail::AppendDType(text, dtype);
  return os << text;
}

#endif  // TVM_FFI_DETAIL_DTYPE_H_
