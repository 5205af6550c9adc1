/*
 * The implementation behind tvm/ffi/container/array.h (the public header).
 *
 * tvm::ffi::Array<T>: a sequence. As a parameter it accepts a Python list or tuple; as a
 * result it comes back as a list. Value semantics over std::vector (a copy is a copy), with
 * the member names kernel-library wrappers use.
 */
#ifndef TVM_FFI_DETAIL_ARRAY_H_
#define TVM_FFI_DETAIL_ARRAY_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/error.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

template <typename T>
class Array {
 public:
  using value_type = T;
  using iterator = typename std::vector<T>::const_iterator;
  using const_iterator = iterator;

  Array() = default;
  Array(std::initializer_list<T> items) : items_(items) {}
  Array(std::vector<T> items) : items_(std::move(items)) {}  // NOLINT: implicit on purpose
  template <typename It>
  Array(It first, It last) : items_(first, last) {}
  Array(size_t n, const T& value) : items_(n, value) {}

  size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  /*! \brief Element i; IndexError when out of range (negative counts from the end). */
  const T& operator[](int64_t i) const { return items_[Index(i)]; }
  const T& at(int64_t i) const { return items_[Index(i)]; }
  const T& front() const { return items_[Index(0)]; }
  const T& back() const { return items_[Index(-1)]; }
  iterator begin() const noexcept { return items_.begin(); }
  iterator end() const noexcept { return items_.end(); }
  const T* data() const noexcept { return items_.data(); }

  void push_back(T value) { items_.push_back(std::move(value)); }
  template <typename... Args>
  void emplace_back(Args&&... args) {
    items_.emplace_back(std::forward<Args>(args)...);
  }
  void pop_back() {
    if (TVM_FFI_UNLIKELY(items_.empty())) {
      TVM_FFI_THROW(IndexError) << "Array::pop_back() on an empty Array";
    }
    items_.pop_back();
  }
  void Set(int64_t i, T value) { items_[Index(i)] = std::move(value); }
  void insert(iterator pos, T value) { items_.insert(pos, std::move(value)); }
  void erase(iterator pos) { items_.erase(pos); }
  void clear() noexcept { items_.clear(); }
  void reserve(size_t n) { items_.reserve(n); }
  void resize(size_t n) { items_.resize(n); }

  const std::vector<T>& as_vector() const noexcept { return items_; }
  operator std::vector<T>() const { return items_; }  // NOLINT: implicit on purpose

  friend bool operator==(const Array& a, const Array& b) { return a.items_ == b.items_; }
  friend bool operator!=(const Array& a, const Array& b) { return a.items_ != b.items_; }

 private:
  size_t Index(int64_t i) const {
    const int64_t n = static_cast<int64_t>(items_.size());
    const int64_t k = i < 0 ? i + n : i;
    if (TVM_FFI_UNLIKELY(k < 0 || k >= n)) {
      TVM_FFI_THROW(IndexError) << "Array index " << i << " out of range for size " << n;
    }
    return static_cast<size_t>(k);
  }

  std::vector<T> items_;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_ARRAY_H_
