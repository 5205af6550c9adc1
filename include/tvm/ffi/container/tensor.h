/*
 * tvm::ffi::TensorView: a non-owning view of a DLTensor, the type an exported function takes
 * for tensor arguments. It is valid only while the DLTensor it views is (for an argument:
 * until the function returns).
 */
#ifndef TVM_FFI_CONTAINER_TENSOR_H_
#define TVM_FFI_CONTAINER_TENSOR_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/dlpack.h>
#include <tvm/ffi/error.h>

#include <cstddef>
#include <cstdint>
// std::random_access_iterator_tag: every standard library declares it with <string> (which
// error.h includes; std::string's iterators need it). <iterator> itself would add <streambuf>
// and the stream iterators to every translation unit.
#include <string>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

/*!
 * \brief Read-only view of a tensor's shape or strides: size(), operator[], begin()/end().
 * Elements are returned by value because strides may be computed: a DLTensor whose strides
 * pointer is NULL (allowed for old producers) is row-major contiguous.
 */
class IntArrayView {
 public:
  class iterator;
  using const_iterator = iterator;
  using value_type = int64_t;

  /*! \param values may be NULL: then element i is the row-major stride of `shape`. */
  IntArrayView(const int64_t* values, const int64_t* shape, int32_t size) noexcept
      : values_(values), shape_(shape), size_(size > 0 ? static_cast<size_t>(size) : 0) {}

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /*! \brief Unchecked, like std::vector::operator[]. */
  int64_t operator[](size_t i) const noexcept {
    if (values_ != nullptr) return values_[i];
    int64_t stride = 1;
    for (size_t d = i + 1; d < size_; ++d) stride *= shape_[d];
    return stride;
  }
  int64_t front() const noexcept { return (*this)[0]; }
  int64_t back() const noexcept { return (*this)[size_ - 1]; }
  iterator begin() const noexcept;
  iterator end() const noexcept;

 private:
  const int64_t* values_;
  const int64_t* shape_;
  size_t size_;
};

/*! \brief Holds a copy of the view, so it stays valid after the view goes away. */
class IntArrayView::iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = int64_t;
  using difference_type = std::ptrdiff_t;
  using pointer = const int64_t*;
  using reference = int64_t;

  iterator(IntArrayView view, size_t index) noexcept : view_(view), index_(index) {}
  int64_t operator*() const noexcept { return view_[index_]; }
  int64_t operator[](difference_type n) const noexcept { return view_[index_ + n]; }
  iterator& operator++() noexcept {
    ++index_;
    return *this;
  }
  iterator operator++(int) noexcept {
    iterator old = *this;
    ++index_;
    return old;
  }
  iterator& operator--() noexcept {
    --index_;
    return *this;
  }
  iterator operator--(int) noexcept {
    iterator old = *this;
    --index_;
    return old;
  }
  iterator& operator+=(difference_type n) noexcept {
    index_ += n;
    return *this;
  }
  iterator& operator-=(difference_type n) noexcept {
    index_ -= n;
    return *this;
  }
  iterator operator+(difference_type n) const noexcept { return iterator(view_, index_ + n); }
  iterator operator-(difference_type n) const noexcept { return iterator(view_, index_ - n); }
  difference_type operator-(const iterator& other) const noexcept {
    return static_cast<difference_type>(index_) - static_cast<difference_type>(other.index_);
  }
  bool operator==(const iterator& other) const noexcept { return index_ == other.index_; }
  bool operator!=(const iterator& other) const noexcept { return index_ != other.index_; }
  bool operator<(const iterator& other) const noexcept { return index_ < other.index_; }
  bool operator>(const iterator& other) const noexcept { return index_ > other.index_; }
  bool operator<=(const iterator& other) const noexcept { return index_ <= other.index_; }
  bool operator>=(const iterator& other) const noexcept { return index_ >= other.index_; }

 private:
  IntArrayView view_;
  size_t index_;
};

inline IntArrayView::iterator IntArrayView::begin() const noexcept { return iterator(*this, 0); }
inline IntArrayView::iterator IntArrayView::end() const noexcept { return iterator(*this, size_); }

class TensorView {
 public:
  /*! \brief Views `tensor`, which must be non-null and outlive the view. */
  TensorView(const DLTensor* tensor) noexcept : tensor_(tensor) {}  // NOLINT: implicit on purpose

  /*! \brief Address of the first element: data + byte_offset. */
  void* data_ptr() const noexcept {
    return static_cast<char*>(tensor_->data) + tensor_->byte_offset;
  }
  DLDevice device() const noexcept { return tensor_->device; }
  DLDataType dtype() const noexcept { return tensor_->dtype; }
  int32_t ndim() const noexcept { return tensor_->ndim; }
  IntArrayView shape() const noexcept {
    return IntArrayView(tensor_->shape, tensor_->shape, tensor_->ndim);
  }
  /*! \brief In elements. Row-major values when the producer left strides NULL. */
  IntArrayView strides() const noexcept {
    return IntArrayView(tensor_->strides, tensor_->shape, tensor_->ndim);
  }
  /*! \brief Size of dimension `dim`; negative counts from the end. IndexError if out of range. */
  int64_t size(int64_t dim) const { return tensor_->shape[CheckDim(dim, "size")]; }
  /*! \brief Stride of dimension `dim` in elements; negative counts from the end. */
  int64_t stride(int64_t dim) const { return strides()[CheckDim(dim, "stride")]; }
  /*! \brief Number of elements (1 for a 0-d tensor). */
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int32_t d = 0; d < tensor_->ndim; ++d) n *= tensor_->shape[d];
    return n;
  }
  /*!
   * \brief True when the elements are laid out row-major with no gaps. Like torch, dimensions
   * of size 1 may have any stride, and a tensor with no elements is contiguous.
   */
  bool IsContiguous() const noexcept {
    if (tensor_->strides == nullptr || numel() == 0) return true;
    int64_t expected = 1;
    for (int32_t d = tensor_->ndim - 1; d >= 0; --d) {
      int64_t extent = tensor_->shape[d];
      if (extent == 1) continue;
      if (tensor_->strides[d] != expected) return false;
      expected *= extent;
    }
    return true;
  }
  const DLTensor* GetDLTensorPtr() const noexcept { return tensor_; }

 private:
  size_t CheckDim(int64_t dim, const char* method) const {
    int64_t ndim = tensor_->ndim;
    int64_t normalized = dim < 0 ? dim + ndim : dim;
    if (TVM_FFI_UNLIKELY(normalized < 0 || normalized >= ndim)) ThrowBadDim(dim, method);
    return static_cast<size_t>(normalized);
  }
  [[noreturn]] TVM_FFI_COLD void ThrowBadDim(int64_t dim, const char* method) const {
    int64_t ndim = tensor_->ndim;
    if (ndim == 0) {
      TVM_FFI_THROW(IndexError) << "TensorView::" << method << "(" << dim
                                << "): a 0-d tensor has no dimensions";
    }
    TVM_FFI_THROW(IndexError) << "TensorView::" << method << "(" << dim
                              << "): dimension out of range for a tensor of ndim " << ndim
                              << " (expected " << -ndim << " to " << ndim - 1 << ")";
  }

  const DLTensor* tensor_;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_TENSOR_H_
