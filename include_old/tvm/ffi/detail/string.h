/*
 * The implementation behind tvm/ffi/string.h (the public header).
 *
 * tvm::ffi::String (text) and tvm::ffi::Bytes (binary data, e.g. a CUBIN).
 *
 * Both own their characters, know their size (embedded NULs are kept), and are cheap to
 * copy: copies share one immutable buffer. They convert implicitly to std::string_view.
 */
#ifndef TVM_FFI_DETAIL_STRING_H_
#define TVM_FFI_DETAIL_STRING_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/shared_chars.h>

#include <cstddef>
#include <cstring>
#include <iosfwd>
#include <string>
#include <string_view>

// Helper macros (#undef'd below): ==, !=, <, <=, >, >= between Self and Self, and between
// Self and anything convertible to std::string_view, in both orders. Bytewise.
#define TVM_FFI_DETAIL_CHARS_COMPARE(Self, Op)                                                    \
  friend bool operator Op(const Self& a, const Self& b) noexcept { return a.view() Op b.view(); } \
  template <typename T, ::tvm::ffi::detail::EnableIfComparableChars<T, Self> = 0>                 \
  friend bool operator Op(const Self& a, const T& b) noexcept {                                   \
    return a.view() Op std::string_view(b);                                                       \
  }                                                                                               \
  template <typename T, ::tvm::ffi::detail::EnableIfComparableChars<T, Self> = 0>                 \
  friend bool operator Op(const T& a, const Self& b) noexcept {                                   \
    return std::string_view(a) Op b.view();                                                       \
  }

#define TVM_FFI_DETAIL_CHARS_COMPARE_ALL(Self) \
  TVM_FFI_DETAIL_CHARS_COMPARE(Self, ==)       \
  TVM_FFI_DETAIL_CHARS_COMPARE(Self, !=)       \
  TVM_FFI_DETAIL_CHARS_COMPARE(Self, <)        \
  TVM_FFI_DETAIL_CHARS_COMPARE(Self, <=)       \
  TVM_FFI_DETAIL_CHARS_COMPARE(Self, >)        \
  TVM_FFI_DETAIL_CHARS_COMPARE(Self, >=)

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*! \brief UTF-8 text; maps to Python str. c_str() is always NUL-terminated. */
class String {
 public:
  String() noexcept = default;
  /*! \brief From a NUL-terminated C string; nullptr gives the empty string. */
  String(const char* str) : chars_(str, str != nullptr ? std::strlen(str) : 0) {}
  String(const char* data, size_t size) : chars_(data, size) {}
  String(const std::string& str) : chars_(str.data(), str.size()) {}
  String(std::string_view str) : chars_(str.data(), str.size()) {}

  const char* data() const noexcept { return chars_.data(); }
  const char* c_str() const noexcept { return chars_.data(); }
  size_t size() const noexcept { return chars_.size(); }
  size_t length() const noexcept { return chars_.size(); }
  bool empty() const noexcept { return chars_.size() == 0; }
  char operator[](size_t i) const noexcept { return chars_.data()[i]; }
  const char* begin() const noexcept { return data(); }
  const char* end() const noexcept { return data() + size(); }

  std::string_view view() const noexcept { return chars_.view(); }
  operator std::string_view() const noexcept { return chars_.view(); }
  operator std::string() const { return std::string(data(), size()); }

  TVM_FFI_DETAIL_CHARS_COMPARE_ALL(String)

 private:
  detail::SharedChars chars_;
};

/*! \brief Raw bytes that may contain NULs; maps to Python bytes. */
class Bytes {
 public:
  Bytes() noexcept = default;
  Bytes(const char* data, size_t size) : chars_(data, size) {}
  Bytes(const std::string& data) : chars_(data.data(), data.size()) {}
  Bytes(std::string_view data) : chars_(data.data(), data.size()) {}
  /*! \brief Copies up to the first NUL. Explicit because binary data rarely stops there. */
  explicit Bytes(const char* str) : chars_(str, str != nullptr ? std::strlen(str) : 0) {}

  const char* data() const noexcept { return chars_.data(); }
  size_t size() const noexcept { return chars_.size(); }
  bool empty() const noexcept { return chars_.size() == 0; }
  char operator[](size_t i) const noexcept { return chars_.data()[i]; }
  const char* begin() const noexcept { return data(); }
  const char* end() const noexcept { return data() + size(); }

  std::string_view view() const noexcept { return chars_.view(); }
  operator std::string_view() const noexcept { return chars_.view(); }
  operator std::string() const { return std::string(data(), size()); }

  TVM_FFI_DETAIL_CHARS_COMPARE_ALL(Bytes)

 private:
  detail::SharedChars chars_;
};

// Templates over the stream so that <iosfwd> suffices: <ostream> is only needed (and only
// instantiated) where a stream is used, which keeps it out of every other translation unit.
template <typename Traits>
std::basic_ostream<char, Traits>& operator<<(std::basic_ostream<char, Traits>& os,
                                             const String& str) {
  return os << str.view();
}
template <typename Traits>
std::basic_ostream<char, Traits>& operator<<(std::basic_ostream<char, Traits>& os,
                                             const Bytes& bytes) {
  return os << bytes.view();
}

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#undef TVM_FFI_DETAIL_CHARS_COMPARE_ALL
#undef TVM_FFI_DETAIL_CHARS_COMPARE

// <string_view> declares the std::hash primary template (C++17 [string.view.synop]), so no
// <functional> is needed for these.
namespace std {
template <>
struct hash<::tvm::ffi::String> {
  size_t operator()(const ::tvm::ffi::String& s) const noexcept {
    return hash<string_view>()(s.view());
  }
};
template <>
struct hash<::tvm::ffi::Bytes> {
  size_t operator()(const ::tvm::ffi::Bytes& b) const noexcept {
    return hash<string_view>()(b.view());
  }
};
}  // namespace std

#endif  // TVM_FFI_DETAIL_STRING_H_
