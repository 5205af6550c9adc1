/*
 * tvm::ffi::Error and the TVM_FFI_THROW / TVM_FFI_CHECK / TVM_FFI_ICHECK macros.
 *
 * An Error is a handle to an error object (ErrorObj: kind, message, backtrace in the C cell),
 * so it crosses the C ABI as it is: an exported function that throws one leaves it in the
 * runtime's per-thread slot (TVMFFIErrorSetRaised), and a call that fails throws the object the
 * callee raised. The kind is the name of the Python exception the caller raises
 * ("ValueError", "TypeError", ...; "InternalError" for broken invariants).
 */
#ifndef TVM_FFI_ERROR_H_
#define TVM_FFI_ERROR_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/append.h>
#include <tvm/ffi/object.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

// compat: apache-tvm-ffi. The standard headers its error.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#if __has_include(<bit>)
#include <bit>
#endif
#include <cwctype>
#include <ios>
#include <iostream>
#include <istream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <system_error>
#include <tuple>
#include <vector>

namespace tvm {
namespace ffi {

/*! \brief The error object: the header, then the C cell (c_api.h) that every side reads. */
class TVM_FFI_HIDDEN_MEMBERS ErrorObj : public Object, public TVMFFIErrorCell {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Error", ErrorObj, Object, kTVMFFIError);
  TVM_FFI_HIDDEN ErrorObj() noexcept = default;
};

// Hidden as a class, unlike the handles: it has a vtable (std::exception), and apache-tvm-ffi's
// runtime exports a tvm::ffi::Error vtable and typeinfo of another layout, which a
// default-visibility one here would bind to. It holds its object rather than deriving from
// ObjectRef, so that no typeinfo of ObjectRef is needed (and exported) for a throw.
class TVM_FFI_HIDDEN Error : public std::exception {
 public:
  /*! \brief A new error; the runtime owns its text (TVMFFIErrorCreate). */
  TVM_FFI_COLD Error(const std::string& kind, const std::string& message,
                     const std::string& backtrace = std::string()) {
    const TVMFFIByteArray bt = Bytes(backtrace);
    Init(kind, message, &bt);
  }
  TVM_FFI_COLD Error(const std::string& kind, const std::string& message,
                     const TVMFFIByteArray* backtrace) {
    Init(kind, message, backtrace);
  }
  /*! \brief Adopts an error object (a reference the caller owns). */
  // Copies share the error object; there is no move, so that a moved-from Error (caught,
  // then rethrown or stored) still reads as the same error instead of crashing.
  Error(const Error&) noexcept = default;
  Error& operator=(const Error&) noexcept = default;
  explicit Error(ObjectPtr<Object> obj) : obj_(std::move(obj)) {
    what_ = WhatText(Cell()->kind, Cell()->message);
  }

  std::string kind() const { return Text(Cell()->kind); }
  std::string message() const { return Text(Cell()->message); }
  std::string backtrace() const { return Text(Cell()->backtrace); }
  /*! \brief "Kind: message", the way Python prints an exception. */
  const char* what() const noexcept override {
    return reinterpret_cast<const char*>(what_.get()) + sizeof(Object);
  }
  const ErrorObj* get() const noexcept { return static_cast<const ErrorObj*>(obj_.get()); }
  /*! \brief The error object, to pass through an Any or raise in the runtime's slot. */
  const ObjectRef& object() const noexcept { return obj_; }

 private:
  TVM_FFI_COLD void Init(const std::string& kind, const std::string& message,
                         const TVMFFIByteArray* backtrace) {
    const TVMFFIByteArray k = Bytes(kind), m = Bytes(message);
    const TVMFFIByteArray empty{"", 0};
    TVMFFIObjectHandle out = nullptr;
    if (TVMFFIErrorCreate(&k, &m, backtrace != nullptr ? backtrace : &empty, &out) != 0) {
      throw std::bad_alloc();
    }
    obj_ = ObjectRef(details::ObjectUnsafe::PtrFromOwned<Object>(static_cast<TVMFFIObject*>(out)));
    what_ = WhatText(k, m);
  }
  /*! \brief "Kind: message", NUL-terminated, in the bytes after a bare object header. */
  TVM_FFI_COLD static ObjectPtr<Object> WhatText(const TVMFFIByteArray& kind,
                                                 const TVMFFIByteArray& message) {
    ObjectPtr<Object> text = make_inplace_array_object<Object, char>(kind.size + message.size + 3);
    char* out = reinterpret_cast<char*>(text.get()) + sizeof(Object);
    std::memcpy(out, kind.data, kind.size);
    std::memcpy(out + kind.size, ": ", 2);
    std::memcpy(out + kind.size + 2, message.data, message.size);
    out[kind.size + 2 + message.size] = '\0';
    return text;
  }
  static TVMFFIByteArray Bytes(const std::string& s) { return {s.data(), s.size()}; }
  static std::string Text(const TVMFFIByteArray& b) { return std::string(b.data, b.size); }
  const TVMFFIErrorCell* Cell() const noexcept { return get(); }
  ObjectRef obj_;
  // Its own counted object, so that copying an Error cannot throw (an exception's copy must not).
  ObjectPtr<Object> what_;
};

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*! \brief The error a failed runtime call or safe call left in this thread's slot. */
TVM_FFI_COLD inline Error MoveFromRaised(const char* operation) {
  TVMFFIObjectHandle raised = nullptr;
  TVMFFIErrorMoveFromRaised(&raised);
  if (raised == nullptr) {
    return Error("InternalError", std::string(operation) + " failed without raising an error");
  }
  return Error(ObjectUnsafe::PtrFromOwned<Object>(static_cast<TVMFFIObject*>(raised)));
}

/*! \brief Prints "Kind: message (file:line)" to stderr; for TVM_FFI_LOG_AND_THROW. */
TVM_FFI_COLD inline void LogError(const char* kind, const std::string& message, const char* file,
                                  int line) {
  std::fprintf(stderr, "%s: %s (%s:%d)\n", kind, message.c_str(), file, line);
}

template <typename X, typename Y>
TVM_FFI_COLD std::string FormatOperands(const X& x, const Y& y) {
  std::string out;
  AppendTo(out, x);
  out += " vs. ";
  AppendTo(out, y);
  return out;
}

/*! \brief Collects the streamed message of TVM_FFI_THROW / TVM_FFI_CHECK, then throws. */
class ErrorBuilder {
 public:
  // The builder exists only once a check has failed. Its members are out of line and cold
  // so that each TVM_FFI_THROW / TVM_FFI_CHECK costs the caller a few calls instead of inlined
  // std::string code (which -O2 would otherwise optimize at every check site).
  TVM_FFI_COLD ErrorBuilder(const char* kind, const char* file, int line, const char* func,
                            const char* failed_check = nullptr, std::string values = std::string(),
                            bool log = false)
      : kind_(kind),
        file_(file),
        line_(line),
        func_(func),
        failed_check_(failed_check),
        values_(std::move(values)),
        log_(log) {}

  // The macros end in a call to this, so a bare `TVM_FFI_THROW(Kind);` is not an expression
  // statement without effect (which -Wall reports).
  ErrorBuilder& Get() noexcept { return *this; }

  TVM_FFI_COLD ~ErrorBuilder() {}
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;

  /*! \brief Appends `value` as std::ostream would print it; the types are in append.h. */
  template <typename T>
  TVM_FFI_COLD ErrorBuilder& operator<<(const T& value) {
    AppendTo(message_, value);
    return *this;
  }
  // String literals: one function for all of them, instead of one template per length.
  TVM_FFI_COLD ErrorBuilder& operator<<(const char* value) {
    AppendTo(message_, value);
    return *this;
  }

  [[noreturn]] TVM_FFI_COLD void Throw() {
    // "Check failed: (cond) is false: 3 vs. 4: text", each part present only when it is given.
    const bool check = failed_check_ != nullptr, values = !values_.empty();
    const bool text = !message_.empty();
    std::string message = Concat({check ? "Check failed: (" : "", check ? failed_check_ : "",
                                  check ? ") is false" : "", check && (values || text) ? ": " : "",
                                  values_, values && text ? ": " : "", message_});
    if (log_) LogError(kind_, message, file_, line_);
    throw Error(kind_, message, TVMFFIBacktrace(file_, line_, func_, 0));
  }

 private:
  const char* kind_;
  const char* file_;
  int line_;
  const char* func_;
  const char* failed_check_;  // the stringized condition, for TVM_FFI_CHECK
  std::string message_;
  std::string values_;  // "3 vs. 4" from a failed binary check
  bool log_;  // TVM_FFI_LOG_AND_THROW: also print to stderr, for errors that may be swallowed
};

/*! \brief The outcome of a binary check: `values` is "lhs vs. rhs" when it failed. */
struct BinaryCheck {
  bool ok;
  std::string values;
  explicit operator bool() const noexcept { return ok; }
};

// The comparison is the user's own (TVM_FFI_ICHECK_EQ(x.size(0), v.size()) compares signed
// with unsigned); it must not turn their -Werror build red from inside our header.
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#define TVM_FFI_DETAIL_COMPARE_OP(Name, op)         \
  struct Name {                                     \
    template <typename X, typename Y>               \
    bool operator()(const X& x, const Y& y) const { \
      return x op y;                                \
    }                                               \
  };
TVM_FFI_DETAIL_COMPARE_OP(CompareEq, ==)
TVM_FFI_DETAIL_COMPARE_OP(CompareNe, !=)
TVM_FFI_DETAIL_COMPARE_OP(CompareLt, <)
TVM_FFI_DETAIL_COMPARE_OP(CompareLe, <=)
TVM_FFI_DETAIL_COMPARE_OP(CompareGt, >)
TVM_FFI_DETAIL_COMPARE_OP(CompareGe, >=)
#undef TVM_FFI_DETAIL_COMPARE_OP

template <typename Op, typename X, typename Y>
BinaryCheck CheckBinaryOp(const X& x, const Y& y) {
  if (TVM_FFI_LIKELY(Op()(x, y))) return BinaryCheck{true, std::string()};
  return BinaryCheck{false, FormatOperands(x, y)};
}
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

[[noreturn]] TVM_FFI_COLD inline void ThrowNullCheck(const char* kind, const char* failed_check,
                                                     const char* file, int line, const char* func) {
  ErrorBuilder(kind, file, line, func, failed_check).Throw();
}

template <typename T>
T&& CheckNotNull(T&& ptr, const char* kind, const char* failed_check, const char* file, int line,
                 const char* func) {
  if (TVM_FFI_UNLIKELY(ptr == nullptr)) ThrowNullCheck(kind, failed_check, file, line, func);
  return std::forward<T>(ptr);
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*
 * The loop never ends normally: its increment throws. That makes every use a single statement
 * (safe in an unbraced if/else) and lets the compiler see that control does not continue, so
 * a function ending in TVM_FFI_THROW needs no dummy return.
 */
#define TVM_FFI_DETAIL_THROW(Kind, FailedCheck)                                                 \
  for (::tvm::ffi::details::ErrorBuilder tvm_ffi_error_builder_(#Kind, __FILE__, __LINE__,      \
                                                                TVM_FFI_FUNC_SIG, FailedCheck); \
       ; tvm_ffi_error_builder_.Throw())                                                        \
  tvm_ffi_error_builder_.Get()

/*! \brief Throws tvm::ffi::Error of the given kind: TVM_FFI_THROW(ValueError) << "bad " << x; */
#define TVM_FFI_THROW(Kind) TVM_FFI_DETAIL_THROW(Kind, nullptr)

/*!
 * \brief Throws unless cond holds: TVM_FFI_CHECK(n > 0, ValueError) << "n = " << n;
 * The message reads "Check failed: (n > 0) is false: n = 0". Nothing after << is evaluated
 * when the check passes. Every check macro ends in `<< ""`, as apache-tvm-ffi's end in a
 * string literal: code written for it may put a literal right after the macro
 * (`TVM_FFI_ICHECK_EQ(a, b) "text";`), which concatenates with that one.
 */
#define TVM_FFI_CHECK(cond, Kind) \
  if (TVM_FFI_LIKELY(cond)) {     \
  } else                          \
    TVM_FFI_DETAIL_THROW(Kind, #cond) << ""

/*!
 * \brief apache-tvm-ffi's internal-invariant checks: like TVM_FFI_CHECK with the kind
 * InternalError (a RuntimeError in Python). The binary forms evaluate each operand once and
 * print both: "Check failed: (a == b) is false: 3 vs. 4: <your message>".
 */
#define TVM_FFI_ICHECK(cond) TVM_FFI_CHECK(cond, InternalError)

/*!
 * \brief An expression: `ptr` itself, after checking that it is not null (else an Error of
 * the given kind, "Check failed: (ptr != nullptr) is false"). As in apache-tvm-ffi, it takes
 * no streamed message: `T* p = TVM_FFI_ICHECK_NOTNULL(q);`.
 */
#define TVM_FFI_CHECK_NOTNULL(ptr, Kind)                                                  \
  ::tvm::ffi::details::CheckNotNull((ptr), #Kind, #ptr " != nullptr", __FILE__, __LINE__, \
                                    TVM_FFI_FUNC_SIG)
#define TVM_FFI_ICHECK_NOTNULL(ptr) TVM_FFI_CHECK_NOTNULL(ptr, InternalError)

#define TVM_FFI_DETAIL_CHECK_BINARY(x, y, op, Op, Kind)                            \
  if (auto tvm_ffi_check_ =                                                        \
          ::tvm::ffi::details::CheckBinaryOp<::tvm::ffi::details::Op>((x), (y))) { \
  } else                                                                           \
    for (::tvm::ffi::details::ErrorBuilder tvm_ffi_error_builder_(                 \
             #Kind, __FILE__, __LINE__, TVM_FFI_FUNC_SIG, #x " " #op " " #y,       \
             std::move(tvm_ffi_check_.values));                                    \
         ; tvm_ffi_error_builder_.Throw())                                         \
    tvm_ffi_error_builder_.Get() << ""

/*!
 * \brief Binary checks with a kind: TVM_FFI_CHECK_EQ(a, b, ValueError) << "text"; each operand
 * is evaluated once and both are printed: "Check failed: (a == b) is false: 3 vs. 4: text".
 */
#define TVM_FFI_CHECK_EQ(x, y, Kind) TVM_FFI_DETAIL_CHECK_BINARY(x, y, ==, CompareEq, Kind)
#define TVM_FFI_CHECK_NE(x, y, Kind) TVM_FFI_DETAIL_CHECK_BINARY(x, y, !=, CompareNe, Kind)
#define TVM_FFI_CHECK_LT(x, y, Kind) TVM_FFI_DETAIL_CHECK_BINARY(x, y, <, CompareLt, Kind)
#define TVM_FFI_CHECK_LE(x, y, Kind) TVM_FFI_DETAIL_CHECK_BINARY(x, y, <=, CompareLe, Kind)
#define TVM_FFI_CHECK_GT(x, y, Kind) TVM_FFI_DETAIL_CHECK_BINARY(x, y, >, CompareGt, Kind)
#define TVM_FFI_CHECK_GE(x, y, Kind) TVM_FFI_DETAIL_CHECK_BINARY(x, y, >=, CompareGe, Kind)

#define TVM_FFI_ICHECK_EQ(x, y) TVM_FFI_CHECK_EQ(x, y, InternalError)
#define TVM_FFI_ICHECK_NE(x, y) TVM_FFI_CHECK_NE(x, y, InternalError)
#define TVM_FFI_ICHECK_LT(x, y) TVM_FFI_CHECK_LT(x, y, InternalError)
#define TVM_FFI_ICHECK_LE(x, y) TVM_FFI_CHECK_LE(x, y, InternalError)
#define TVM_FFI_ICHECK_GT(x, y) TVM_FFI_CHECK_GT(x, y, InternalError)
#define TVM_FFI_ICHECK_GE(x, y) TVM_FFI_CHECK_GE(x, y, InternalError)

/*!
 * \brief Debug-only checks: the TVM_FFI_ICHECK forms unless NDEBUG is defined, when neither
 * the condition nor the message is evaluated (but both still compile).
 */
#ifdef NDEBUG
#define TVM_FFI_DETAIL_DCHECK_OFF(check) \
  while (false) check
#define TVM_FFI_DCHECK(x) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK(x))
#define TVM_FFI_DCHECK_NOTNULL(x) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_NOTNULL(x))
#define TVM_FFI_DCHECK_EQ(x, y) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_EQ(x, y))
#define TVM_FFI_DCHECK_NE(x, y) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_NE(x, y))
#define TVM_FFI_DCHECK_LT(x, y) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_LT(x, y))
#define TVM_FFI_DCHECK_LE(x, y) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_LE(x, y))
#define TVM_FFI_DCHECK_GT(x, y) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_GT(x, y))
#define TVM_FFI_DCHECK_GE(x, y) TVM_FFI_DETAIL_DCHECK_OFF(TVM_FFI_ICHECK_GE(x, y))
#else
#define TVM_FFI_DCHECK(x) TVM_FFI_ICHECK(x)
#define TVM_FFI_DCHECK_NOTNULL(x) TVM_FFI_ICHECK_NOTNULL(x)
#define TVM_FFI_DCHECK_EQ(x, y) TVM_FFI_ICHECK_EQ(x, y)
#define TVM_FFI_DCHECK_NE(x, y) TVM_FFI_ICHECK_NE(x, y)
#define TVM_FFI_DCHECK_LT(x, y) TVM_FFI_ICHECK_LT(x, y)
#define TVM_FFI_DCHECK_LE(x, y) TVM_FFI_ICHECK_LE(x, y)
#define TVM_FFI_DCHECK_GT(x, y) TVM_FFI_ICHECK_GT(x, y)
#define TVM_FFI_DCHECK_GE(x, y) TVM_FFI_ICHECK_GE(x, y)
#endif

/*!
 * \brief TVM_FFI_THROW that also prints the error to stderr first, for places where an
 * exception may be swallowed (destructors, callbacks): TVM_FFI_LOG_AND_THROW(RuntimeError) << x;
 */
#define TVM_FFI_LOG_AND_THROW(Kind)                                                    \
  for (::tvm::ffi::details::ErrorBuilder tvm_ffi_error_builder_(                       \
           #Kind, __FILE__, __LINE__, TVM_FFI_FUNC_SIG, nullptr, std::string(), true); \
       ; tvm_ffi_error_builder_.Throw())                                               \
  tvm_ffi_error_builder_.Get()

#endif  // TVM_FFI_ERROR_H_
