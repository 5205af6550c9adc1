/*
 * Type indices of object classes: registration of a class's key with the runtime
 * (TVMFFITypeGetOrAllocIndex) and the "is an object of index i a T?" test. Identity is the
 * index the runtime gave, never the key string: two layouts under one key are two libraries'
 * mistake, which the runtime can refuse because every registration also states
 * sizeof(T) (TVMFFITypeMetadata::total_size).
 */
#ifndef TVM_FFI_DETAIL_TYPE_INDEX_H_
#define TVM_FFI_DETAIL_TYPE_INDEX_H_

#include <tvm/ffi/base_detail.h>

#include <cstring>
#include <string>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

/*!
 * \brief Thrown when a runtime function failed and left its error in this thread's slot: the
 * export wrapper (function.h) returns -1 with that error as it is, so its kind and message (a
 * refused registration's TypeError, say) reach the caller unchanged; Error::FromRaised turns
 * it into an Error where C++ code wants one.
 */
struct ErrorRaisedInRuntime {
  const char* operation;  // the runtime function that failed
};

/*!
 * \brief Thrown when a called function returned -2: its error is pending in the caller's
 * frontend (a Python exception), not in the runtime's slot. The export wrapper returns -2 in
 * turn, so the frontend raises its own exception unchanged.
 */
struct EnvErrorAlreadySet {};

/*!
 * \brief Registers (or finds) a dynamic object type; called once per class and library. The
 * first library to register a key also states its layout (sizeof, creator); a later one
 * with another size for the key is refused here, whichever runtime is loaded, instead of
 * reading objects of the other layout as its own.
 */
TVM_FFI_COLD inline int32_t RegisterObjectType(const char* key, int32_t depth, int32_t child_slots,
                                               bool child_slots_can_overflow, int32_t parent,
                                               int32_t total_size, TVMFFIObjectCreator creator) {
  const TVMFFIByteArray type_key{key, std::strlen(key)};
  const int32_t index = TVMFFITypeGetOrAllocIndex(&type_key, -1, depth, child_slots,
                                                  child_slots_can_overflow ? 1 : 0, parent);
  if (index < 0) throw ErrorRaisedInRuntime{"TVMFFITypeGetOrAllocIndex"};
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(index);
  if (info->metadata == nullptr) {
    const TVMFFITypeMetadata metadata{
        {nullptr, 0}, creator, total_size, kTVMFFISEqHashKindUnsupported};
    if (TVMFFITypeRegisterMetadata(index, &metadata) != 0) {
      throw ErrorRaisedInRuntime{"TVMFFITypeRegisterMetadata"};
    }
  } else if (info->metadata->total_size != 0 && info->metadata->total_size != total_size) {
    const std::string message = "type key '" + std::string(key) + "' is registered with " +
                                std::to_string(info->metadata->total_size) +
                                "-byte objects; this library's class for it is " +
                                std::to_string(total_size) + " bytes (two layouts, one key)";
    TVMFFIErrorSetRaisedFromCStr("TypeError", message.c_str());
    throw ErrorRaisedInRuntime{"RegisterObjectType"};
  }
  return index;
}

/*!
 * \brief Whether an object of index `index` is of the type `target` (depth `target_depth`).
 * Parents have smaller indices than their children, so a smaller index is never a subtype;
 * otherwise the object's ancestor at the target's depth decides.
 */
inline bool IsInstanceOfIndex(int32_t index, int32_t target, int32_t target_depth,
                              bool target_final) noexcept {
  if (index == target) return true;
  if (target_final || index < target) return false;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(index);
  return info->type_depth > target_depth &&
         info->type_ancestors[target_depth]->type_index == target;
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#endif  // TVM_FFI_DETAIL_TYPE_INDEX_H_
