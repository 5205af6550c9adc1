// Map and Dict operations compiled with apache-tvm-ffi's headers: the reference that
// map_driver.cc (compiled with staging/include/tvm/ffi/detail/map_layout.h) is compared with.
// Maps cross as raw TVMFFIObject* holding one strong reference; values as raw TVMFFIAny.
#include <tvm/ffi/any.h>
#include <tvm/ffi/big_int.h>
#include <tvm/ffi/container/dict.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/string.h>

#include <vector>

using tvm::ffi::Any;
using tvm::ffi::AnyView;
using tvm::ffi::Dict;
using tvm::ffi::Map;
using tvm::ffi::Object;
using tvm::ffi::ObjectPtr;
using Unsafe = tvm::ffi::details::ObjectUnsafe;
using AnyUnsafe = tvm::ffi::details::AnyUnsafe;

namespace {

ObjectPtr<Object> Own(TVMFFIObject* map) { return Unsafe::ObjectPtrFromOwned<Object>(map); }
TVMFFIObject* Release(ObjectPtr<Object>&& map) {
  return Unsafe::MoveObjectPtrToTVMFFIObjectPtr(std::move(map));
}
const Any& AsAny(const TVMFFIAny* value) { return *reinterpret_cast<const Any*>(value); }
const tvm::ffi::MapBaseObj* Base(TVMFFIObject* map) {
  return reinterpret_cast<const tvm::ffi::MapBaseObj*>(map);
}

// The dense map's table of chain distances (protected), read through a subclass.
struct DensePeek : tvm::ffi::DenseMapBaseObj {
  static uint64_t Jump(size_t code) { return NextProbeLocation(code); }
};

}  // namespace

extern "C" {

// An empty Map (dict = 0) or Dict (dict = 1).
TVMFFIObject* ap_new(int dict) {
  if (dict) return Unsafe::MoveObjectRefToTVMFFIObjectPtr(Dict<Any, Any>());
  return Unsafe::MoveObjectRefToTVMFFIObjectPtr(Map<Any, Any>());
}

// A map built from n pairs at once (apache's range constructor).
TVMFFIObject* ap_range(int dict, const TVMFFIAny* keys, const TVMFFIAny* values, uint64_t n) {
  std::vector<std::pair<Any, Any>> pairs;
  for (uint64_t i = 0; i < n; ++i) pairs.emplace_back(AsAny(keys + i), AsAny(values + i));
  if (dict) {
    return Unsafe::MoveObjectRefToTVMFFIObjectPtr(Dict<Any, Any>(pairs.begin(), pairs.end()));
  }
  return Unsafe::MoveObjectRefToTVMFFIObjectPtr(Map<Any, Any>(pairs.begin(), pairs.end()));
}

// Sets key -> value; a Map may be replaced (*map takes the new object).
void ap_set(TVMFFIObject** map, const TVMFFIAny* key, const TVMFFIAny* value) {
  if ((*map)->type_index == kTVMFFIDict) {
    Dict<Any, Any> d(Own(*map));
    d.Set(AsAny(key), AsAny(value));
    *map = Unsafe::MoveObjectRefToTVMFFIObjectPtr(std::move(d));
  } else {
    Map<Any, Any> m(Own(*map));
    m.Set(AsAny(key), AsAny(value));
    *map = Unsafe::MoveObjectRefToTVMFFIObjectPtr(std::move(m));
  }
}

void ap_erase(TVMFFIObject** map, const TVMFFIAny* key) {
  if ((*map)->type_index == kTVMFFIDict) {
    Dict<Any, Any> d(Own(*map));
    d.erase(AsAny(key));
    *map = Unsafe::MoveObjectRefToTVMFFIObjectPtr(std::move(d));
  } else {
    Map<Any, Any> m(Own(*map));
    m.erase(AsAny(key));
    *map = Unsafe::MoveObjectRefToTVMFFIObjectPtr(std::move(m));
  }
}

// 1 and the value's bits (borrowed) when key is present, else 0.
int ap_find(TVMFFIObject* map, const TVMFFIAny* key, TVMFFIAny* value) {
  auto it = Base(map)->find(AsAny(key));
  if (it == Base(map)->end()) return 0;
  *value = *reinterpret_cast<const TVMFFIAny*>(&it->second);
  return 1;
}

uint64_t ap_count(TVMFFIObject* map, const TVMFFIAny* key) { return Base(map)->count(AsAny(key)); }

uint64_t ap_size(TVMFFIObject* map) { return Base(map)->size(); }

// The pairs in iteration order (borrowed bits); returns how many there are.
uint64_t ap_items(TVMFFIObject* map, TVMFFIAny* keys, TVMFFIAny* values, uint64_t max) {
  uint64_t n = 0;
  for (const auto& kv : *Base(map)) {
    if (n < max) {
      keys[n] = *reinterpret_cast<const TVMFFIAny*>(&kv.first);
      values[n] = *reinterpret_cast<const TVMFFIAny*>(&kv.second);
    }
    ++n;
  }
  return n;
}

uint64_t ap_hash(const TVMFFIAny* key) { return tvm::ffi::AnyHash()(AsAny(key)); }

int ap_equal(const TVMFFIAny* lhs, const TVMFFIAny* rhs) {
  return tvm::ffi::AnyEqual()(AsAny(lhs), AsAny(rhs));
}

// Owned values made as apache's headers make them.
TVMFFIAny ap_string(const char* data, size_t size, int bytes) {
  Any value = bytes ? Any(tvm::ffi::Bytes(data, size)) : Any(tvm::ffi::String(data, size));
  return AnyUnsafe::MoveAnyToTVMFFIAny(std::move(value));
}

TVMFFIAny ap_object(int64_t n) {
  return AnyUnsafe::MoveAnyToTVMFFIAny(Any(tvm::ffi::Shape({n, n + 1})));
}

TVMFFIAny ap_bigint(double value) {
  return AnyUnsafe::MoveAnyToTVMFFIAny(Any(tvm::ffi::BigInt(value)));
}

// The chain distance for a jump code.
uint64_t ap_jump(int code) { return DensePeek::Jump(size_t(code)); }

void ap_release(TVMFFIAny* value) { Any dropped = AnyUnsafe::MoveTVMFFIAnyRawToAny(*value); }

}  // extern "C"
