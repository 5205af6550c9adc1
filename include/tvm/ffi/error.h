/*
 * tvm::ffi::Error and the TVM_FFI_THROW / TVM_FFI_CHECK macros.
 *
 * An Error carries a kind (the name of the Python exception the caller should raise, e.g.
 * "ValueError"), a message, and where it was thrown. An exported function that throws one
 * reports all four through the C ABI (see function.h).
 */
#ifndef TVM_FFI_ERROR_H_
#define TVM_FFI_ERROR_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/append.h>

#include <atomic>
#include <exception>
#include <string>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

class Error : public std::exception {
 public:
  /*!
   * \param kind RuntimeError, ValueError, TypeError, IndexError, KeyError, AttributeError,
   *        NotImplementedError or MemoryError; other kinds reach Python as RuntimeError.
   * \param file where it was raised ("" when unknown).
   */
  Error(std::string kind, std::string message, std::string file = "", int line = 0)
      : data_(new Data(std::move(kind), std::move(message), std::move(file), line)) {}
  // No move constructor on purpose: a moved-from Error would have no data, and copying is
  // cheap and cannot throw, as copying an exception (catch by value) must not.
  Error(const Error& other) noexcept : data_(other.data_) {
    data_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Error& operator=(const Error& other) noexcept {
    Error copy(other);
    std::swap(data_, copy.data_);
    return *this;
  }
  ~Error() override {
    if (data_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete data_;
  }

  const std::string& kind() const noexcept { return data_->kind; }
  const std::string& message() const noexcept { return data_->message; }
  const std::string& file() const noexcept { return data_->file; }
  int line() const noexcept { return data_->line; }
  /*! \brief "Kind: message", the way Python prints an exception. */
  const char* what() const noexcept override { return data_->what.c_str(); }

 private:
  struct Data {
    std::string kind;
    std::string message;
    std::string file;
    int line;
    std::string what;
    std::atomic<size_t> refs{1};
    Data(std::string k, std::string m, std::string f, int l)
        : kind(std::move(k)),
          message(std::move(m)),
          file(std::move(f)),
          line(l),
          what(kind + ": " + message) {}
  };
  // Shared and immutable (an intrusive count instead of std::shared_ptr, to keep <memory> out).
  Data* data_;
};

namespace detail {

/*! \brief Collects the streamed message of TVM_FFI_THROW / TVM_FFI_CHECK, then throws. */
class ErrorBuilder {
 public:
  ErrorBuilder(const char* kind, const char* file, int line, const char* failed_check = nullptr)
      : kind_(kind), file_(file), line_(line), failed_check_(failed_check) {}

  // The macros end in a call to this, so a bare `TVM_FFI_THROW(Kind);` is not an expression
  // statement without effect (which -Wall reports).
  ErrorBuilder& Get() noexcept { return *this; }

  /*! \brief Appends `value` as std::ostream would print it; the types are in append.h. */
  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    AppendTo(message_, value);
    return *this;
  }

  [[noreturn]] TVM_FFI_COLD void Throw() {
    std::string message = std::move(message_);
    if (failed_check_ != nullptr) {
      message = message.empty()
                    ? std::string("Check failed: (") + failed_check_ + ") is false"
                    : std::string("Check failed: (") + failed_check_ + ") is false: " + message;
    }
    throw Error(kind_, std::move(message), file_, line_);
  }

 private:
  const char* kind_;
  const char* file_;
  int line_;
  const char* failed_check_;  // the stringized condition, for TVM_FFI_CHECK
  std::string message_;
};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*
 * The loop never ends normally: its increment throws. That makes every use a single statement
 * (safe in an unbraced if/else) and lets the compiler see that control does not continue, so
 * a function ending in TVM_FFI_THROW needs no dummy return.
 */
#define TVM_FFI_DETAIL_THROW(Kind, FailedCheck)                                           \
  for (::tvm::ffi::detail::ErrorBuilder tvm_ffi_error_builder_(#Kind, __FILE__, __LINE__, \
                                                               FailedCheck);              \
       ; tvm_ffi_error_builder_.Throw())                                                  \
  tvm_ffi_error_builder_.Get()

/*! \brief Throws tvm::ffi::Error of the given kind: TVM_FFI_THROW(ValueError) << "bad " << x; */
#define TVM_FFI_THROW(Kind) TVM_FFI_DETAIL_THROW(Kind, nullptr)

/*!
 * \brief Throws unless cond holds: TVM_FFI_CHECK(n > 0, ValueError) << "n = " << n;
 * The message reads "Check failed: (n > 0) is false: n = 0". Nothing after << is evaluated
 * when the check passes.
 */
#define TVM_FFI_CHECK(cond, Kind) \
  if (TVM_FFI_LIKELY(cond)) {     \
  } else                          \
    TVM_FFI_DETAIL_THROW(Kind, #cond)

#endif  // TVM_FFI_ERROR_H_
