// TVMFFIEnvTensorAlloc during a call from Python: the core installs one process-wide allocator
// that hands the request to the framework of the call's tensors (the producer's
// managed_tensor_allocator, so a kernel's new tensor comes back as a torch tensor), or, with no
// such framework among the arguments, allocates host memory itself (the result is a
// tvm_ffi.Tensor). The framework is a per-thread pointer the call sets (CallThreadState): no
// runtime call, no allocation on a call that allocates nothing.
#include <cstdlib>
#include <limits>
#include <string>

#include "core.h"

namespace tvm_ffi_next {
namespace {

constexpr size_t kAlignment = 64;

struct HostTensor {
  DLManagedTensorVersioned managed;
  int64_t shape[1];  // ndim extents follow (at least one slot)
};

void DeleteHostTensor(DLManagedTensorVersioned* self) {
  std::free(self->dl_tensor.data);
  std::free(self);
}

std::string ShapeText(const DLTensor& t) {
  std::string text = "(";
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(t.shape[d]);
  }
  return text + (t.ndim == 1 ? ",)" : ")");
}

int HostAllocate(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                 void (*set_error)(void*, const char*, const char*)) {
  if (prototype->device.device_type != kDLCPU && prototype->device.device_type != kDLCUDAHost) {
    const std::string message =
        "TVMFFIEnvTensorAlloc: no framework among the call's arguments allocates on device "
        "type " +
        std::to_string(prototype->device.device_type) + ": pass a tensor of that framework";
    set_error(error_ctx, "RuntimeError", message.c_str());
    return -1;
  }
  if (prototype->ndim < 0 || (prototype->ndim > 0 && prototype->shape == nullptr)) {
    set_error(error_ctx, "ValueError", "TVMFFIEnvTensorAlloc got a prototype without a shape");
    return -1;
  }
  // Zero extents count as one: an empty tensor's contiguous strides still multiply the others.
  uint64_t bits = static_cast<uint64_t>(prototype->dtype.bits) * prototype->dtype.lanes;
  bool empty = false, overflow = false;
  for (int32_t d = 0; d < prototype->ndim; ++d) {
    const int64_t extent = prototype->shape[d];
    if (extent < 0) {
      const std::string message = "TVMFFIEnvTensorAlloc got a negative size (" +
                                  std::to_string(extent) + ") in dimension " + std::to_string(d);
      set_error(error_ctx, "ValueError", message.c_str());
      return -1;
    }
    if (extent == 0) empty = true;
    const auto factor = static_cast<uint64_t>(extent == 0 ? 1 : extent);
    if (bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / factor) {
      overflow = true;
    } else {
      bits *= factor;
    }
  }
  if (overflow) {
    const std::string message = "TVMFFIEnvTensorAlloc: a CPU tensor of shape " +
                                ShapeText(*prototype) +
                                " is too large: its size in bytes does not fit in int64";
    set_error(error_ctx, "ValueError", message.c_str());
    return -1;
  }
  const size_t bytes = empty ? 0 : static_cast<size_t>((bits + 7) / 8);
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded > 0 ? rounded : kAlignment);
  const size_t extents = prototype->ndim > 0 ? static_cast<size_t>(prototype->ndim) : 1;
  auto* tensor = data != nullptr ? static_cast<HostTensor*>(std::malloc(
                                       sizeof(HostTensor) + (extents - 1) * sizeof(int64_t)))
                                 : nullptr;
  if (tensor == nullptr) {
    std::free(data);
    const std::string message = "TVMFFIEnvTensorAlloc: cannot allocate " + std::to_string(bytes) +
                                " bytes for a CPU tensor of shape " + ShapeText(*prototype);
    set_error(error_ctx, "MemoryError", message.c_str());
    return -1;
  }
  DLManagedTensorVersioned& m = tensor->managed;
  m.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m.manager_ctx = nullptr;
  m.deleter = DeleteHostTensor;
  m.flags = 0;
  m.dl_tensor = *prototype;
  m.dl_tensor.data = data;
  m.dl_tensor.byte_offset = 0;
  m.dl_tensor.strides = nullptr;
  m.dl_tensor.device = DLDevice{kDLCPU, 0};
  for (int32_t d = 0; d < prototype->ndim; ++d) tensor->shape[d] = prototype->shape[d];
  m.dl_tensor.shape = tensor->shape;
  *out = &m;
  return 0;
}

int CoreAllocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                  void (*set_error)(void*, const char*, const char*)) {
  const ExchangeApi* api = CallState()->alloc_api;
  if (api != nullptr && api->managed_tensor_allocator != nullptr) {
    return api->managed_tensor_allocator(prototype, out, error_ctx, set_error);
  }
  return HostAllocate(prototype, out, error_ctx, set_error);
}

}  // namespace

thread_local CallThreadState t_call_state{nullptr, nullptr};

void InitHostAllocator() {
  // Global: every thread that calls from Python reaches it; a foreign allocator set on a
  // thread keeps precedence there.
  if (TVMFFIEnvSetDLPackManagedTensorAllocator(CoreAllocator, 1, nullptr) != 0) {
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);
    DecRef(static_cast<TVMFFIObject*>(error));
  }
}

}  // namespace tvm_ffi_next
