// Objects: the combined strong/weak count, allocation through the custom allocator, opaque
// objects, owned copies of values, one-time handles and the version.
#include <cstddef>
#include <cstdlib>
#include <mutex>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

constexpr uint64_t kStrongOne = 1;
constexpr uint64_t kWeakOne = uint64_t{1} << 32;

// The default allocator keeps its TVMFFIObjectAllocHeader in the 16 bytes before the object,
// so the object itself stays aligned like malloc's memory.
constexpr size_t kDefaultBodyOffset = alignof(std::max_align_t);

void DefaultDeleteSpace(void* obj) { std::free(static_cast<char*>(obj) - kDefaultBodyOffset); }

void* DefaultAllocate(size_t size, size_t /*alignment*/, int32_t /*type_index*/, void*) {
  char* base = static_cast<char*>(std::malloc(kDefaultBodyOffset + size));
  if (base == nullptr) return nullptr;
  void* obj = base + kDefaultBodyOffset;
  (static_cast<TVMFFIObjectAllocHeader*>(obj) - 1)->delete_space = &DefaultDeleteSpace;
  return obj;
}

TVMFFICustomAllocator default_allocator{&DefaultAllocate, nullptr};
std::atomic<TVMFFICustomAllocator*> current_allocator{&default_allocator};

struct OpaqueObject {
  TVMFFIObject header;
  TVMFFIOpaqueObjectCell cell;
  void (*handle_deleter)(void*);
};

void OpaqueDeleter(void* self, int flags) {
  auto* obj = static_cast<OpaqueObject*>(self);
  if ((flags & kTVMFFIObjectDeleterFlagBitMaskStrong) && obj->handle_deleter != nullptr) {
    obj->handle_deleter(obj->cell.handle);
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(self);
}

std::mutex init_once_mutex;

}  // namespace

void IncRef(TVMFFIObject* obj) {
  reinterpret_cast<std::atomic<uint64_t>*>(&obj->combined_ref_count)
      ->fetch_add(kStrongOne, std::memory_order_relaxed);
}

void DecRef(TVMFFIObject* obj) {
  auto* count = reinterpret_cast<std::atomic<uint64_t>*>(&obj->combined_ref_count);
  uint64_t before = count->fetch_sub(kStrongOne, std::memory_order_release);
  if (before == (kStrongOne | kWeakOne)) {
    // Last strong and no weak reference besides the one strong ones hold: one call frees all.
    std::atomic_thread_fence(std::memory_order_acquire);
    obj->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskBoth);
  } else if ((before & 0xFFFFFFFFu) == kStrongOne) {
    std::atomic_thread_fence(std::memory_order_acquire);
    obj->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskStrong);
    // Drop the weak count the strong references held; the last weak reference frees memory.
    if (count->fetch_sub(kWeakOne, std::memory_order_release) == kWeakOne) {
      std::atomic_thread_fence(std::memory_order_acquire);
      obj->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskWeak);
    }
  }
}

void* AllocObject(size_t size, int32_t type_index, void (*deleter)(void*, int)) {
  TVMFFICustomAllocator* alloc = current_allocator.load(std::memory_order_acquire);
  void* mem = alloc->allocate(size, alignof(std::max_align_t), type_index, alloc->context);
  if (mem == nullptr) throw std::bad_alloc();
  std::memset(mem, 0, size);
  TVMFFIObject* h = Header(mem);
  h->combined_ref_count = kStrongOne | kWeakOne;
  h->type_index = type_index;
  h->deleter = deleter;
  return mem;
}

void FreeObjectSpace(void* obj) {
  (static_cast<TVMFFIObjectAllocHeader*>(obj) - 1)->delete_space(obj);
}

void FlatDeleter(void* obj, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) FreeObjectSpace(obj);
}

TVMFFIAny OwnedCopy(const TVMFFIAny& view) {
  switch (view.type_index) {
    case kTVMFFIRawStr:
      return MakeStr(std::string_view(view.v_c_str), false);
    case kTVMFFIByteArrayPtr: {
      auto* b = static_cast<const TVMFFIByteArray*>(view.v_ptr);
      return MakeStr(std::string_view(b->data, b->size), true);
    }
    case kTVMFFIObjectRValueRef: {
      // v_ptr points at the caller's ObjectRef (one TVMFFIObject* slot): move out of it.
      auto** slot = static_cast<TVMFFIObject**>(view.v_ptr);
      TVMFFIObject* obj = *slot;
      *slot = nullptr;
      return obj == nullptr ? NoneValue() : ObjectValue(obj);
    }
    default:
      if (IsObject(view)) IncRef(view.v_obj);
      return view;
  }
}

}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

void TVMFFIGetVersion(TVMFFIVersion* out) {
  out->major = TVM_FFI_VERSION_MAJOR;
  out->minor = TVM_FFI_VERSION_MINOR;
  out->patch = TVM_FFI_VERSION_PATCH;
}

int TVMFFIObjectIncRef(TVMFFIObjectHandle obj) {
  if (obj != nullptr) IncRef(Header(obj));
  return 0;
}

int TVMFFIObjectDecRef(TVMFFIObjectHandle obj) {
  if (obj != nullptr) DecRef(Header(obj));
  return 0;
}

int TVMFFIObjectCreateOpaque(void* handle, int32_t type_index, void (*deleter)(void*),
                             TVMFFIObjectHandle* out) {
  TVM_FFI_RT_BEGIN();
  if (type_index < kTVMFFIStaticObjectBegin) {
    Throw("ValueError", "TVMFFIObjectCreateOpaque: type index " + std::to_string(type_index) +
                            " is not an object type (object types start at 64)");
  }
  auto* obj =
      static_cast<OpaqueObject*>(AllocObject(sizeof(OpaqueObject), type_index, &OpaqueDeleter));
  obj->cell.handle = handle;
  obj->handle_deleter = deleter;
  *out = obj;
  TVM_FFI_RT_END();
}

TVMFFICustomAllocator* TVMFFIGetCustomAllocator(void) {
  return current_allocator.load(std::memory_order_acquire);
}

int TVMFFISetCustomAllocator(TVMFFICustomAllocator* allocator) {
  // Objects remember how to free themselves (their alloc header), so switching is safe.
  current_allocator.store(allocator != nullptr ? allocator : &default_allocator,
                          std::memory_order_release);
  return 0;
}

int TVMFFIAnyViewToOwnedAny(const TVMFFIAny* any_view, TVMFFIAny* out) {
  TVM_FFI_RT_BEGIN();
  *out = OwnedCopy(*any_view);
  TVM_FFI_RT_END();
}

int TVMFFIHandleInitOnce(void** handle_addr, int (*init_func)(void** result)) {
  auto* slot = reinterpret_cast<std::atomic<void*>*>(handle_addr);
  if (slot->load(std::memory_order_acquire) != nullptr) return 0;
  std::lock_guard<std::mutex> lock(init_once_mutex);
  if (slot->load(std::memory_order_acquire) != nullptr) return 0;
  void* result = nullptr;
  if (int rc = init_func(&result); rc != 0) return rc;
  if (result == nullptr) {
    // NULL means "not yet initialised": storing it would run init_func again on every call.
    return RaiseInSlot("RuntimeError",
                       "TVMFFIHandleInitOnce: init_func must return a non-NULL handle");
  }
  slot->store(result, std::memory_order_release);
  return 0;
}

int TVMFFIHandleDeinitOnce(void** handle_addr, int (*deinit_func)(void* handle)) {
  auto* slot = reinterpret_cast<std::atomic<void*>*>(handle_addr);
  std::lock_guard<std::mutex> lock(init_once_mutex);
  void* handle = slot->load(std::memory_order_acquire);
  if (handle == nullptr) return 0;
  if (int rc = deinit_func(handle); rc != 0) return rc;
  slot->store(nullptr, std::memory_order_release);
  return 0;
}

}  // extern "C"
