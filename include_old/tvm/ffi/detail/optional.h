/*
 * The implementation behind tvm/ffi/optional.h (the public header).
 *
 * tvm::ffi::Optional<T>: a value or nothing. As a parameter of an exported function it
 * accepts Python None; as a result, nothing comes back as None. A thin layer over
 * std::optional with the spellings kernel-library wrappers use (has_value, value, value_or,
 * defined, comparison with std::nullopt).
 */
#ifndef TVM_FFI_DETAIL_OPTIONAL_H_
#define TVM_FFI_DETAIL_OPTIONAL_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/error.h>

#include <optional>
#include <type_traits>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

template <typename T>
class Optional {
 public:
  using value_type = T;

  Optional() = default;
  Optional(std::nullopt_t) noexcept {}  // NOLINT: implicit, like std::optional
  template <typename U = T,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, Optional> &&
                                        !std::is_same_v<std::decay_t<U>, std::nullopt_t>>>
  Optional(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT: implicit on purpose
  Optional(std::optional<T> value) : value_(std::move(value)) {}  // NOLINT

  bool has_value() const noexcept { return value_.has_value(); }
  /*! \brief The same as has_value(), under the name object handles use. */
  bool defined() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return value_.has_value(); }

  /*! \brief The value; RuntimeError when there is none. */
  const T& value() const& {
    if (TVM_FFI_UNLIKELY(!value_.has_value())) ThrowEmpty();
    return *value_;
  }
  T& value() & {
    if (TVM_FFI_UNLIKELY(!value_.has_value())) ThrowEmpty();
    return *value_;
  }
  T&& value() && {
    if (TVM_FFI_UNLIKELY(!value_.has_value())) ThrowEmpty();
    return std::move(*value_);
  }
  template <typename U>
  T value_or(U&& fallback) const& {
    return value_.value_or(std::forward<U>(fallback));
  }

  /*! \brief Unchecked access, like std::optional. */
  const T& operator*() const& noexcept { return *value_; }
  T& operator*() & noexcept { return *value_; }
  const T* operator->() const noexcept { return &*value_; }
  T* operator->() noexcept { return &*value_; }

  void reset() noexcept { value_.reset(); }
  template <typename... Args>
  T& emplace(Args&&... args) {
    return value_.emplace(std::forward<Args>(args)...);
  }

  const std::optional<T>& as_std() const noexcept { return value_; }
  operator std::optional<T>() const { return value_; }  // NOLINT: implicit on purpose

  friend bool operator==(const Optional& a, std::nullopt_t) noexcept { return !a.has_value(); }
  friend bool operator==(std::nullopt_t, const Optional& a) noexcept { return !a.has_value(); }
  friend bool operator!=(const Optional& a, std::nullopt_t) noexcept { return a.has_value(); }
  friend bool operator!=(std::nullopt_t, const Optional& a) noexcept { return a.has_value(); }

 private:
  [[noreturn]] TVM_FFI_COLD static void ThrowEmpty() {
    TVM_FFI_THROW(RuntimeError) << "Optional::value() called on an empty Optional (None)";
  }

  std::optional<T> value_;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_OPTIONAL_H_
