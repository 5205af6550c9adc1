/*
 * tvm::ffi::ShapeView (a borrowed run of int64 extents) and tvm::ffi::Shape (an owned one:
 * ShapeObj, type index kTVMFFIShape, TVMFFIShapeCell at offset 24, extents inline after).
 */
#ifndef TVM_FFI_CONTAINER_SHAPE_H_
#define TVM_FFI_CONTAINER_SHAPE_H_

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/error.h>

#include <cstring>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace tvm {
namespace ffi {

/*! \brief A non-owning view of extents (a tensor's shape or strides). */
class TVM_FFI_HIDDEN_MEMBERS ShapeView {
 public:
  TVM_FFI_HIDDEN ShapeView() noexcept = default;
  TVM_FFI_HIDDEN ShapeView(const int64_t* data, size_t size) noexcept : data_(data), size_(size) {}
  // compat: apache-tvm-ffi: `Tensor::FromEnvAlloc(alloc, {n, m}, ...)`; the list must outlive
  // the view (it does for the length of a call).
  TVM_FFI_HIDDEN ShapeView(const std::initializer_list<int64_t>& v) noexcept {  // NOLINT
    data_ = v.begin();
    size_ = v.size();
  }
  TVM_FFI_HIDDEN ShapeView(const std::vector<int64_t>& values) noexcept  // NOLINT
      : data_(values.data()), size_(values.size()) {}
  TVM_FFI_HIDDEN const int64_t* data() const noexcept { return data_; }
  TVM_FFI_HIDDEN size_t size() const noexcept { return size_; }
  TVM_FFI_HIDDEN bool empty() const noexcept { return size_ == 0; }
  TVM_FFI_HIDDEN int64_t operator[](size_t i) const noexcept { return data_[i]; }
  TVM_FFI_HIDDEN int64_t at(size_t i) const {
    if (TVM_FFI_UNLIKELY(i >= size_)) {
      TVM_FFI_THROW(IndexError) << "shape index " << i << " out of range for " << size_
                                << " dimensions";
    }
    return data_[i];
  }
  TVM_FFI_HIDDEN const int64_t* begin() const noexcept { return data_; }
  TVM_FFI_HIDDEN const int64_t* end() const noexcept { return data_ + size_; }
  TVM_FFI_HIDDEN int64_t front() const noexcept { return data_[0]; }
  TVM_FFI_HIDDEN int64_t back() const noexcept { return data_[size_ - 1]; }
  /*! \brief The number of elements of a tensor of this shape. */
  TVM_FFI_HIDDEN int64_t Product() const noexcept {
    int64_t n = 1;
    for (int64_t x : *this) n *= x;
    return n;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

class TVM_FFI_HIDDEN_MEMBERS ShapeObj : public Object, public TVMFFIShapeCell {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Shape", ShapeObj, Object, kTVMFFIShape);
  static constexpr bool _type_final = true;
  TVM_FFI_HIDDEN ShapeObj() noexcept : TVMFFIShapeCell{nullptr, 0} {}
};

class TVM_FFI_HIDDEN_MEMBERS Shape : public ObjectRef {
 public:
  using ContainerType = ShapeObj;
  static constexpr bool _type_is_nullable = false;

  TVM_FFI_HIDDEN Shape() : Shape(ShapeView()) {}
  TVM_FFI_HIDDEN explicit Shape(UnsafeInit tag) noexcept : ObjectRef(tag) {}
  TVM_FFI_HIDDEN Shape(ShapeView view) : ObjectRef(Make(view)) {}  // NOLINT: implicit
  TVM_FFI_HIDDEN Shape(std::initializer_list<int64_t> v) : Shape(ShapeView(v.begin(), v.size())) {}
  TVM_FFI_HIDDEN Shape(const std::vector<int64_t>& v) : Shape(ShapeView(v)) {}  // NOLINT
  template <typename It, typename = decltype(*std::declval<It>())>
  TVM_FFI_HIDDEN Shape(It first, It last) : Shape(std::vector<int64_t>(first, last)) {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Shape);
  TVM_FFI_HIDDEN ~Shape() = default;

  TVM_FFI_HIDDEN ShapeView view() const noexcept {
    const ShapeObj* obj = get();
    return obj == nullptr ? ShapeView() : ShapeView(obj->data, obj->size);
  }
  TVM_FFI_HIDDEN operator ShapeView() const noexcept { return view(); }  // NOLINT
  TVM_FFI_HIDDEN const int64_t* data() const noexcept { return view().data(); }
  TVM_FFI_HIDDEN size_t size() const noexcept { return view().size(); }
  TVM_FFI_HIDDEN bool empty() const noexcept { return size() == 0; }
  TVM_FFI_HIDDEN int64_t operator[](size_t i) const noexcept { return view()[i]; }
  TVM_FFI_HIDDEN int64_t at(size_t i) const { return view().at(i); }
  TVM_FFI_HIDDEN const int64_t* begin() const noexcept { return view().begin(); }
  TVM_FFI_HIDDEN const int64_t* end() const noexcept { return view().end(); }
  TVM_FFI_HIDDEN int64_t Product() const noexcept { return view().Product(); }
  TVM_FFI_HIDDEN const ShapeObj* get() const noexcept {
    return static_cast<const ShapeObj*>(ObjectRef::get());
  }
  TVM_FFI_HIDDEN const ShapeObj* operator->() const noexcept { return get(); }

 private:
  /*! \brief A new shape object of `n` extents, which the caller writes at *extents. */
  TVM_FFI_HIDDEN static ObjectPtr<ShapeObj> Alloc(size_t n, int64_t** extents) {
    ObjectPtr<ShapeObj> obj = make_inplace_array_object<ShapeObj, int64_t>(n);
    *extents = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(obj.get()) + sizeof(ShapeObj));
    obj->data = *extents;
    obj->size = n;
    return obj;
  }
  TVM_FFI_HIDDEN static ObjectPtr<Object> Make(ShapeView view) {
    int64_t* extents = nullptr;
    ObjectPtr<ShapeObj> obj = Alloc(view.size(), &extents);
    if (!view.empty()) std::memcpy(extents, view.data(), view.size() * sizeof(int64_t));
    return obj;
  }
  friend struct details::TypeTraits<Shape>;
};

// compat: apache-tvm-ffi: prints "[2, 3]".
TVM_FFI_HIDDEN inline std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i != 0 ? ", " : "") << shape[i];
  return os << ']';
}

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

template <>
struct HasOwnTraits<Shape> : std::true_type {};

/*! \brief A Shape, or an Array of ints (a Python tuple or list) made into one. */
template <>
struct TypeTraits<Shape> : ObjectRefTraits<Shape> {
  static Maybe<Shape> TryFromView(const TVMFFIAny& v) {
    if (v.type_index == kTVMFFIShape) return ObjectUnsafe::RefFromBorrowed<Shape>(v.v_obj);
    if (v.type_index != kTVMFFIArray) return std::nullopt;
    const auto* src = static_cast<const ArrayObj*>(ObjectUnsafe::FromHeader(v.v_obj));
    // Straight into the new object: no std::vector<int64_t> for every translation unit to
    // instantiate (this body is compiled wherever shape.h is included).
    int64_t* extents = nullptr;
    ObjectPtr<ShapeObj> obj = Shape::Alloc(src->size_(), &extents);
    for (size_t i = 0; i < src->size_(); ++i) {
      extents[i] = ConvertElement<int64_t>(AnyUnsafe::View((*src)[i]), i);
    }
    return ObjectUnsafe::RefFromOwned<Shape>(ObjectUnsafe::MoveToOwned(&obj));
  }
  static void TypeName(std::string* out) { *out += "Shape"; }
};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_SHAPE_H_
