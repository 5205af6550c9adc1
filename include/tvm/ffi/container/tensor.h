/*
 * tvm::ffi::TensorView (a borrowed DLTensor, 48 bytes: what kernels take) and tvm::ffi::Tensor
 * (an owned one: TensorObj, type index kTVMFFITensor, DLTensor at offset 24). A TensorView
 * parameter accepts both a bare DLTensor* (kTVMFFIDLTensorPtr) and a tensor object; a Tensor
 * parameter needs an object (the callee may keep it).
 */
#ifndef TVM_FFI_CONTAINER_TENSOR_H_
#define TVM_FFI_CONTAINER_TENSOR_H_

#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <utility>

namespace tvm {
namespace ffi {

/*! \brief The bytes of `numel` elements of `dtype` (sub-byte types round up). */
TVM_FFI_HIDDEN inline size_t GetDataSize(size_t numel, DLDataType dtype) noexcept {
  return (numel * dtype.bits * dtype.lanes + 7) / 8;
}
TVM_FFI_HIDDEN inline size_t GetDataSize(const DLTensor& t) noexcept {
  return GetDataSize(static_cast<size_t>(ShapeView(t.shape, t.ndim).Product()), t.dtype);
}
/*! \brief Row-major without gaps; a tensor without elements always is (nothing to lay out). */
TVM_FFI_HIDDEN inline bool IsContiguous(const DLTensor& t) noexcept {
  if (t.strides == nullptr) return true;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return true;
  }
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] == 1) continue;  // any stride lays out one element (torch writes 1)
    if (t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}
// compat: apache-tvm-ffi: devices whose data pointer is an address (its value shows alignment).
// DLPack's numbers, not its names: an older dlpack.h included first may lack kDLCUDAManaged.
TVM_FFI_HIDDEN inline bool IsDirectAddressDevice(const DLDevice& device) noexcept {
  const int type = static_cast<int>(device.device_type);
  return type <= 3 /* kDLCUDAHost */ || type == 13 /* kDLCUDAManaged */ ||
         type == 10 /* kDLROCM */ || type == 11 /* kDLROCMHost */;
}
TVM_FFI_HIDDEN inline bool IsAligned(const DLTensor& t, size_t alignment) noexcept {
  return reinterpret_cast<uintptr_t>(static_cast<char*>(t.data) + t.byte_offset) % alignment == 0;
}

namespace details {

/*!
 * \brief Refuses, before any allocator runs, a shape with a negative extent or whose size in
 *  bytes does not fit in int64 (an allocator would get a wrapped, small size).
 */
TVM_FFI_HIDDEN inline void CheckAllocSize(const char* op, ShapeView shape, DLDataType dtype) {
  const int64_t bits = int64_t{dtype.bits} * dtype.lanes;
  int64_t bytes = (bits + 7) / 8;
  bool overflow = false, empty = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    empty = empty || shape[d] == 0;
    if (TVM_FFI_UNLIKELY(shape[d] < 0)) {
      TVM_FFI_THROW(ValueError) << op << ": dimension " << d << " of the shape is " << shape[d]
                                << " (expected a size >= 0)";
    }
    if (!overflow && shape[d] != 0 && bytes > INT64_MAX / shape[d]) overflow = true;
    if (!overflow) bytes *= shape[d];
  }
  if (TVM_FFI_UNLIKELY(overflow && !empty)) {
    std::string dims;
    for (size_t d = 0; d < shape.size(); ++d) {
      dims += (d == 0 ? "" : ", ");
      AppendTo(dims, shape[d]);
    }
    TVM_FFI_THROW(ValueError) << op << ": a " << dtype << " tensor of shape (" << dims
                              << ") is too large: its size in bytes does not fit in int64";
  }
}
/*! \brief The accessors TensorView and Tensor share, over `Self::DLRef()` (a DLTensor&). */
template <typename Self>
class TVM_FFI_HIDDEN_MEMBERS TensorAccessors {
 public:
  TVM_FFI_HIDDEN void* data_ptr() const noexcept { return T().data; }
  TVM_FFI_HIDDEN DLDevice device() const noexcept { return T().device; }
  TVM_FFI_HIDDEN DLDataType dtype() const noexcept { return T().dtype; }
  TVM_FFI_HIDDEN int32_t ndim() const noexcept { return T().ndim; }
  TVM_FFI_HIDDEN int32_t dim() const noexcept { return T().ndim; }
  TVM_FFI_HIDDEN uint64_t byte_offset() const noexcept { return T().byte_offset; }
  TVM_FFI_HIDDEN ShapeView shape() const noexcept {
    return ShapeView(T().shape, static_cast<size_t>(T().ndim));
  }
  TVM_FFI_HIDDEN ShapeView sizes() const noexcept { return shape(); }
  TVM_FFI_HIDDEN ShapeView strides() const noexcept {
    return ShapeView(T().strides, T().strides == nullptr ? 0 : static_cast<size_t>(T().ndim));
  }
  /*! \brief The extent of dimension `dim` (negative counts from the end). */
  TVM_FFI_HIDDEN int64_t size(int64_t dim) const { return T().shape[CheckDim(dim, "size")]; }
  TVM_FFI_HIDDEN int64_t stride(int64_t dim) const {
    const int64_t d = CheckDim(dim, "stride");
    if (T().strides != nullptr) return T().strides[d];
    int64_t s = 1;  // compact row-major when the producer gave no strides
    for (int64_t i = T().ndim - 1; i > d; --i) s *= T().shape[i];
    return s;
  }
  TVM_FFI_HIDDEN int64_t numel() const noexcept { return shape().Product(); }
  /*! \brief Row-major without gaps; a tensor without elements always is (nothing to lay out). */
  TVM_FFI_HIDDEN bool IsContiguous() const noexcept { return ::tvm::ffi::IsContiguous(T()); }
  TVM_FFI_HIDDEN bool is_contiguous() const noexcept { return IsContiguous(); }
  TVM_FFI_HIDDEN bool IsAligned(size_t alignment) const noexcept {
    return ::tvm::ffi::IsAligned(T(), alignment);
  }
  TVM_FFI_HIDDEN const DLTensor* GetDLTensorPtr() const noexcept { return &T(); }

 private:
  TVM_FFI_HIDDEN const DLTensor& T() const noexcept {
    return static_cast<const Self*>(this)->DLRef();
  }
  TVM_FFI_HIDDEN int64_t CheckDim(int64_t dim, const char* method) const {
    const int64_t n = T().ndim;
    const int64_t d = dim < 0 ? dim + n : dim;
    if (TVM_FFI_UNLIKELY(d < 0 || d >= n)) {
      if (n == 0) {
        TVM_FFI_THROW(IndexError) << "Tensor::" << method << "(" << dim
                                  << "): a 0-d tensor has no dimensions";
      }
      TVM_FFI_THROW(IndexError) << "Tensor::" << method << "(" << dim
                                << "): dimension out of range for a tensor of ndim " << n
                                << " (expected " << -n << " to " << n - 1 << ")";
    }
    return d;
  }
};
}  // namespace details

/*! \brief The tensor object: the header, then the DLTensor every side reads at offset 24. */
class TVM_FFI_HIDDEN_MEMBERS TensorObj : public Object, public DLTensor {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Tensor", TensorObj, Object, kTVMFFITensor);
  TVM_FFI_HIDDEN TensorObj() noexcept : DLTensor{} {}
};

class Tensor;

/*! \brief A borrowed tensor: a copy of the DLTensor, valid while its owner keeps the memory. */
class TVM_FFI_HIDDEN_MEMBERS TensorView : public details::TensorAccessors<TensorView> {
 public:
  TVM_FFI_HIDDEN TensorView() noexcept : tensor_{} {}
  TVM_FFI_HIDDEN TensorView(const DLTensor* tensor) noexcept : tensor_(*tensor) {}  // NOLINT
  TVM_FFI_HIDDEN TensorView(const Tensor& tensor) noexcept;                         // NOLINT
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(TensorView);
  TVM_FFI_HIDDEN ~TensorView() = default;
  TVM_FFI_HIDDEN const DLTensor& DLRef() const noexcept { return tensor_; }

 private:
  DLTensor tensor_;
};
static_assert(sizeof(TensorView) == sizeof(DLTensor), "TensorView is a DLTensor");

namespace details {
/*! \brief A tensor whose memory came from an NDAlloc (Tensor::FromNDAlloc). */
template <typename Alloc>
class TVM_FFI_HIDDEN_MEMBERS NDAllocTensorObj : public TensorObj {
 public:
  TVM_FFI_HIDDEN NDAllocTensorObj(Alloc alloc, const DLTensor& proto, ShapeView shape,
                                  ShapeView strides)
      : alloc_(std::move(alloc)), extents_(shape.begin(), shape.end()) {
    extents_.insert(extents_.end(), strides.begin(), strides.end());
    static_cast<DLTensor&>(*this) = proto;
    this->shape = extents_.data();
    this->strides = extents_.data() + shape.size();
  }
  TVM_FFI_HIDDEN ~NDAllocTensorObj() { alloc_.FreeData(static_cast<DLTensor*>(this)); }
  Alloc alloc_;

 private:
  std::vector<int64_t> extents_;
};
}  // namespace details

/*! \brief An owned tensor (a handle to a TensorObj). */
class TVM_FFI_HIDDEN_MEMBERS Tensor : public ObjectRef, public details::TensorAccessors<Tensor> {
 public:
  using ContainerType = TensorObj;
  static constexpr bool _type_is_nullable = true;
  TVM_FFI_HIDDEN Tensor() noexcept = default;
  TVM_FFI_HIDDEN Tensor(std::nullptr_t) noexcept {}  // NOLINT
  TVM_FFI_HIDDEN explicit Tensor(ObjectPtr<TensorObj> obj) noexcept : ObjectRef(std::move(obj)) {}
  TVM_FFI_HIDDEN explicit Tensor(UnsafeInit tag) noexcept : ObjectRef(tag) {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Tensor);
  TVM_FFI_HIDDEN ~Tensor() = default;

  TVM_FFI_HIDDEN const TensorObj* get() const noexcept {
    return static_cast<const TensorObj*>(ObjectRef::get());
  }
  TVM_FFI_HIDDEN TensorObj* get_mutable() const noexcept { return const_cast<TensorObj*>(get()); }
  TVM_FFI_HIDDEN const TensorObj* operator->() const noexcept { return get(); }
  TVM_FFI_HIDDEN const DLTensor& DLRef() const noexcept { return *get(); }
  TVM_FFI_HIDDEN TensorView view() const noexcept { return TensorView(*this); }

  /*! \brief Takes ownership of a DLPack tensor (its deleter runs when the last handle goes). */
  TVM_FFI_HIDDEN static Tensor FromDLPack(DLManagedTensor* managed, size_t require_alignment = 0,
                                          bool require_contiguous = false) {
    TVMFFIObjectHandle out = nullptr;
    if (TVMFFITensorFromDLPack(managed, static_cast<int32_t>(require_alignment),
                               require_contiguous ? 1 : 0, &out) != 0) {
      throw details::MoveFromRaised("TVMFFITensorFromDLPack");
    }
    return Adopt(out);
  }
  TVM_FFI_HIDDEN static Tensor FromDLPackVersioned(DLManagedTensorVersioned* managed,
                                                   size_t require_alignment = 0,
                                                   bool require_contiguous = false) {
    TVMFFIObjectHandle out = nullptr;
    if (TVMFFITensorFromDLPackVersioned(managed, static_cast<int32_t>(require_alignment),
                                        require_contiguous ? 1 : 0, &out) != 0) {
      throw details::MoveFromRaised("TVMFFITensorFromDLPackVersioned");
    }
    return Adopt(out);
  }
  /*! \brief A new DLPack tensor sharing this one's memory (the consumer calls its deleter). */
  TVM_FFI_HIDDEN DLManagedTensor* ToDLPack() const {
    DLManagedTensor* out = nullptr;
    if (TVMFFITensorToDLPack(Header(), &out) != 0) {
      throw details::MoveFromRaised("TVMFFITensorToDLPack");
    }
    return out;
  }
  TVM_FFI_HIDDEN DLManagedTensorVersioned* ToDLPackVersioned() const {
    DLManagedTensorVersioned* out = nullptr;
    if (TVMFFITensorToDLPackVersioned(Header(), &out) != 0) {
      throw details::MoveFromRaised("TVMFFITensorToDLPackVersioned");
    }
    return out;
  }

  /*!
   * \brief A new tensor from the caller's allocator (the framework whose tensors the call
   * received): pass TVMFFIEnvTensorAlloc (extra/c_env_api.h).
   */
  TVM_FFI_HIDDEN static Tensor FromEnvAlloc(int (*env_alloc)(DLTensor*, TVMFFIObjectHandle*),
                                            ShapeView shape, DLDataType dtype, DLDevice device) {
    details::CheckAllocSize("Tensor::FromEnvAlloc", shape, dtype);
    DLTensor prototype{};
    prototype.device = device;
    prototype.dtype = dtype;
    prototype.ndim = static_cast<int32_t>(shape.size());
    prototype.shape = const_cast<int64_t*>(shape.data());
    TVMFFIObjectHandle out = nullptr;
    if (env_alloc(&prototype, &out) != 0) throw details::MoveFromRaised("Tensor::FromEnvAlloc");
    if (out == nullptr) {
      TVM_FFI_THROW(RuntimeError) << "Tensor::FromEnvAlloc: the allocator returned no tensor for "
                                  << dtype << " on " << device;
    }
    return Adopt(out);
  }

  /*!
   * \brief A new tensor whose memory `alloc` provides: alloc.AllocData(DLTensor*, extra...)
   * sets data; alloc.FreeData(DLTensor*) runs when the last handle goes. Contiguous strides.
   */
  template <typename Alloc, typename... Extra>
  TVM_FFI_HIDDEN static Tensor FromNDAlloc(Alloc alloc, ShapeView shape, DLDataType dtype,
                                           DLDevice device, Extra&&... extra) {
    details::CheckAllocSize("Tensor::FromNDAlloc", shape, dtype);
    std::vector<int64_t> strides(shape.size());
    int64_t s = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      strides[i] = s;
      s *= shape[i];
    }
    DLTensor proto{};
    proto.device = device;
    proto.dtype = dtype;
    proto.ndim = static_cast<int32_t>(shape.size());
    auto obj = make_object<details::NDAllocTensorObj<Alloc>>(std::move(alloc), proto, shape,
                                                             ShapeView(strides));
    obj->alloc_.AllocData(static_cast<DLTensor*>(obj.get()), std::forward<Extra>(extra)...);
    return Tensor(ObjectPtr<TensorObj>(std::move(obj)));
  }

 private:
  TVM_FFI_HIDDEN TVMFFIObject* Header() const {
    TVMFFIObject* h = details::ObjectUnsafe::HeaderOf(*this);
    if (TVM_FFI_UNLIKELY(h == nullptr)) TVM_FFI_THROW(ValueError) << "the Tensor is empty";
    return h;
  }
  TVM_FFI_HIDDEN static Tensor Adopt(TVMFFIObjectHandle out) noexcept {
    return details::ObjectUnsafe::RefFromOwned<Tensor>(static_cast<TVMFFIObject*>(out));
  }
};

TVM_FFI_HIDDEN inline TensorView::TensorView(const Tensor& tensor) noexcept
    : tensor_(tensor.DLRef()) {}

// compat: apache-tvm-ffi: the bytes of a tensor's elements.
TVM_FFI_HIDDEN inline size_t GetDataSize(const Tensor& t) noexcept {
  return GetDataSize(*t.GetDLTensorPtr());
}
TVM_FFI_HIDDEN inline size_t GetDataSize(const TensorView& t) noexcept {
  return GetDataSize(*t.GetDLTensorPtr());
}

}  // namespace ffi
}  // namespace tvm

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

template <>
struct HasOwnTraits<Tensor> : std::true_type {};

template <>
struct TypeTraits<Tensor> : ObjectRefTraits<Tensor> {
  static void TypeName(std::string* out) { *out += "Tensor"; }
};

/*! \brief A DLTensor* of the caller's, or a tensor object's DLTensor (offset 24). */
template <>
struct TypeTraits<TensorView> {
  static constexpr bool kEnabled = true;
  static void CopyToView(const TensorView& v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIDLTensorPtr);
    out->v_ptr = const_cast<DLTensor*>(v.GetDLTensorPtr());
  }
  [[noreturn]] static void MoveToAny(const TensorView&, TVMFFIAny*) {
    TVM_FFI_THROW(TypeError) << "a TensorView borrows its memory and cannot be returned; "
                                "return a tvm::ffi::Tensor";
  }
  static Maybe<TensorView> TryFromView(const TVMFFIAny& v) noexcept {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIDLTensorPtr)) {
      return TensorView(static_cast<const DLTensor*>(v.v_ptr));
    }
    if (v.type_index == kTVMFFITensor) {
      return TensorView(static_cast<const TensorObj*>(ObjectUnsafe::FromHeader(v.v_obj)));
    }
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "Tensor"; }
  static void Schema(std::string* out) { *out += R"({"type":"DLTensor*"})"; }
};

/*! \brief A raw DLTensor* parameter or result (apache-tvm-ffi's "DLTensor*"): the caller's
 *  DLTensor, or a tensor object's (offset 24). Borrowed for the call. */
template <typename Ptr>
struct DLTensorPtrTraits {
  static constexpr bool kEnabled = true;
  static void CopyToView(Ptr v, TVMFFIAny* out) noexcept {
    SetPOD(out, kTVMFFIDLTensorPtr);
    out->v_ptr = const_cast<DLTensor*>(v);
  }
  static void MoveToAny(Ptr v, TVMFFIAny* out) noexcept { CopyToView(v, out); }
  static Maybe<Ptr> TryFromView(const TVMFFIAny& v) noexcept {
    if (TVM_FFI_LIKELY(v.type_index == kTVMFFIDLTensorPtr)) return static_cast<DLTensor*>(v.v_ptr);
    if (v.type_index == kTVMFFITensor) {
      return static_cast<DLTensor*>(static_cast<TensorObj*>(ObjectUnsafe::FromHeader(v.v_obj)));
    }
    return std::nullopt;
  }
  static void TypeName(std::string* out) { *out += "Tensor"; }
  static void Schema(std::string* out) { *out += R"({"type":"DLTensor*"})"; }
};
template <>
struct TypeTraits<DLTensor*> : DLTensorPtrTraits<DLTensor*> {};
template <>
struct TypeTraits<const DLTensor*> : DLTensorPtrTraits<const DLTensor*> {};

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_CONTAINER_TENSOR_H_
