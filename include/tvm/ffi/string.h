/*
 * tvm::ffi::String (text) and tvm::ffi::Bytes (binary data, e.g. a CUBIN).
 *
 * Each is one TVMFFIAny: up to 7 bytes inline (kTVMFFISmallStr / kTVMFFISmallBytes, NUL after
 * the last byte), longer ones in an immutable shared object (StringObj / BytesObj: the bytes
 * right after the object, NUL-terminated). Both keep embedded NULs, are cheap to copy and
 * convert implicitly to std::string_view.
 */
#ifndef TVM_FFI_STRING_H_
#define TVM_FFI_STRING_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/detail/type_traits.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/object.h>

#include <cstring>
#include <ostream>
#include <string>
#include <string_view>

// compat: apache-tvm-ffi. The standard headers its string.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#include <ctime>
#include <iomanip>
#include <locale>

namespace tvm {
namespace ffi {

/*! \brief The object of a String longer than 7 bytes: TVMFFIByteArray at offset 24. */
class TVM_FFI_HIDDEN_MEMBERS StringObj : public Object, public TVMFFIByteArray {
 public:
  static constexpr bool _type_final = true;
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.String", StringObj, Object, kTVMFFIStr);
  TVM_FFI_HIDDEN StringObj() noexcept = default;
};

/*! \brief The object of a Bytes longer than 7 bytes. */
class TVM_FFI_HIDDEN_MEMBERS BytesObj : public Object, public TVMFFIByteArray {
 public:
  static constexpr bool _type_final = true;
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Bytes", BytesObj, Object, kTVMFFIBytes);
  TVM_FFI_HIDDEN BytesObj() noexcept = default;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm::ffi::details {
struct CharsAccess;  // String's and Bytes' characters, for their TypeTraits
}  // namespace tvm::ffi::details
TVM_FFI_DETAIL_HIDDEN_END
namespace tvm {
namespace ffi {
namespace details {

/*! \brief The representation String and Bytes share; kSmall/kObject are their type indices. */
template <int32_t kSmall, typename Obj>
class TVM_FFI_HIDDEN_MEMBERS CharsAny {
 public:
  static constexpr size_t kMaxSmall = sizeof(TVMFFIAny::v_bytes) - 1;  // room for the NUL

  TVM_FFI_HIDDEN CharsAny() noexcept { Set(nullptr, 0); }
  TVM_FFI_HIDDEN CharsAny(const char* data, size_t size) { Set(data, size); }
  TVM_FFI_HIDDEN CharsAny(const CharsAny& other) noexcept : any_(other.any_) {
    if (any_.type_index != kSmall) IncRef(any_.v_obj);
  }
  TVM_FFI_HIDDEN CharsAny(CharsAny&& other) noexcept : any_(other.any_) { other.Set(nullptr, 0); }
  TVM_FFI_HIDDEN CharsAny& operator=(const CharsAny& other) noexcept {
    CharsAny(other).Swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN CharsAny& operator=(CharsAny&& other) noexcept {
    CharsAny(std::move(other)).Swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN ~CharsAny() {
    if (any_.type_index != kSmall) DecRef(any_.v_obj);
  }
  /*! \brief Adopts an owned value that holds these characters (small or object). */
  TVM_FFI_HIDDEN static CharsAny FromOwnedAny(const TVMFFIAny& any) noexcept {
    CharsAny out;
    out.any_ = any;
    return out;
  }

  TVM_FFI_HIDDEN const char* data() const noexcept {
    return any_.type_index == kSmall ? any_.v_bytes : Array()->data;
  }
  TVM_FFI_HIDDEN size_t size() const noexcept {
    return any_.type_index == kSmall ? any_.small_str_len : Array()->size;
  }
  TVM_FFI_HIDDEN const TVMFFIAny& any() const noexcept { return any_; }
  TVM_FFI_HIDDEN TVMFFIAny ReleaseAny() noexcept {
    TVMFFIAny out = any_;
    Set(nullptr, 0);
    return out;
  }
  TVM_FFI_HIDDEN void Swap(CharsAny& other) noexcept { std::swap(any_, other.any_); }

 private:
  TVM_FFI_HIDDEN const TVMFFIByteArray* Array() const noexcept {
    return static_cast<const Obj*>(ObjectUnsafe::FromHeader(any_.v_obj));
  }
  TVM_FFI_HIDDEN void Set(const char* data, size_t size) {
    if (size <= kMaxSmall) {
      any_.type_index = kSmall;
      any_.small_str_len = static_cast<uint32_t>(size);
      any_.v_uint64 = 0;  // the NUL after the last byte, and zeroed bytes for hashing
      if (size != 0) std::memcpy(any_.v_bytes, data, size);
      return;
    }
    ObjectPtr<Obj> obj = make_inplace_array_object<Obj, char>(size + 1);
    char* chars = reinterpret_cast<char*>(obj.get()) + sizeof(Obj);
    std::memcpy(chars, data, size);
    chars[size] = '\0';
    obj->data = chars;
    obj->size = size;
    any_.type_index = Obj::_type_index;
    any_.zero_padding = 0;
    any_.v_obj = ObjectUnsafe::MoveToOwned(&obj);
  }
  TVMFFIAny any_;
};

}  // namespace details

namespace details {
/*!
 * \brief What String and Bytes share: construction from text, read access, comparison. Derived
 * is the class itself (its name goes into messages); the characters are a CharsAny.
 */
template <typename Derived, int32_t kSmall, typename Obj>
class TVM_FFI_HIDDEN_MEMBERS CharsHandle {
 public:
  TVM_FFI_HIDDEN CharsHandle() noexcept = default;
  TVM_FFI_HIDDEN CharsHandle(const char* data, size_t size) : chars_(data, size) {}
  // A null C string is the empty text (as before the switch), not a crash.
  TVM_FFI_HIDDEN CharsHandle(const char* text)  // NOLINT: implicit
      : chars_(text == nullptr ? "" : text, text == nullptr ? 0 : std::char_traits<char>::length(text)) {}
  TVM_FFI_HIDDEN CharsHandle(const std::string& s) : chars_(s.data(), s.size()) {}  // NOLINT
  TVM_FFI_HIDDEN CharsHandle(std::string_view s) : chars_(s.data(), s.size()) {}    // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(CharsHandle);
  TVM_FFI_HIDDEN ~CharsHandle() = default;

  TVM_FFI_HIDDEN const char* data() const noexcept { return chars_.data(); }
  /*! \brief NUL-terminated (the text ends at the first NUL if it holds one). */
  TVM_FFI_HIDDEN const char* c_str() const noexcept { return chars_.data(); }
  TVM_FFI_HIDDEN size_t size() const noexcept { return chars_.size(); }
  TVM_FFI_HIDDEN size_t length() const noexcept { return chars_.size(); }
  TVM_FFI_HIDDEN bool empty() const noexcept { return chars_.size() == 0; }
  TVM_FFI_HIDDEN char at(size_t i) const {
    if (TVM_FFI_UNLIKELY(i >= size())) {
      TVM_FFI_THROW(IndexError) << Derived::kName << "::at(" << i << ") on " << size() << " bytes";
    }
    return data()[i];
  }
  TVM_FFI_HIDDEN char operator[](size_t i) const noexcept { return data()[i]; }
  TVM_FFI_HIDDEN operator std::string_view() const noexcept {  // NOLINT: implicit
    return std::string_view(data(), size());
  }
  TVM_FFI_HIDDEN operator std::string() const {  // NOLINT: implicit, as apache-tvm-ffi's
    return std::string(data(), size());
  }
  TVM_FFI_HIDDEN int compare(std::string_view other) const noexcept {
    return std::string_view(*this).compare(other);
  }
  // Comparisons by content with String/Bytes, std::string, std::string_view and C strings,
  // on either side (apache-tvm-ffi's set; an exact overload for each avoids ambiguity).
#define TVM_FFI_DETAIL_CHARS_COMPARE(Other)                                              \
  TVM_FFI_HIDDEN friend bool operator==(const Derived& a, Other b) noexcept {           \
    return std::string_view(a) == Text(b);                                             \
  }                                                                                      \
  TVM_FFI_HIDDEN friend bool operator!=(const Derived& a, Other b) noexcept {           \
    return std::string_view(a) != Text(b);                                             \
  }                                                                                      \
  TVM_FFI_HIDDEN friend bool operator<(const Derived& a, Other b) noexcept {            \
    return std::string_view(a) < Text(b);                                              \
  }                                                                                      \
  TVM_FFI_HIDDEN friend bool operator<=(const Derived& a, Other b) noexcept {           \
    return std::string_view(a) <= Text(b);                                             \
  }                                                                                      \
  TVM_FFI_HIDDEN friend bool operator>(const Derived& a, Other b) noexcept {            \
    return std::string_view(a) > Text(b);                                              \
  }                                                                                      \
  TVM_FFI_HIDDEN friend bool operator>=(const Derived& a, Other b) noexcept {           \
    return std::string_view(a) >= Text(b);                                             \
  }
#define TVM_FFI_DETAIL_CHARS_COMPARE_REVERSED(Other)                                     \
  TVM_FFI_HIDDEN friend bool operator==(Other a, const Derived& b) noexcept { return b == a; } \
  TVM_FFI_HIDDEN friend bool operator!=(Other a, const Derived& b) noexcept { return b != a; } \
  TVM_FFI_HIDDEN friend bool operator<(Other a, const Derived& b) noexcept { return b > a; }   \
  TVM_FFI_HIDDEN friend bool operator<=(Other a, const Derived& b) noexcept { return b >= a; } \
  TVM_FFI_HIDDEN friend bool operator>(Other a, const Derived& b) noexcept { return b < a; }   \
  TVM_FFI_HIDDEN friend bool operator>=(Other a, const Derived& b) noexcept { return b <= a; }
  TVM_FFI_DETAIL_CHARS_COMPARE(const Derived&)
  TVM_FFI_DETAIL_CHARS_COMPARE(const std::string&)
  TVM_FFI_DETAIL_CHARS_COMPARE(std::string_view)
  TVM_FFI_DETAIL_CHARS_COMPARE(const char*)
  TVM_FFI_DETAIL_CHARS_COMPARE_REVERSED(const std::string&)
  TVM_FFI_DETAIL_CHARS_COMPARE_REVERSED(std::string_view)
  TVM_FFI_DETAIL_CHARS_COMPARE_REVERSED(const char*)
#undef TVM_FFI_DETAIL_CHARS_COMPARE
#undef TVM_FFI_DETAIL_CHARS_COMPARE_REVERSED

 private:
  TVM_FFI_HIDDEN static std::string_view Text(std::string_view s) noexcept { return s; }
  TVM_FFI_HIDDEN static std::string_view Text(const char* s) noexcept {
    return s == nullptr ? std::string_view() : std::string_view(s);
  }
  CharsAny<kSmall, Obj> chars_;
  friend struct CharsAccess;
};
}  // namespace details

/*! \brief Text; Python's str. */
class TVM_FFI_HIDDEN_MEMBERS String
    : public details::CharsHandle<String, kTVMFFISmallStr, StringObj> {
 public:
  static constexpr const char* kName = "String";
  // Spelled out rather than inherited (`using`): GCC gives inherited and implicit members
  // the class's default visibility.
  TVM_FFI_HIDDEN String() noexcept = default;
  TVM_FFI_HIDDEN String(const char* data, size_t size) : CharsHandle(data, size) {}
  TVM_FFI_HIDDEN String(const char* text) : CharsHandle(text) {}         // NOLINT
  TVM_FFI_HIDDEN String(const std::string& text) : CharsHandle(text) {}  // NOLINT
  TVM_FFI_HIDDEN String(std::string_view text) : CharsHandle(text) {}    // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(String);
  TVM_FFI_HIDDEN ~String() = default;
};

/*! \brief Binary data; Python's bytes. */
class TVM_FFI_HIDDEN_MEMBERS Bytes
    : public details::CharsHandle<Bytes, kTVMFFISmallBytes, BytesObj> {
 public:
  static constexpr const char* kName = "Bytes";
  // Spelled out rather than inherited (`using`): GCC gives inherited and implicit members
  // the class's default visibility.
  TVM_FFI_HIDDEN Bytes() noexcept = default;
  TVM_FFI_HIDDEN Bytes(const char* data, size_t size) : CharsHandle(data, size) {}
  // Explicit: a C string usually ends before a binary blob does (at its first NUL).
  TVM_FFI_HIDDEN explicit Bytes(const char* text) : CharsHandle(text) {}
  TVM_FFI_HIDDEN Bytes(const std::string& text) : CharsHandle(text) {}  // NOLINT
  TVM_FFI_HIDDEN Bytes(std::string_view text) : CharsHandle(text) {}    // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Bytes);
  TVM_FFI_HIDDEN ~Bytes() = default;
};

TVM_FFI_HIDDEN inline String operator+(const String& a, std::string_view b) {
  std::string s(a);
  s.append(b.data(), b.size());
  return String(s);
}

// compat: apache-tvm-ffi: the characters, embedded NULs included.
TVM_FFI_HIDDEN inline std::ostream& operator<<(std::ostream& os, const String& s) {
  return os.write(s.data(), static_cast<std::streamsize>(s.size()));
}

static_assert(sizeof(String) == sizeof(TVMFFIAny), "String is one TVMFFIAny");

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

struct CharsAccess {
  template <typename D, int32_t kSmall, typename Obj>
  static CharsAny<kSmall, Obj>& Of(CharsHandle<D, kSmall, Obj>& v) noexcept {
    return v.chars_;
  }
  template <typename D, int32_t kSmall, typename Obj>
  static const CharsAny<kSmall, Obj>& Of(const CharsHandle<D, kSmall, Obj>& v) noexcept {
    return v.chars_;
  }
};

/*! \brief str and bytes values: small, object, and the borrowed forms of argument views. */
template <typename T, int32_t kSmall, int32_t kObject, int32_t kRaw, const char* kName,
          const char* kSchema>
struct CharsTraits {
  static constexpr bool kEnabled = true;
  static void CopyToView(const T& v, TVMFFIAny* out) noexcept { *out = CharsAccess::Of(v).any(); }
  static void MoveToAny(T v, TVMFFIAny* out) noexcept { *out = CharsAccess::Of(v).ReleaseAny(); }
  static Maybe<T> TryFromView(const TVMFFIAny& v) {
    if (v.type_index == kSmall || v.type_index == kObject) {
      T out;
      // A view of a small value or a borrowed object: copy it and take a reference.
      CharsAccess::Of(out) =
          CharsAny<kSmall,
                   std::conditional_t<kObject == kTVMFFIStr, StringObj, BytesObj>>::FromOwnedAny(v);
      if (v.type_index == kObject) IncRef(v.v_obj);
      return out;
    }
    if (v.type_index == kRaw) {
      if constexpr (kRaw == kTVMFFIRawStr) return T(v.v_c_str);
      const TVMFFIByteArray* b = static_cast<const TVMFFIByteArray*>(v.v_ptr);
      return T(b->data, b->size);
    }
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += kName; }
  static void Schema(std::string* out) { *out += kSchema; }
};

inline constexpr char kStrName[] = "str";
inline constexpr char kBytesName[] = "bytes";
inline constexpr char kStrSchema[] = R"({"type":"ffi.String"})";
inline constexpr char kBytesSchema[] = R"({"type":"ffi.Bytes"})";

template <>
struct TypeTraits<String>
    : CharsTraits<String, kTVMFFISmallStr, kTVMFFIStr, kTVMFFIRawStr, kStrName, kStrSchema> {};
template <>
struct TypeTraits<Bytes> : CharsTraits<Bytes, kTVMFFISmallBytes, kTVMFFIBytes, kTVMFFIByteArrayPtr,
                                       kBytesName, kBytesSchema> {};

/*! \brief std::string travels as a String. */
template <>
struct TypeTraits<std::string> {
  static constexpr bool kEnabled = true;
  static void CopyToView(const std::string& v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIRawStr);
    out->v_c_str = v.c_str();
  }
  static void MoveToAny(const std::string& v, TVMFFIAny* out) {
    TypeTraits<String>::MoveToAny(String(v), out);
  }
  static Maybe<std::string> TryFromView(const TVMFFIAny& v) {
    TVMFFIByteArray b;
    if (!ViewStrBytes(v, &b)) return std::nullopt;
    return std::string(b.data, b.size);
  }
  static void TypeName(std::string* out) { *out += "str"; }
  static void Schema(std::string* out) { *out += kStrSchema; }
};

/*! \brief A view of the caller's text for the call (a result is copied into a String). */
template <>
struct TypeTraits<std::string_view> {
  static constexpr bool kEnabled = true;
  // A view slot owns nothing and a string_view has no NUL to lend: pass a String instead.
  static void CopyToView(std::string_view v, TVMFFIAny* out) = delete;
  static void MoveToAny(std::string_view v, TVMFFIAny* out) {
    TypeTraits<String>::MoveToAny(String(v), out);
  }
  static Maybe<std::string_view> TryFromView(const TVMFFIAny& v) {
    TVMFFIByteArray b;
    if (!ViewStrBytes(v, &b)) return std::nullopt;
    return std::string_view(b.data, b.size);
  }
  static void TypeName(std::string* out) { *out += "str"; }
  static void Schema(std::string* out) { *out += kStrSchema; }
};
/*! \brief Arguments only: a NUL-terminated view of the caller's text. */
template <>
struct TypeTraits<const char*> {
  static constexpr bool kEnabled = true;
  static void CopyToView(const char* v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIRawStr);
    out->v_c_str = v;
  }
  static void MoveToAny(const char* v, TVMFFIAny* out) {
    TypeTraits<String>::MoveToAny(String(v), out);
  }
  static Maybe<const char*> TryFromView(const TVMFFIAny& v) {
    TVMFFIByteArray b;
    if (!ViewStrBytes(v, &b)) return std::nullopt;
    // The callee would see only the text before the first NUL: refuse, never cut.
    if (TVM_FFI_UNLIKELY(std::memchr(b.data, '\0', b.size) != nullptr)) {
      throw ConversionError{"", "", "",
                            "holds a NUL character, where a const char* parameter would end "
                            "(take std::string or tvm::ffi::String for text with NULs)"};
    }
    return b.data;
  }
  static void TypeName(std::string* out) { *out += "str"; }
  static void Schema(std::string* out) { *out += kStrSchema; }
};

/*!
 * \brief A borrowed byte range (apache-tvm-ffi's traits): a view of the caller's bytes, passed
 *  without a copy (a callback receives bytes); an owned value copies them into Bytes.
 */
template <>
struct TypeTraits<TVMFFIByteArray*> {
  static constexpr bool kEnabled = true;
  static void CopyToView(TVMFFIByteArray* v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIByteArrayPtr);
    out->v_ptr = v;
  }
  static void MoveToAny(TVMFFIByteArray* v, TVMFFIAny* out) {
    TypeTraits<Bytes>::MoveToAny(Bytes(v->data, v->size), out);
  }
  static Maybe<TVMFFIByteArray*> TryFromView(const TVMFFIAny& v) {
    if (v.type_index == kTVMFFIByteArrayPtr) return static_cast<TVMFFIByteArray*>(v.v_ptr);
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "TVMFFIByteArray*"; }
  static void Schema(std::string* out) { *out += R"({"type":"TVMFFIByteArray*"})"; }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

// compat: apache-tvm-ffi: String and Bytes as keys of std::unordered_map, hashed as the
// same characters in a std::string_view.
namespace std {
template <>
struct hash<::tvm::ffi::String> {
  TVM_FFI_HIDDEN size_t operator()(const ::tvm::ffi::String& s) const noexcept {
    return hash<string_view>()(string_view(s));
  }
};
template <>
struct hash<::tvm::ffi::Bytes> {
  TVM_FFI_HIDDEN size_t operator()(const ::tvm::ffi::Bytes& s) const noexcept {
    return hash<string_view>()(string_view(s));
  }
};
}  // namespace std

#endif  // TVM_FFI_STRING_H_
