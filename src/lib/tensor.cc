// Tensors: TensorObj (DLTensor at 24) over a DLPack managed tensor or a view of another
// tensor, and managed tensors that keep a TensorObj alive.
#include <cstdlib>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// What owns the memory a tensor object describes.
enum class Owner : int32_t { kManaged, kManagedVersioned, kView };

// TensorObj: the header, the DLTensor at 24 (read inline by libraries), then the owner and,
// when the owner gave no strides (or for views), ndim shape and ndim stride words at the end.
struct TensorObject {
  TVMFFIObject header;
  DLTensor tensor;
  Owner owner_kind;
  void* owner;  // DLManagedTensor*, DLManagedTensorVersioned* or the viewed TVMFFIObject*
};

int64_t* Tail(TensorObject* t) { return reinterpret_cast<int64_t*>(t + 1); }

void TensorDeleter(void* obj, int flags) {
  auto* t = static_cast<TensorObject*>(obj);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    switch (t->owner_kind) {
      case Owner::kManaged: {
        auto* m = static_cast<DLManagedTensor*>(t->owner);
        if (m->deleter != nullptr) m->deleter(m);
        break;
      }
      case Owner::kManagedVersioned: {
        auto* m = static_cast<DLManagedTensorVersioned*>(t->owner);
        if (m->deleter != nullptr) m->deleter(m);
        break;
      }
      case Owner::kView:
        DecRef(Header(t->owner));
        break;
    }
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(obj);
}

void FillCompactStrides(int64_t* strides, const int64_t* shape, int32_t ndim) {
  int64_t stride = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
}

bool IsContiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] == 1) continue;  // a dimension of one may carry any stride
    if (t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

void CheckRequirements(const DLTensor& t, int32_t alignment, int32_t contiguous, const char* op) {
  if (alignment > 0) {
    auto address = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
    if (address % static_cast<uintptr_t>(alignment) != 0) {
      Throw("RuntimeError", std::string(op) + ": the tensor's data (address " +
                                std::to_string(address) + ") is not aligned to " +
                                std::to_string(alignment) + " bytes");
    }
  }
  if (contiguous != 0 && !IsContiguous(t)) {
    Throw("RuntimeError", std::string(op) +
                              ": the tensor is not contiguous (strides do not "
                              "match a row-major layout of its shape)");
  }
}

TVMFFIObject* Wrap(const DLTensor& src, Owner kind, void* owner, bool copy_shape) {
  bool fill_strides = src.strides == nullptr;
  size_t tail_words = copy_shape ? 2 * static_cast<size_t>(src.ndim)
                                 : (fill_strides ? static_cast<size_t>(src.ndim) : 0);
  auto* t = static_cast<TensorObject*>(AllocObject(
      sizeof(TensorObject) + tail_words * sizeof(int64_t), kTVMFFITensor, &TensorDeleter));
  t->tensor = src;
  t->owner_kind = kind;
  t->owner = owner;
  int64_t* tail = Tail(t);
  if (copy_shape) {
    // Views describe memory under a shape of their own: keep it inside the object.
    std::memcpy(tail, src.shape, sizeof(int64_t) * src.ndim);
    if (fill_strides) {
      FillCompactStrides(tail + src.ndim, tail, src.ndim);
    } else {
      std::memcpy(tail + src.ndim, src.strides, sizeof(int64_t) * src.ndim);
    }
    t->tensor.shape = tail;
    t->tensor.strides = tail + src.ndim;
  } else if (fill_strides) {
    // Readers expect strides; a compact tensor without them gets its row-major strides.
    FillCompactStrides(tail, src.shape, src.ndim);
    t->tensor.strides = tail;
  }
  return &t->header;
}

// The managed tensors handed out by ToDLPack hold a reference to the tensor object.
template <typename Managed>
void ManagedDeleter(Managed* self) {
  DecRef(Header(self->manager_ctx));
  delete self;
}

}  // namespace

TVMFFIObject* TensorFromManagedVersioned(DLManagedTensorVersioned* m) {
  return Wrap(m->dl_tensor, Owner::kManagedVersioned, m, false);
}

}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFITensorFromDLPack(DLManagedTensor* from, int32_t require_alignment,
                           int32_t require_contiguous, TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  // On failure the caller still owns `from`.
  CheckRequirements(from->dl_tensor, require_alignment, require_contiguous,
                    "TVMFFITensorFromDLPack");
  *out = Wrap(from->dl_tensor, Owner::kManaged, from, false);
  TVM_FFI_RT_END();
}

int TVMFFITensorFromDLPackVersioned(DLManagedTensorVersioned* from, int32_t require_alignment,
                                    int32_t require_contiguous, TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  if (from->version.major != DLPACK_MAJOR_VERSION) {
    Throw("ValueError", "TVMFFITensorFromDLPackVersioned: DLPack major version " +
                            std::to_string(from->version.major) + " is not supported (expected " +
                            std::to_string(DLPACK_MAJOR_VERSION) + ")");
  }
  CheckRequirements(from->dl_tensor, require_alignment, require_contiguous,
                    "TVMFFITensorFromDLPackVersioned");
  *out = TensorFromManagedVersioned(from);
  TVM_FFI_RT_END();
}

int TVMFFITensorToDLPack(TVMFFIObjectHandle from, DLManagedTensor** out) {
  TVM_FFI_RT_BEGIN();
  auto* m = new DLManagedTensor{};
  m->dl_tensor = *reinterpret_cast<DLTensor*>(static_cast<char*>(from) + sizeof(TVMFFIObject));
  m->manager_ctx = from;
  m->deleter = &ManagedDeleter<DLManagedTensor>;
  IncRef(Header(from));
  *out = m;
  TVM_FFI_RT_END();
}

int TVMFFITensorToDLPackVersioned(TVMFFIObjectHandle from, DLManagedTensorVersioned** out) {
  TVM_FFI_RT_BEGIN();
  auto* m = new DLManagedTensorVersioned{};
  m->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->dl_tensor = *reinterpret_cast<DLTensor*>(static_cast<char*>(from) + sizeof(TVMFFIObject));
  m->manager_ctx = from;
  m->deleter = &ManagedDeleter<DLManagedTensorVersioned>;
  m->flags = 0;
  IncRef(Header(from));
  *out = m;
  TVM_FFI_RT_END();
}

int TVMFFITensorCreateUnsafeView(TVMFFIObjectHandle source, const DLTensor* prototype,
                                 TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  *out = Wrap(*prototype, Owner::kView, source, true);
  IncRef(Header(source));
  TVM_FFI_RT_END();
}

}  // extern "C"
