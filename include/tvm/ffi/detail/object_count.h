/*
 * The reference count of the object header (c_api.h): strong count in the low 32 bits, weak
 * count in the high 32 bits, one word so that "last strong and no weak" is one atomic test.
 * Every library and the runtime follow the same protocol on the same word, so it is written
 * once, here, for all inline code.
 */
#ifndef TVM_FFI_DETAIL_OBJECT_COUNT_H_
#define TVM_FFI_DETAIL_OBJECT_COUNT_H_

#include <tvm/ffi/base_detail.h>

#if !defined(__GNUC__) && !defined(__clang__)
#include <atomic>
#endif

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

constexpr uint64_t kStrongOne = 1;
constexpr uint64_t kWeakOne = uint64_t{1} << 32;
/*! \brief A new object: one strong reference, and the weak one every strong set holds. */
constexpr uint64_t kNewObjectCount = kStrongOne | kWeakOne;

#if defined(__GNUC__) || defined(__clang__)
inline uint64_t CountFetchAdd(uint64_t* c, uint64_t v, int order) {
  return __atomic_fetch_add(c, v, order);
}
inline uint64_t CountFetchSub(uint64_t* c, uint64_t v) {
  return __atomic_fetch_sub(c, v, __ATOMIC_RELEASE);
}
inline uint64_t CountLoad(const uint64_t* c) { return __atomic_load_n(c, __ATOMIC_ACQUIRE); }
inline void AcquireFence() { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
#define TVM_FFI_DETAIL_RELAXED __ATOMIC_RELAXED
#else
inline uint64_t CountFetchAdd(uint64_t* c, uint64_t v, int) {
  return reinterpret_cast<std::atomic<uint64_t>*>(c)->fetch_add(v, std::memory_order_relaxed);
}
inline uint64_t CountFetchSub(uint64_t* c, uint64_t v) {
  return reinterpret_cast<std::atomic<uint64_t>*>(c)->fetch_sub(v, std::memory_order_release);
}
inline uint64_t CountLoad(const uint64_t* c) {
  return reinterpret_cast<const std::atomic<uint64_t>*>(c)->load(std::memory_order_acquire);
}
inline void AcquireFence() { std::atomic_thread_fence(std::memory_order_acquire); }
#define TVM_FFI_DETAIL_RELAXED 0
#endif

inline void IncRef(TVMFFIObject* obj) noexcept {
  CountFetchAdd(&obj->combined_ref_count, kStrongOne, TVM_FFI_DETAIL_RELAXED);
}

inline void IncWeakRef(TVMFFIObject* obj) noexcept {
  CountFetchAdd(&obj->combined_ref_count, kWeakOne, TVM_FFI_DETAIL_RELAXED);
}

/*! \brief Adds a strong reference unless none is left (a weak pointer's lock); false then. */
inline bool IncRefIfAlive(TVMFFIObject* obj) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  uint64_t count = __atomic_load_n(&obj->combined_ref_count, __ATOMIC_RELAXED);
  do {
    if ((count & 0xFFFFFFFFu) == 0) return false;
  } while (!__atomic_compare_exchange_n(&obj->combined_ref_count, &count, count + 1, true,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
#else
  auto* c = reinterpret_cast<std::atomic<uint64_t>*>(&obj->combined_ref_count);
  uint64_t count = c->load(std::memory_order_relaxed);
  do {
    if ((count & 0xFFFFFFFFu) == 0) return false;
  } while (!c->compare_exchange_weak(count, count + 1, std::memory_order_acq_rel));
#endif
  return true;
}

inline void DecWeakRef(TVMFFIObject* obj) noexcept {
  if (CountFetchSub(&obj->combined_ref_count, kWeakOne) >> 32 == 1) {
    AcquireFence();
    obj->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskWeak);
  }
}

inline void DecRef(TVMFFIObject* obj) noexcept {
  const uint64_t before = CountFetchSub(&obj->combined_ref_count, kStrongOne);
  if ((before & 0xFFFFFFFFu) != 1) return;
  AcquireFence();
  if (before == kNewObjectCount) {
    // No weak reference: destroy and free in one call.
    obj->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskBoth);
  } else {
    obj->deleter(obj, kTVMFFIObjectDeleterFlagBitMaskStrong);
    DecWeakRef(obj);  // the weak reference the strong ones held together
  }
}

/*! \brief Whether the caller's reference is the only one (copy-on-write may mutate in place). */
inline bool IsUnique(const TVMFFIObject* obj) noexcept {
  return CountLoad(&obj->combined_ref_count) == kNewObjectCount;
}

inline uint32_t StrongCount(const TVMFFIObject* obj) noexcept {
  return static_cast<uint32_t>(CountLoad(&obj->combined_ref_count) & 0xFFFFFFFFu);
}

#undef TVM_FFI_DETAIL_RELAXED

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_OBJECT_COUNT_H_
