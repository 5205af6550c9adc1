/*
 * The reference count of the shared blocks behind Error, String/Bytes and Tensor.
 *
 * With GCC and Clang it is the __atomic builtins on a plain integer: the instructions
 * std::atomic emits, without parsing <atomic> in every translation unit that includes the
 * core headers (about 5% of a wrapper's parse time). Other compilers get std::atomic.
 */
#ifndef TVM_FFI_DETAIL_REF_COUNT_H_
#define TVM_FFI_DETAIL_REF_COUNT_H_

#include <tvm/ffi/base.h>

#if !defined(__GNUC__) && !defined(__clang__)
#include <atomic>
#endif

// Default visibility, unlike the other detail types: tvm::ffi::Object (default visibility, see
// object.h) holds one, and a class must not have a field of lower visibility. Its members are
// the same few atomic operations in every library.
namespace tvm {
namespace ffi {
namespace detail {

template <typename Int>
class RefCount {
 public:
  constexpr RefCount(Int initial) noexcept : value_(initial) {}  // NOLINT: `{1}` in aggregates
  RefCount(const RefCount&) = delete;
  RefCount& operator=(const RefCount&) = delete;

#if defined(__GNUC__) || defined(__clang__)
  void Increment() noexcept { __atomic_fetch_add(&value_, 1, __ATOMIC_RELAXED); }
  /*! \brief True when this dropped the last reference: the caller frees the block. */
  bool Decrement() noexcept { return __atomic_fetch_sub(&value_, 1, __ATOMIC_ACQ_REL) == 1; }
  Int Load() const noexcept { return __atomic_load_n(&value_, __ATOMIC_RELAXED); }
  /*! \brief The count, ordered after every release by another owner (for "am I the last?"). */
  Int LoadAcquire() const noexcept { return __atomic_load_n(&value_, __ATOMIC_ACQUIRE); }

 private:
  Int value_;
#else
  void Increment() noexcept { value_.fetch_add(1, std::memory_order_relaxed); }
  bool Decrement() noexcept { return value_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  Int Load() const noexcept { return value_.load(std::memory_order_relaxed); }
  Int LoadAcquire() const noexcept { return value_.load(std::memory_order_acquire); }

 private:
  std::atomic<Int> value_;
#endif
};

}  // namespace detail
}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_DETAIL_REF_COUNT_H_
