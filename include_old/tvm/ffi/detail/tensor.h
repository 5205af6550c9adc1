/*
 * The TensorView and Tensor classes; container/tensor.h is the public header.
 *
 * tvm::ffi::TensorView: a non-owning view of a DLTensor, the type an exported function takes
 * for tensor arguments. It is valid only while the DLTensor it views is (for an argument:
 * until the function returns).
 *
 * tvm::ffi::Tensor: an owning tensor (shared ownership of a DLManagedTensorVersioned), the
 * type an exported function returns for a tensor it allocated, e.g. through the caller's
 * framework with Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape, dtype, device).
 */
#ifndef TVM_FFI_DETAIL_TENSOR_H_
#define TVM_FFI_DETAIL_TENSOR_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/shape.h>
#include <tvm/ffi/detail/append.h>
#include <tvm/ffi/detail/env_state.h>
#include <tvm/ffi/detail/ref_count.h>
#include <tvm/ffi/dlpack.h>
#include <tvm/ffi/detail/error.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iosfwd>
#include <string>
#include <utility>

// Hidden: each library keeps its own copy; no library binds to another's instantiations.
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {

class TensorView {
 public:
  /*! \brief Views `tensor`, which must be non-null and outlive the view. */
  TensorView(const DLTensor* tensor, bool read_only = false) noexcept  // NOLINT: implicit
      : tensor_(tensor), read_only_(read_only) {}

  /*!
   * \brief The DLTensor's data pointer. As in DLPack (and apache-tvm-ffi), the first element
   *  is at data_ptr() + byte_offset(); tensors passed from Python always have byte_offset() 0
   *  (the caller folds any offset into the pointer), so data_ptr() is the first element there.
   */
  void* data_ptr() const noexcept { return tensor_->data; }
  /*! \brief Bytes from data_ptr() to the first element (0 for every tensor from Python). */
  uint64_t byte_offset() const noexcept { return tensor_->byte_offset; }
  /*!
   * \brief True when the producer marked the memory read-only (DLPack's read-only flag, e.g.
   *  a numpy array over `bytes`, a JAX array). Such a tensor may be read; writing through it
   *  is a bug: check with CheckWritable() before using a tensor as an output.
   */
  bool IsReadOnly() const noexcept { return read_only_; }
  /*! \brief ValueError naming `what` when the tensor is read-only. */
  void CheckWritable(const char* what = "output tensor") const {
    if (TVM_FFI_UNLIKELY(read_only_)) {
      TVM_FFI_THROW(ValueError) << what << " is read-only (its producer set DLPack's "
                                << "read-only flag) and cannot be written";
    }
  }
  DLDevice device() const noexcept { return tensor_->device; }
  DLDataType dtype() const noexcept { return tensor_->dtype; }
  int32_t ndim() const noexcept { return tensor_->ndim; }
  /*! \brief ndim(), under torch's name. */
  int32_t dim() const noexcept { return tensor_->ndim; }
  IntArrayView shape() const noexcept {
    return IntArrayView(tensor_->shape, tensor_->shape, tensor_->ndim);
  }
  /*! \brief shape(), under torch's name. */
  IntArrayView sizes() const noexcept { return shape(); }
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
  /*! \brief IsContiguous(), under torch's name. */
  bool is_contiguous() const noexcept { return IsContiguous(); }
  const DLTensor* GetDLTensorPtr() const noexcept { return tensor_; }
  const DLTensor* operator->() const noexcept { return tensor_; }

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
  bool read_only_;
};

namespace detail {
/*! \brief Shared ownership of one DLManagedTensorVersioned; its deleter runs with the last. */
struct TensorControl {
  RefCount<int32_t> refs;
  DLManagedTensorVersioned* managed;
};

/*! \brief What a legacy (pre-1.0) DLManagedTensor is wrapped in, to be owned uniformly. */
struct LegacyTensorAdapter {
  DLManagedTensorVersioned versioned;
  DLManagedTensor* legacy;
  static void Delete(DLManagedTensorVersioned* self) {
    LegacyTensorAdapter* adapter = reinterpret_cast<LegacyTensorAdapter*>(self);
    if (adapter->legacy->deleter != nullptr) adapter->legacy->deleter(adapter->legacy);
    delete adapter;
  }
};

/*! \brief A new reference handed out by Tensor::ToDLPackVersioned(): drops one ref. */
struct SharedTensorExport {
  DLManagedTensorVersioned versioned;
  TensorControl* control;
};
}  // namespace detail

class Tensor {
 public:
  /*! \brief An undefined tensor (defined() is false). */
  Tensor() noexcept = default;
  Tensor(const Tensor& other) noexcept
      : control_(other.control_), borrowed_(other.borrowed_), read_only_(other.read_only_) {
    if (control_ != nullptr) control_->refs.Increment();
  }
  Tensor(Tensor&& other) noexcept
      : control_(other.control_), borrowed_(other.borrowed_), read_only_(other.read_only_) {
    other.control_ = nullptr;
    other.borrowed_ = nullptr;
  }
  Tensor& operator=(Tensor other) noexcept {
    std::swap(control_, other.control_);
    std::swap(borrowed_, other.borrowed_);
    std::swap(read_only_, other.read_only_);
    return *this;
  }
  ~Tensor() { Release(control_); }

  /*!
   * \brief A tensor argument: views the caller's DLTensor, valid until the function returns
   *  (the caller owns it). Keep a TensorView or copy the data to keep it longer.
   */
  explicit Tensor(const DLTensor* borrowed, bool read_only = false) noexcept
      : borrowed_(borrowed), read_only_(read_only) {}

  /*! \brief Takes ownership of `managed` (its deleter runs when the last Tensor goes). */
  static Tensor FromDLPackVersioned(DLManagedTensorVersioned* managed, size_t require_alignment = 0,
                                    bool require_contiguous = false) {
    if (managed == nullptr) {
      TVM_FFI_THROW(ValueError) << "Tensor::FromDLPackVersioned: null DLManagedTensorVersioned";
    }
    Tensor t;
    t.control_ = new detail::TensorControl{{1}, managed};
    t.CheckRequirements("Tensor::FromDLPackVersioned", require_alignment, require_contiguous);
    return t;
  }
  /*! \brief Takes ownership of a pre-1.0 `managed` tensor. */
  static Tensor FromDLPack(DLManagedTensor* managed, size_t require_alignment = 0,
                           bool require_contiguous = false) {
    if (managed == nullptr) {
      TVM_FFI_THROW(ValueError) << "Tensor::FromDLPack: null DLManagedTensor";
    }
    auto* adapter = new detail::LegacyTensorAdapter{};
    adapter->versioned.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    adapter->versioned.dl_tensor = managed->dl_tensor;
    adapter->versioned.deleter = detail::LegacyTensorAdapter::Delete;
    adapter->legacy = managed;
    Tensor t;
    t.control_ = new detail::TensorControl{{1}, &adapter->versioned};
    t.CheckRequirements("Tensor::FromDLPack", require_alignment, require_contiguous);
    return t;
  }

  /*!
   * \brief Allocates a contiguous tensor through the caller's framework: pass
   *  TVMFFIEnvTensorAlloc (extra/c_env_api.h). Called from Python with torch tensors among the
   *  arguments, this is torch.empty on their framework; the result returns to Python as a
   *  torch.Tensor. RuntimeError when the caller offers no allocator.
   */
  static Tensor FromEnvAlloc(int (*env_alloc)(DLTensor*, TVMFFIObjectHandle*), IntArrayView shape,
                             DLDataType dtype, DLDevice device) {
    CheckAllocShape(shape, dtype);
    DLTensor prototype{};
    prototype.device = device;
    prototype.dtype = dtype;
    prototype.ndim = static_cast<int32_t>(shape.size());
    // The allocator only reads the shape; a computed-strides view never comes here.
    prototype.shape = const_cast<int64_t*>(shape.data());
    TVMFFIObjectHandle out = nullptr;
    if (env_alloc == nullptr || env_alloc(&prototype, &out) != 0 || out == nullptr) {
      std::string what;
      detail::AppendDType(what, dtype);
      what += " on ";
      detail::AppendDevice(what, device);
      const TVMFFICallContext* ctx = detail::GetEnvState()->ctx;
      const bool offered = ctx != nullptr && ctx->abi_version >= 2 && ctx->alloc_tensor != nullptr;
      TVM_FFI_THROW(RuntimeError)
          << "Tensor::FromEnvAlloc: allocating a " << what << " tensor of " << shape.size()
          << " dimensions failed: "
          << (offered ? "the caller's allocator refused it"
                      : "no tensor allocator in this call (TVMFFIEnvTensorAlloc allocates inside "
                        "a function called from tvm_ffi's Python package)");
    }
    return FromDLPackVersioned(static_cast<DLManagedTensorVersioned*>(out));
  }

  /*!
   * \brief A new DLManagedTensorVersioned that shares this tensor's memory; the receiver
   *  calls its deleter once. Undefined or borrowed tensors cannot be exported (RuntimeError).
   */
  DLManagedTensorVersioned* ToDLPackVersioned() const {
    if (control_ == nullptr) {
      TVM_FFI_THROW(RuntimeError) << "Tensor::ToDLPackVersioned: "
                                  << (borrowed_ ? "a borrowed argument tensor is owned by the "
                                                  "caller and cannot be exported"
                                                : "the tensor is undefined");
    }
    auto* out = new detail::SharedTensorExport{};
    out->versioned = *control_->managed;
    out->versioned.manager_ctx = out;
    out->versioned.deleter = [](DLManagedTensorVersioned* self) {
      auto* shared = static_cast<detail::SharedTensorExport*>(self->manager_ctx);
      Release(shared->control);
      delete shared;
    };
    out->control = control_;
    control_->refs.Increment();
    return &out->versioned;
  }

  bool defined() const noexcept { return control_ != nullptr || borrowed_ != nullptr; }
  /*! \brief The caller's DLTensor when this is a borrowed argument, else NULL. */
  const DLTensor* borrowed() const noexcept { return borrowed_; }
  /*! \brief Owners of the memory among Tensors (0 for undefined or borrowed tensors). */
  int use_count() const noexcept {
    return control_ ? control_->refs.Load() : 0;
  }

  const DLTensor* GetDLTensorPtr() const noexcept {
    return control_ ? &control_->managed->dl_tensor : borrowed_;
  }
  const DLTensor* operator->() const noexcept { return GetDLTensorPtr(); }
  operator TensorView() const noexcept { return view(); }  // NOLINT
  /*! \brief A view that keeps the read-only mark (see IsReadOnly()). */
  TensorView view() const noexcept { return TensorView(GetDLTensorPtr(), IsReadOnly()); }
  /*!
   * \brief True for a read-only argument (a numpy array over `bytes`, ...) or a tensor whose
   *  producer set DLPack's read-only flag: check with CheckWritable() before writing.
   */
  bool IsReadOnly() const noexcept {
    // DLPACK_FLAG_BITMASK_READ_ONLY, spelled out: a dlpack.h included before ours may lack it.
    constexpr uint64_t kReadOnly = 1;
    return control_ != nullptr ? (control_->managed->flags & kReadOnly) != 0 : read_only_;
  }
  /*! \brief ValueError naming `what` when the tensor is read-only. */
  void CheckWritable(const char* what = "output tensor") const { view().CheckWritable(what); }

  // The TensorView interface.
  void* data_ptr() const noexcept { return view().data_ptr(); }
  uint64_t byte_offset() const noexcept { return view().byte_offset(); }
  DLDevice device() const noexcept { return view().device(); }
  DLDataType dtype() const noexcept { return view().dtype(); }
  int32_t ndim() const noexcept { return view().ndim(); }
  int32_t dim() const noexcept { return view().ndim(); }
  IntArrayView shape() const noexcept { return view().shape(); }
  IntArrayView sizes() const noexcept { return view().shape(); }
  IntArrayView strides() const noexcept { return view().strides(); }
  int64_t size(int64_t dim) const { return view().size(dim); }
  int64_t stride(int64_t dim) const { return view().stride(dim); }
  int64_t numel() const noexcept { return view().numel(); }
  bool IsContiguous() const noexcept { return view().IsContiguous(); }
  bool is_contiguous() const noexcept { return view().IsContiguous(); }

  /*!
   * \brief For the export wrapper: hands the managed tensor over to the caller. The only
   *  owner passes its own (the framework's deleter, no wrapper); a shared one exports a ref.
   */
  DLManagedTensorVersioned* ReleaseToCaller() const {
    if (control_ != nullptr && control_->refs.LoadAcquire() == 1) {
      DLManagedTensorVersioned* managed = control_->managed;
      delete control_;
      control_ = nullptr;
      return managed;
    }
    return ToDLPackVersioned();
  }

 private:
  /*!
   * \brief ValueError unless `shape` has no negative extent and every byte of the tensor, and
   *  every row-major stride, is addressable in int64: an allocator that multiplied a wrapped
   *  size would hand back a small buffer under a huge shape.
   */
  static void CheckAllocShape(IntArrayView shape, DLDataType dtype) {
    // Extents of 0 count as 1: a tensor with no elements still gets every stride computed.
    int64_t span = 1;
    bool overflow = shape.size() > static_cast<size_t>(INT32_MAX);
    for (size_t d = 0; d < shape.size() && !overflow; ++d) {
      if (shape[d] < 0) {
        TVM_FFI_THROW(ValueError) << "Tensor::FromEnvAlloc: dimension " << d << " of the shape is "
                                  << shape[d] << " (expected a size >= 0)";
      }
      overflow = __builtin_mul_overflow(span, shape[d] > 0 ? shape[d] : 1, &span);
    }
    int64_t bits = 0;
    overflow = overflow || __builtin_mul_overflow(span, int64_t{dtype.bits} * dtype.lanes, &bits) ||
               bits > INT64_MAX - 7;
    if (overflow) {
      std::string what;
      detail::AppendDType(what, dtype);
      what += " tensor of shape (";
      for (size_t d = 0; d < shape.size() && d < 8; ++d) {
        what += (d ? ", " : "") + std::to_string(shape[d]);
      }
      what += shape.size() > 8 ? ", ...)" : (shape.size() == 1 ? ",)" : ")");
      TVM_FFI_THROW(ValueError) << "Tensor::FromEnvAlloc: a " << what
                                << " is too large: its size in bytes does not fit in int64";
    }
  }

  static void Release(detail::TensorControl* control) noexcept {
    if (control != nullptr && control->refs.Decrement()) {
      if (control->managed->deleter != nullptr) control->managed->deleter(control->managed);
      delete control;
    }
  }

  void CheckRequirements(const char* op, size_t alignment, bool contiguous) const {
    const DLTensor* t = GetDLTensorPtr();
    if (alignment != 0 &&
        (reinterpret_cast<uintptr_t>(t->data) + t->byte_offset) % alignment != 0) {
      TVM_FFI_THROW(ValueError) << op << ": data is not aligned to " << alignment << " bytes";
    }
    if (contiguous && !TensorView(t).IsContiguous()) {
      TVM_FFI_THROW(ValueError) << op << ": tensor is not contiguous";
    }
  }

  // Mutable so that the export wrapper can hand a uniquely owned tensor over from the const
  // value it converts (ReleaseToCaller); nothing else changes it behind a const.
  mutable detail::TensorControl* control_ = nullptr;
  const DLTensor* borrowed_ = nullptr;
  bool read_only_ = false;  // a borrowed argument's mark (an owned one's is in its flags)
};

// compat: apache-tvm-ffi (its free functions on DLTensor; the same rules as TensorView's)
/*! \brief Bytes of `numel` elements of `dtype`; sub-byte types are packed. */
inline size_t GetDataSize(size_t numel, DLDataType dtype) {
  return static_cast<size_t>((static_cast<uint64_t>(numel) * dtype.bits * dtype.lanes + 7) / 8);
}
// compat: apache-tvm-ffi
inline size_t GetDataSize(const DLTensor& tensor) {
  return GetDataSize(static_cast<size_t>(TensorView(&tensor).numel()), tensor.dtype);
}
// compat: apache-tvm-ffi
inline size_t GetDataSize(const TensorView& tensor) {
  return GetDataSize(static_cast<size_t>(tensor.numel()), tensor.dtype());
}
// compat: apache-tvm-ffi
inline size_t GetDataSize(const Tensor& tensor) {
  return GetDataSize(static_cast<size_t>(tensor.numel()), tensor.dtype());
}
// compat: apache-tvm-ffi
inline bool IsContiguous(const DLTensor& tensor) { return TensorView(&tensor).IsContiguous(); }
/*! \brief compat: apache-tvm-ffi. Whether the host can add offsets to the device's pointers. */
inline bool IsDirectAddressDevice(const DLDevice& device) {
  // DLPack's fixed numbers (CPU, CUDA, CUDA host, ROCm, ROCm host, CUDA managed): a dlpack.h
  // included before ours may predate the newer enumerators.
  switch (static_cast<int>(device.device_type)) {
    case 1: case 2: case 3: case 10: case 11: case 13: return true;
    default: return false;
  }
}
/*! \brief compat: apache-tvm-ffi. Whether the first element's address is a multiple of `alignment`. */
inline bool IsAligned(const DLTensor& tensor, size_t alignment) {
  if (!IsDirectAddressDevice(tensor.device)) return tensor.byte_offset % alignment == 0;
  return reinterpret_cast<uintptr_t>(static_cast<const char*>(tensor.data) + tensor.byte_offset) %
             alignment ==
         0;
}

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END


#endif  // TVM_FFI_DETAIL_TENSOR_H_
