// The runtime globals over Map and Dict objects, with apache-tvm-ffi's names and calling
// conventions: "ffi.Map"/"ffi.Dict" (alternating keys and values), "ffi.<T>Size",
// "ffi.<T>GetItem", "ffi.<T>GetItemOrMissing", "ffi.<T>Count", "ffi.<T>ForwardIterFunctor",
// and for Dict "ffi.DictSetItem", "ffi.DictErase", "ffi.DictClear". The layouts, hashing and
// equality are detail/map_layout.h's, shared with the libraries' inline code.
#include <tvm/ffi/detail/map_layout.h>

#include <memory>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

namespace m = tvm::ffi::details;

// map_layout.h reports failures (a key type's __any_hash__/__any_equal__) as raised errors.
void Check(int rc) {
  if (rc != 0) RethrowRaised();
}

struct Kind {
  int32_t type_index;
  const char* type_key;  // for messages: "Map" or "Dict"
};
constexpr Kind kMap{kTVMFFIMap, "Map"};
constexpr Kind kDict{kTVMFFIDict, "Dict"};

TVMFFIObject* MapArg(const std::string& fname, const TVMFFIAny& v, Kind kind) {
  if (v.type_index != kind.type_index) {
    Throw("TypeError", fname + ": argument 0 must be " + TypeName(kind.type_index) + " (got " +
                           TypeName(v.type_index) + ")");
  }
  return v.v_obj;
}

// A key as a message shows it: a string's text, an int's digits, else its type.
std::string KeyText(const TVMFFIAny& key) {
  if (IsStrLike(key)) return "'" + std::string(StrView(key, "key")) + "'";
  if (key.type_index == kTVMFFIInt) return std::to_string(key.v_int64);
  return "of type " + TypeName(key.type_index);
}

// The object "ffi.*GetItemOrMissing" answers for an absent key (apache's MISSING sentinel: a
// plain Object that callers compare by identity). Made once and never freed.
TVMFFIObject* Missing() {
  static TVMFFIObject* missing =
      static_cast<TVMFFIObject*>(AllocObject(sizeof(TVMFFIObject), kTVMFFIObject, &FlatDeleter));
  return missing;
}

TVMFFIAny Make(Kind kind, const TVMFFIAny* args, int32_t n) {
  std::string fname = std::string("ffi.") + kind.type_key;
  if (n % 2 != 0) {
    Throw("ValueError",
          fname + ": takes alternating keys and values (got " + std::to_string(n) + " arguments)");
  }
  TVMFFIObject* obj = nullptr;
  Check(m::MapNew(kind.type_index, static_cast<uint64_t>(n / 2), &obj));
  TVMFFIAny result = ObjectValue(obj);  // released below if an insertion fails
  try {
    for (int32_t i = 0; i < n; i += 2) {
      // Owned copies: a raw string argument is a view that must not be stored.
      TVMFFIAny key = OwnedCopy(args[i]), value = OwnedCopy(args[i + 1]);
      int rc = m::MapSet(&obj, &key, &value);
      ReleaseValue(&key);
      ReleaseValue(&value);
      Check(rc);
    }
  } catch (...) {
    ReleaseValue(&result);
    throw;
  }
  return result;
}

TVMFFIAny Size(Kind kind, const char* name, const TVMFFIAny* args, int32_t n) {
  std::string fname = std::string("ffi.") + kind.type_key + name;
  CheckArgCount(fname.c_str(), n, 1);
  return IntValue(static_cast<int64_t>(m::MapSize(MapArg(fname, args[0], kind))));
}

// GetItem (missing_ok false: KeyError when absent), GetItemOrMissing and Count.
enum class Lookup { kItem, kOrMissing, kCount };
TVMFFIAny Get(Kind kind, const char* name, Lookup what, const TVMFFIAny* args, int32_t n) {
  std::string fname = std::string("ffi.") + kind.type_key + name;
  CheckArgCount(fname.c_str(), n, 2);
  TVMFFIAny* value = nullptr;
  Check(m::MapLookup(MapArg(fname, args[0], kind), &args[1], &value));
  if (what == Lookup::kCount) return IntValue(value != nullptr ? 1 : 0);
  if (value != nullptr) return OwnedCopy(*value);
  if (what == Lookup::kOrMissing) {
    IncRef(Missing());
    return ObjectValue(Missing());
  }
  Throw("KeyError", fname + ": key " + KeyText(args[1]) + " is not in the " + kind.type_key);
}

TVMFFIAny DictSetItem(const TVMFFIAny* args, int32_t n) {
  CheckArgCount("ffi.DictSetItem", n, 3);
  TVMFFIObject* obj = MapArg("ffi.DictSetItem", args[0], kDict);
  TVMFFIAny key = OwnedCopy(args[1]), value = OwnedCopy(args[2]);
  int rc = m::MapSet(&obj, &key, &value);  // a Dict stays where it is
  ReleaseValue(&key);
  ReleaseValue(&value);
  Check(rc);
  return NoneValue();
}

TVMFFIAny DictErase(const TVMFFIAny* args, int32_t n) {
  CheckArgCount("ffi.DictErase", n, 2);
  TVMFFIObject* obj = MapArg("ffi.DictErase", args[0], kDict);
  bool erased = false;
  Check(m::MapErase(&obj, &args[1], &erased));
  return NoneValue();
}

TVMFFIAny DictClear(const TVMFFIAny* args, int32_t n) {
  CheckArgCount("ffi.DictClear", n, 1);
  m::MapClear(MapArg("ffi.DictClear", args[0], kDict));
  return NoneValue();
}

// The iterator state of a functor: it holds the map so the map outlives it.
struct Cursor {
  Cursor(TVMFFIObject* m, uint64_t p) : map(m), pos(p) { IncRef(map); }
  Cursor(const Cursor&) = delete;
  ~Cursor() { DecRef(map); }
  TVMFFIObject* map;
  uint64_t pos;
};

// A position still holds an entry (a Dict may shrink while a functor walks it).
bool Valid(const TVMFFIObject* map, uint64_t pos) {
  auto* h = reinterpret_cast<const m::MapHead*>(map);
  if (m::MapIsSmall(h)) return pos < h->size;
  if (pos >= h->slots) return false;
  uint8_t meta = *m::MapMeta(m::MapDense(h), pos);
  return meta != m::kMapSlotEmpty && meta != m::kMapSlotReserved;
}

// f(0) is the current key, f(1) its value, f(2) moves on and says whether an entry is left.
TVMFFIAny IterFunctor(Kind kind, const TVMFFIAny* args, int32_t n) {
  std::string fname = std::string("ffi.") + kind.type_key + "ForwardIterFunctor";
  CheckArgCount(fname.c_str(), n, 1);
  TVMFFIObject* map = MapArg(fname, args[0], kind);
  auto cursor = std::make_shared<Cursor>(map, m::MapIterBegin(map));
  TVMFFIObject* f = MakeNativeFunction([cursor, fname](const TVMFFIAny* a, int32_t k) {
    std::string self = fname + "()";
    CheckArgCount(self.c_str(), k, 1);
    int64_t command = IntArg(self.c_str(), a, 0);
    if (command == 2) {
      if (Valid(cursor->map, cursor->pos)) cursor->pos = m::MapIterNext(cursor->map, cursor->pos);
      return BoolValue(Valid(cursor->map, cursor->pos));
    }
    if (command != 0 && command != 1) {
      Throw("ValueError", self + ": command must be 0 (key), 1 (value) or 2 (advance) (got " +
                              std::to_string(command) + ")");
    }
    if (!Valid(cursor->map, cursor->pos)) Throw("IndexError", self + ": no entry left");
    m::MapKV* kv = m::MapIterItem(cursor->map, cursor->pos);
    return OwnedCopy(command == 0 ? kv->key : kv->value);
  });
  return ObjectValue(f);
}

void RegisterFor(Kind kind) {
  std::string p = std::string("ffi.") + kind.type_key;
  RegisterGlobalNative(p.c_str(),
                       [kind](const TVMFFIAny* a, int32_t n) { return Make(kind, a, n); });
  RegisterGlobalNative((p + "Size").c_str(),
                       [kind](const TVMFFIAny* a, int32_t n) { return Size(kind, "Size", a, n); });
  RegisterGlobalNative((p + "GetItem").c_str(), [kind](const TVMFFIAny* a, int32_t n) {
    return Get(kind, "GetItem", Lookup::kItem, a, n);
  });
  RegisterGlobalNative((p + "GetItemOrMissing").c_str(), [kind](const TVMFFIAny* a, int32_t n) {
    return Get(kind, "GetItemOrMissing", Lookup::kOrMissing, a, n);
  });
  RegisterGlobalNative((p + "Count").c_str(), [kind](const TVMFFIAny* a, int32_t n) {
    return Get(kind, "Count", Lookup::kCount, a, n);
  });
  RegisterGlobalNative((p + "ForwardIterFunctor").c_str(),
                       [kind](const TVMFFIAny* a, int32_t n) { return IterFunctor(kind, a, n); });
}

const bool registered = [] {
  RegisterFor(kMap);
  RegisterFor(kDict);
  RegisterGlobalNative("ffi.DictSetItem", &DictSetItem);
  RegisterGlobalNative("ffi.DictErase", &DictErase);
  RegisterGlobalNative("ffi.DictClear", &DictClear);
  return true;
}();

}  // namespace
}  // namespace tvm_ffi_runtime
