/*
 * The implementation behind tvm/ffi/container/shape.h (the public header).
 *
 * Shapes: IntArrayView (also named ShapeView), the non-owning view TensorView::shape() and
 * strides() return, and tvm::ffi::Shape, an owning array of int64_t. As a parameter of an
 * exported function a Shape accepts a Python list or tuple of ints; as a result it comes back
 * as a tuple.
 */
#ifndef TVM_FFI_DETAIL_SHAPE_H_
#define TVM_FFI_DETAIL_SHAPE_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/error.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
// std::random_access_iterator_tag: every standard library declares it with <string> (which
// error.h includes; std::string's iterators need it). <iterator> itself would add <streambuf>
// and the stream iterators to every translation unit.
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

  IntArrayView() noexcept : values_(nullptr), shape_(nullptr), size_(0) {}
  /*! \param values may be NULL: then element i is the row-major stride of `shape`. */
  IntArrayView(const int64_t* values, const int64_t* shape, int32_t size) noexcept
      : values_(values), shape_(shape), size_(size > 0 ? static_cast<size_t>(size) : 0) {}
  IntArrayView(const int64_t* values, size_t size) noexcept
      : values_(values), shape_(nullptr), size_(size) {}
  /*! \brief Views the list for the rest of the full expression (a call's argument). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // by design: a view for the call
#endif
  IntArrayView(std::initializer_list<int64_t> values) noexcept  // NOLINT: implicit on purpose
      : values_(values.begin()), shape_(nullptr), size_(values.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  /*! \brief Views any contiguous int64_t container (std::vector, Shape, Array<int64_t>). */
  template <typename C, typename = std::enable_if_t<std::is_convertible_v<
                            decltype(std::declval<const C&>().data()), const int64_t*>>>
  IntArrayView(const C& values) noexcept  // NOLINT: implicit on purpose
      : values_(values.data()), shape_(nullptr), size_(values.size()) {}

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /*! \brief Unchecked, like std::vector::operator[]. */
  int64_t operator[](size_t i) const noexcept {
    if (values_ != nullptr) return values_[i];
    int64_t stride = 1;
    for (size_t d = i + 1; d < size_; ++d) stride *= shape_[d];
    return stride;
  }
  /*! \brief The elements, or NULL for strides computed from the shape (see above). */
  const int64_t* data() const noexcept { return values_; }
  /*! \brief Product of the elements (the element count, for a shape). */
  int64_t Product() const noexcept {
    int64_t n = 1;
    for (size_t i = 0; i < size_; ++i) n *= (*this)[i];
    return n;
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

/*! \brief The name apache-tvm-ffi code uses for a non-owning shape. */
using ShapeView = IntArrayView;

/*! \brief An owning, immutable array of int64_t: a tensor shape kept beyond a call. */
class Shape {
 public:
  using value_type = int64_t;
  using iterator = const int64_t*;
  using const_iterator = iterator;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}  // NOLINT: implicit on purpose
  Shape(IntArrayView dims) : dims_(dims.begin(), dims.end()) {}  // NOLINT: implicit on purpose
  template <typename It>
  Shape(It first, It last) : dims_(first, last) {}

  size_t size() const noexcept { return dims_.size(); }
  bool empty() const noexcept { return dims_.empty(); }
  const int64_t* data() const noexcept { return dims_.data(); }
  /*! \brief Dimension i; IndexError when out of range (negative counts from the end). */
  int64_t operator[](int64_t i) const { return dims_[Index(i)]; }
  int64_t at(int64_t i) const { return dims_[Index(i)]; }
  int64_t front() const { return dims_[Index(0)]; }
  int64_t back() const { return dims_[Index(-1)]; }
  iterator begin() const noexcept { return dims_.data(); }
  iterator end() const noexcept { return dims_.data() + dims_.size(); }
  int64_t Product() const noexcept {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  operator IntArrayView() const noexcept { return IntArrayView(dims_.data(), dims_.size()); }
  const std::vector<int64_t>& as_vector() const noexcept { return dims_; }

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return a.dims_ != b.dims_; }

 private:
  size_t Index(int64_t i) const {
    const int64_t n = static_cast<int64_t>(dims_.size());
    const int64_t k = i < 0 ? i + n : i;
    if (TVM_FFI_UNLIKELY(k < 0 || k >= n)) {
      TVM_FFI_THROW(IndexError) << "Shape index " << i << " out of range for ndim " << n;
    }
    return static_cast<size_t>(k);
  }

  std::vector<int64_t> dims_;
};

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_SHAPE_H_
