/*
 * tvm::ffi::Dict<K, V>: the map table of container/map.h with reference semantics (type index
 * kTVMFFIDict): every handle to one Dict sees every change, as a Python dict's names do. The
 * layout, hashing and growth are detail/map_layout.h's, shared with Map.
 */
#ifndef TVM_FFI_CONTAINER_DICT_H_
#define TVM_FFI_CONTAINER_DICT_H_

#include <tvm/ffi/container/map.h>

#include <initializer_list>
#include <utility>

namespace tvm {
namespace ffi {

/*! \brief The dict object (reference semantics; container/map.h's MapLayoutObj). */
class TVM_FFI_HIDDEN_MEMBERS DictObj : public details::MapLayoutObj {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Dict", DictObj, Object, kTVMFFIDict);
};

template <typename K, typename V>
class TVM_FFI_HIDDEN_MEMBERS Dict : public details::MapHandle<K, V, DictObj> {
  using Base = details::MapHandle<K, V, DictObj>;

 public:
  TVM_FFI_HIDDEN Dict() = default;
  TVM_FFI_HIDDEN explicit Dict(UnsafeInit tag) noexcept : Base(tag) {}
  TVM_FFI_HIDDEN Dict(std::initializer_list<std::pair<K, V>> entries) : Base(entries) {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Dict);
  TVM_FFI_HIDDEN ~Dict() = default;
  /*! \brief Removes every entry; other handles to this Dict see it empty. */
  TVM_FFI_HIDDEN void clear() noexcept { details::MapClear(this->Head()); }
};

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace details {

template <typename K, typename V>
struct HasOwnTraits<Dict<K, V>> : std::true_type {};

template <typename K, typename V>
struct TypeTraits<Dict<K, V>> : MapTraitsBase<Dict<K, V>, K, V> {
  using Base = MapTraitsBase<Dict<K, V>, K, V>;
  // A reference: never converted into a copy, whose changes the caller would not see.
  static Maybe<Dict<K, V>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIDict || !Base::Shareable(v.v_obj)) return std::nullopt;
    return ObjectUnsafe::RefFromBorrowed<Dict<K, V>>(v.v_obj);
  }
  static void TypeName(std::string* out) { Base::TypeName("Dict", out); }
  static void Schema(std::string* out) { Base::Schema("ffi.Dict", out); }
};

}  // namespace details
TVM_FFI_DETAIL_HIDDEN_END

}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_CONTAINER_DICT_H_
