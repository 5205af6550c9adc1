/*
 * The one implementation of the Map (72) and Dict (76) object layouts, key hashing and key
 * equality. Code on both sides of the boundary reads and writes these objects inline
 * (apache-tvm-ffi's headers do too), so every number here is part of the ABI: each was
 * measured against apache-tvm-ffi 0.1.15.post2's compiled code (tests/abi/test_map_layout.py).
 *
 * Two layouts share the first 56 bytes; bit 63 of `slots` tells them apart.
 *  - small (bit set): up to 4 {key, value} pairs in `data`, in insertion order, found by a
 *    linear scan. The pairs usually sit right after the object; `data_deleter` is set when
 *    they live elsewhere.
 *  - dense (bit clear): `slots` (a power of two) slots in blocks of 16: 16 metadata bytes,
 *    then 16 items {key, value, prev, next}. A key's chain starts at slot
 *    (hash * 2^64/phi) >> fib_shift; metadata 0xFF = empty, 0xFE = reserved during a move,
 *    otherwise bit 7 clear = chain head and bits 0..6 name the distance to the next slot of
 *    the chain (MapJumpDistance; 0 ends it). prev/next thread all items in insertion order.
 * Growth happens in place (the object keeps its address, Map and Dict alike): a small map
 * moves its pairs to a bigger heap array, a full small map becomes dense inside its own
 * memory (every small object has room for 2 pairs, which covers the 80-byte dense head),
 * and a dense table is rebuilt twice as large. Objects and tables written by the other side
 * are handled through their own deleters.
 *
 * Functions that may hash or compare keys return 0, or -1 with the error raised in the
 * runtime (TVMFFIErrorMoveFromRaised), as the C functions do: a type's __any_hash__ or
 * __any_equal__ may fail.
 */
#ifndef TVM_FFI_DETAIL_MAP_LAYOUT_H_
#define TVM_FFI_DETAIL_MAP_LAYOUT_H_

#include <tvm/ffi/c_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(hidden)
#endif

namespace tvm {
namespace ffi {
namespace details {

/* ---- layout -------------------------------------------------------------------------- */

struct MapKV {
  TVMFFIAny key;
  TVMFFIAny value;
};

/* The head of every map object, small or dense. */
struct MapHead {
  TVMFFIObject header;
  void* data;                   // small: MapKV[capacity]; dense: the blocks
  uint64_t size;                // entries
  uint64_t slots;               // small: kMapSmallTag | capacity; dense: slot count
  void (*data_deleter)(void*);  // frees `data` when it is not inside the object
};

/* The head of a dense map: the same 56 bytes, then the table's shift and order list. */
struct DenseMapHead {
  MapHead base;
  uint32_t fib_shift;  // 64 - log2(slots)
  uint64_t list_head;  // first slot in insertion order, kMapNoIndex when empty
  uint64_t list_tail;
};

struct MapItem {
  TVMFFIAny key;
  TVMFFIAny value;
  uint64_t prev;  // neighbours in insertion order (slot indices)
  uint64_t next;
};

static_assert(sizeof(MapKV) == 32 && sizeof(MapItem) == 48, "map entry sizes");
static_assert(offsetof(MapHead, data) == 24 && offsetof(MapHead, size) == 32, "map head");
static_assert(offsetof(MapHead, slots) == 40 && offsetof(MapHead, data_deleter) == 48, "map head");
static_assert(sizeof(MapHead) == 56 && sizeof(DenseMapHead) == 80, "map heads");
static_assert(offsetof(DenseMapHead, fib_shift) == 56 && offsetof(DenseMapHead, list_head) == 64,
              "dense head");
static_assert(sizeof(MapHead) + 2 * sizeof(MapKV) >= sizeof(DenseMapHead),
              "a small map of 2 pairs must hold a dense head");

constexpr uint64_t kMapSmallTag = uint64_t(1) << 63;
constexpr uint64_t kMapSmallMinCapacity = 2;
constexpr uint64_t kMapSmallMaxCapacity = 4;
constexpr uint64_t kMapBlockSlots = 16;
constexpr size_t kMapBlockBytes = kMapBlockSlots * (1 + sizeof(MapItem));
constexpr uint8_t kMapSlotEmpty = 0xFF;
constexpr uint8_t kMapSlotReserved = 0xFE;  // emptied by a move; not to be refilled by it
constexpr uint8_t kMapSlotNotHead = 0x80;
constexpr uint8_t kMapJumpMask = 0x7F;
constexpr uint8_t kMapNumJumps = 126;
constexpr uint64_t kMapNoIndex = ~uint64_t(0);
constexpr double kMapMaxLoadFactor = 0.99;
constexpr uint64_t kMapFibMultiplier = 11400714819323198485ull;  // 2^64 / golden ratio
constexpr uint64_t kCombinedBothOne = (uint64_t(1) << 32) | 1;   // strong 1, weak 1

/* Distance from a slot to the next of its chain for a jump code: 1..15 probe the neighbours;
 * then triangular numbers T(n) = n(n+1)/2, which visit every slot of a power-of-two table:
 * T(6)..T(72) for codes 16..82, then a sparse tail (n about 1.5x apart) for big tables. */
inline uint64_t MapJumpDistance(uint8_t code) {
  static constexpr uint32_t kSparse[kMapNumJumps - 83] = {
      130,        195,        292,        438,       657,       986,       1478,      2217,
      3326,       4988,       7482,       11223,     16835,     25252,     37877,     56816,
      85223,      127835,     191752,     287627,    431440,    647160,    970740,    1456110,
      2184165,    3276247,    4914370,    7371555,   11057333,  16585999,  24878998,  37318497,
      55977745,   83966618,   125949926,  188924889, 283387334, 425081001, 637621501, 956432251,
      1434648376, 2151972564, 3227958845u};
  if (code < 16) return code;
  uint64_t n = code < 83 ? uint64_t(code) - 10 : kSparse[code - 83];
  return n * (n + 1) / 2;
}

inline bool MapIsSmall(const MapHead* m) { return (m->slots & kMapSmallTag) != 0; }
inline uint64_t MapSmallCapacity(const MapHead* m) { return m->slots & ~kMapSmallTag; }
inline MapKV* MapSmallData(const MapHead* m) { return static_cast<MapKV*>(m->data); }
inline DenseMapHead* MapDense(MapHead* m) { return reinterpret_cast<DenseMapHead*>(m); }
inline const DenseMapHead* MapDense(const MapHead* m) {
  return reinterpret_cast<const DenseMapHead*>(m);
}
inline uint8_t* MapMeta(const DenseMapHead* t, uint64_t slot) {
  return static_cast<uint8_t*>(t->base.data) + slot / kMapBlockSlots * kMapBlockBytes +
         slot % kMapBlockSlots;
}
inline MapItem* MapSlot(const DenseMapHead* t, uint64_t slot) {
  return reinterpret_cast<MapItem*>(static_cast<uint8_t*>(t->base.data) +
                                    slot / kMapBlockSlots * kMapBlockBytes + kMapBlockSlots) +
         slot % kMapBlockSlots;
}
/* The next slot of `slot`'s chain, kMapNoIndex at its end. */
inline uint64_t MapChainNext(const DenseMapHead* t, uint64_t slot, uint8_t meta) {
  uint64_t jump = MapJumpDistance(meta & kMapJumpMask);
  return jump == 0 ? kMapNoIndex : (slot + jump) % t->base.slots;
}
inline uint64_t MapChainStart(const DenseMapHead* t, uint64_t hash) {
  return (kMapFibMultiplier * hash) >> t->fib_shift;
}

/* ---- references and errors ----------------------------------------------------------- */

inline void MapAnyIncRef(const TVMFFIAny& v) {
  if (v.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(v.v_obj);
}
inline void MapAnyDecRef(const TVMFFIAny& v) {
  if (v.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(v.v_obj);
}
inline TVMFFIAny MapNone() {
  TVMFFIAny none;
  std::memset(&none, 0, sizeof(none));
  return none;
}
inline int MapRaise(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}
inline void MapFreeData(void* data) { std::free(data); }

/* ---- hashing and equality ------------------------------------------------------------ */

inline uint64_t MapHashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b9 + (seed << 6) + (seed >> 2));
}

/* Bytes as little-endian 64-bit words (the tail zero-padded), h = (h * p + word) mod 2^31-1:
 * the same number on every platform, for a small string's inline bytes and a string object. */
inline uint64_t MapHashBytes(const char* data, size_t size) {
  constexpr uint64_t kMultiplier = 1099511628211ull, kModulus = 2147483647ull;
  uint64_t hash = 0;
  for (size_t at = 0; at < size; at += 8) {
    uint64_t word = 0;
    for (size_t i = 0; i < 8 && at + i < size; ++i) {
      word |= uint64_t(static_cast<uint8_t>(data[at + i])) << (8 * i);
    }
    hash = (hash * kMultiplier + word) % kModulus;
  }
  return hash;
}

/* The text of a str or bytes value in any of its forms (small, object, or the argument views
 * kTVMFFIRawStr / kTVMFFIByteArrayPtr, so a lookup needs no string object); `kind` is the
 * object index (65 or 66) that both forms hash and compare as. False for other values. */
inline bool MapStringView(const TVMFFIAny& v, int32_t* kind, const char** data, size_t* size) {
  const TVMFFIByteArray* bytes = nullptr;
  switch (v.type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      *kind = v.type_index == kTVMFFISmallStr ? kTVMFFIStr : kTVMFFIBytes;
      *data = v.v_bytes;
      *size = v.small_str_len;
      return true;
    case kTVMFFIRawStr:
      *kind = kTVMFFIStr;
      *data = v.v_c_str;
      *size = std::strlen(v.v_c_str);
      return true;
    case kTVMFFIStr:
    case kTVMFFIBytes:
      bytes = reinterpret_cast<const TVMFFIByteArray*>(reinterpret_cast<const char*>(v.v_obj) +
                                                       sizeof(TVMFFIObject));
      *kind = v.type_index;
      break;
    case kTVMFFIByteArrayPtr:
      bytes = static_cast<const TVMFFIByteArray*>(v.v_ptr);
      *kind = kTVMFFIBytes;
      break;
    default:
      return false;
  }
  *data = bytes->data;
  *size = bytes->size;
  return true;
}

/* A type's "__any_hash__" or "__any_equal__" attribute (None when unset). The column is asked
 * for once it exists and then kept: the runtime never moves a column. */
inline const TVMFFIAny* MapKeyHook(bool equal, int32_t type_index) {
  static std::atomic<const TVMFFITypeAttrColumn*> columns[2];
  const TVMFFITypeAttrColumn* column = columns[equal].load(std::memory_order_acquire);
  if (column == nullptr) {
    static const TVMFFIByteArray names[2] = {{"__any_hash__", 12}, {"__any_equal__", 13}};
    column = TVMFFIGetTypeAttrColumn(&names[equal]);
    if (column == nullptr) return nullptr;
    columns[equal].store(column, std::memory_order_release);
  }
  int64_t offset = int64_t(type_index) - column->begin_index;
  if (offset < 0 || offset >= column->size) return nullptr;
  const TVMFFIAny* hook = column->data + offset;
  return hook->type_index == kTVMFFINone ? nullptr : hook;
}

/* "TypeError: the __any_hash__ of type 'my.Key' returned a value of type index 3, expected
 * an int" */
inline int MapHookError(int32_t type_index, int32_t num_keys, const char* what, int32_t got) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(type_index);
  char message[256];
  std::snprintf(message, sizeof(message), "the %s of type '%.*s' %s %d, expected %s",
                num_keys == 1 ? "__any_hash__" : "__any_equal__", int(info->type_key.size),
                info->type_key.data, what, int(got), num_keys == 1 ? "an int" : "a bool");
  return MapRaise("TypeError", message);
}

/* Calls a hook with 1 or 2 keys: a C function (kTVMFFIOpaquePtr) that takes the keys by
 * address and returns the result or an Error, or a Function object. The result must have
 * type index `want` (int for a hash, bool for equality). */
inline int MapCallHook(const TVMFFIAny* hook, const TVMFFIAny* keys, int32_t num_keys, int32_t want,
                       int64_t* out) {
  TVMFFIAny result = MapNone();
  if (hook->type_index == kTVMFFIOpaquePtr) {
    if (num_keys == 1) {
      result = reinterpret_cast<TVMFFIAny (*)(const TVMFFIAny*)>(hook->v_ptr)(keys);
    } else {
      using Equal = TVMFFIAny (*)(const TVMFFIAny*, const TVMFFIAny*);
      result = reinterpret_cast<Equal>(hook->v_ptr)(keys, keys + 1);
    }
    if (result.type_index == kTVMFFIError) {
      TVMFFIErrorSetRaised(result.v_obj);  // the runtime keeps a reference of its own
      TVMFFIObjectDecRef(result.v_obj);
      return -1;
    }
  } else if (hook->type_index == kTVMFFIFunction) {
    const TVMFFIFunctionCell* cell = reinterpret_cast<const TVMFFIFunctionCell*>(
        reinterpret_cast<const char*>(hook->v_obj) + sizeof(TVMFFIObject));
    if (cell->safe_call(hook->v_obj, keys, num_keys, &result) != 0) return -1;
  } else {
    return MapHookError(keys->type_index, num_keys, "is neither a function pointer nor a Function",
                        hook->type_index);
  }
  if (result.type_index != want) {
    MapAnyDecRef(result);
    return MapHookError(keys->type_index, num_keys, "returned a value of type index",
                        result.type_index);
  }
  *out = result.v_int64;
  return 0;
}

/* The hash of a key, equal to apache-tvm-ffi's AnyHash: str and bytes by content (small and
 * object forms alike), a type with "__any_hash__" by that hook, anything else by its bits. */
inline int MapKeyHash(const TVMFFIAny* key, uint64_t* out) {
  int32_t kind;
  const char* data;
  size_t size;
  if (key->type_index == kTVMFFISmallStr || key->type_index == kTVMFFISmallBytes) {
    // all 8 payload bytes (zero after the text), as the object form pads its last word
    int32_t index = key->type_index == kTVMFFISmallStr ? kTVMFFIStr : kTVMFFIBytes;
    *out = MapHashCombine(index, MapHashBytes(key->v_bytes, 8));
  } else if (MapStringView(*key, &kind, &data, &size)) {
    *out = MapHashCombine(kind, MapHashBytes(data, size));
  } else if (key->type_index >= kTVMFFIStaticObjectBegin) {
    const TVMFFIAny* hook = MapKeyHook(false, key->type_index);
    int64_t custom = 0;
    if (hook != nullptr && MapCallHook(hook, key, 1, kTVMFFIInt, &custom) != 0) return -1;
    *out = MapHashCombine(key->type_index, hook ? uint64_t(custom) : key->v_uint64);
  } else {
    *out = MapHashCombine(key->type_index, key->v_uint64);
  }
  return 0;
}

/* Key equality, as apache-tvm-ffi's AnyEqual: identical bits; else str/bytes by content; else
 * two objects of one type with "__any_equal__" by that hook (called as hook(lhs, rhs)). */
inline int MapKeyEqual(const TVMFFIAny* lhs, const TVMFFIAny* rhs, bool* out) {
  *out = lhs->type_index == rhs->type_index && lhs->zero_padding == rhs->zero_padding &&
         lhs->v_uint64 == rhs->v_uint64;
  int32_t lkind, rkind;
  const char *ldata, *rdata;
  size_t lsize, rsize;
  if (*out) return 0;
  if (MapStringView(*lhs, &lkind, &ldata, &lsize)) {
    *out = MapStringView(*rhs, &rkind, &rdata, &rsize) && lkind == rkind && lsize == rsize &&
           (lsize == 0 || std::memcmp(ldata, rdata, lsize) == 0);
    return 0;
  }
  if (lhs->type_index != rhs->type_index || lhs->type_index < kTVMFFIStaticObjectBegin) return 0;
  const TVMFFIAny* hook = MapKeyHook(true, lhs->type_index);
  if (hook == nullptr) return 0;
  TVMFFIAny keys[2] = {*lhs, *rhs};
  int64_t equal = 0;
  if (MapCallHook(hook, keys, 2, kTVMFFIBool, &equal) != 0) return -1;
  *out = equal != 0;
  return 0;
}

/* ---- dense tables -------------------------------------------------------------------- */

/* The table for n entries: the smallest power of two above n, doubled unless that leaves
 * n at most half full. */
inline void MapTableSize(uint64_t n, uint64_t* slots, uint32_t* fib_shift) {
  uint32_t bits = 0;
  while ((n >> bits) != 0) ++bits;
  *slots = uint64_t(1) << bits;
  *fib_shift = 64 - bits;
  if (*slots < 2 * n) {
    *slots <<= 1;
    *fib_shift -= 1;
  }
}

/* Fresh empty storage for a table of `slots` slots (head fields only, no object header). */
inline int MapNewTable(uint64_t slots, uint32_t fib_shift, DenseMapHead* t) {
  uint64_t blocks = (slots + kMapBlockSlots - 1) / kMapBlockSlots;
  void* data = std::malloc(blocks * kMapBlockBytes);
  if (data == nullptr) return MapRaise("MemoryError", "cannot allocate a map's table");
  for (uint64_t b = 0; b < blocks; ++b) {
    std::memset(static_cast<uint8_t*>(data) + b * kMapBlockBytes, kMapSlotEmpty, kMapBlockSlots);
  }
  t->base.data = data;
  t->base.size = 0;
  t->base.slots = slots;
  t->base.data_deleter = MapFreeData;
  t->fib_shift = fib_shift;
  t->list_head = t->list_tail = kMapNoIndex;
  return 0;
}

inline void MapListUnlink(DenseMapHead* t, uint64_t slot) {
  MapItem* item = MapSlot(t, slot);
  (item->prev == kMapNoIndex ? t->list_head : MapSlot(t, item->prev)->next) = item->next;
  (item->next == kMapNoIndex ? t->list_tail : MapSlot(t, item->next)->prev) = item->prev;
}
inline void MapListPushBack(DenseMapHead* t, uint64_t slot) {
  MapItem* item = MapSlot(t, slot);
  item->prev = t->list_tail;
  item->next = kMapNoIndex;
  if (t->list_tail != kMapNoIndex) MapSlot(t, t->list_tail)->next = slot;
  if (t->list_head == kMapNoIndex) t->list_head = slot;
  t->list_tail = slot;
}
/* `to` takes `from`'s place in the insertion order. */
inline void MapListReplace(DenseMapHead* t, uint64_t from, uint64_t to) {
  MapItem* item = MapSlot(t, to);
  item->prev = MapSlot(t, from)->prev;
  item->next = MapSlot(t, from)->next;
  (item->prev == kMapNoIndex ? t->list_head : MapSlot(t, item->prev)->next) = to;
  (item->next == kMapNoIndex ? t->list_tail : MapSlot(t, item->next)->prev) = to;
}
inline void MapSetJump(const DenseMapHead* t, uint64_t slot, uint8_t code) {
  uint8_t* meta = MapMeta(t, slot);
  *meta = static_cast<uint8_t>((*meta & kMapSlotNotHead) | code);
}
inline void MapFill(const DenseMapHead* t, uint64_t slot, uint8_t meta, const TVMFFIAny& key) {
  *MapMeta(t, slot) = meta;
  MapSlot(t, slot)->key = key;
  MapSlot(t, slot)->value = MapNone();
}
/* The first empty slot a jump code reaches from `from`. */
inline bool MapFindEmpty(const DenseMapHead* t, uint64_t from, uint8_t* code, uint64_t* slot) {
  for (uint8_t c = 1; c < kMapNumJumps; ++c) {
    uint64_t candidate = (from + MapJumpDistance(c)) % t->base.slots;
    if (*MapMeta(t, candidate) == kMapSlotEmpty) {
      *code = c;
      *slot = candidate;
      return true;
    }
  }
  return false;
}
/* The slot whose chain link points at `slot` (which is not a chain head). */
inline int MapChainPrev(const DenseMapHead* t, uint64_t slot, uint64_t* prev) {
  uint64_t hash;
  if (MapKeyHash(&MapSlot(t, slot)->key, &hash) != 0) return -1;
  uint64_t at = MapChainStart(t, hash), next;
  while ((next = MapChainNext(t, at, *MapMeta(t, at))) != slot) at = next;
  *prev = at;
  return 0;
}
inline bool MapTableFull(const DenseMapHead* t) {
  return double(t->base.size + 1) > double(t->base.slots) * kMapMaxLoadFactor;
}

inline int MapDenseFind(const DenseMapHead* t, const TVMFFIAny* key, uint64_t hash,
                        uint64_t* found) {
  *found = kMapNoIndex;
  if (t->base.size == 0) return 0;
  uint64_t slot = MapChainStart(t, hash);
  if (*MapMeta(t, slot) & kMapSlotNotHead) return 0;  // no chain starts here
  for (; slot != kMapNoIndex; slot = MapChainNext(t, slot, *MapMeta(t, slot))) {
    bool equal;
    if (MapKeyEqual(key, &MapSlot(t, slot)->key, &equal) != 0) return -1;
    if (equal) {
      *found = slot;
      return 0;
    }
  }
  return 0;
}

/* Frees the chain start `target`, held by another key's chain, by moving that chain's part
 * from `target` on to empty slots after its predecessor; then starts `key`'s chain there.
 * *slot stays kMapNoIndex when no empty slot is in reach (the table must grow). */
inline int MapTakeChainStart(DenseMapHead* t, uint64_t target, const TVMFFIAny& key,
                             uint64_t* slot) {
  uint64_t writer, reader = target, moved;
  if (MapChainPrev(t, target, &writer) != 0) return -1;
  uint8_t code;
  do {
    if (!MapFindEmpty(t, writer, &code, &moved)) return 0;
    *MapMeta(t, moved) = kMapSlotNotHead;
    MapSlot(t, moved)->key = MapSlot(t, reader)->key;
    MapSlot(t, moved)->value = MapSlot(t, reader)->value;
    MapListReplace(t, reader, moved);
    uint8_t meta = *MapMeta(t, reader);
    *MapMeta(t, reader) = reader == target ? kMapSlotReserved : kMapSlotEmpty;
    MapSetJump(t, writer, code);
    writer = moved;
    reader = MapChainNext(t, reader, meta);
  } while (reader != kMapNoIndex);
  MapFill(t, target, 0, key);
  t->base.size += 1;
  *slot = target;
  return 0;
}

/* Finds or makes `key`'s slot. A new slot holds the key's bits and None; an existing one is
 * taken out of the insertion order (the caller appends it again). *slot = kMapNoIndex: the
 * table must grow first. */
inline int MapDensePlace(DenseMapHead* t, const TVMFFIAny& key, uint64_t hash, uint64_t* slot,
                         bool* existed) {
  *slot = kMapNoIndex;
  *existed = false;
  if (t->base.slots == 0) return 0;
  uint64_t at = MapChainStart(t, hash);
  uint8_t meta = *MapMeta(t, at);
  if (meta == kMapSlotEmpty) {
    MapFill(t, at, 0, key);
    t->base.size += 1;
    *slot = at;
    return 0;
  }
  if (meta & kMapSlotNotHead) return MapTableFull(t) ? 0 : MapTakeChainStart(t, at, key, slot);
  for (uint64_t next = at; next != kMapNoIndex; next = MapChainNext(t, at, *MapMeta(t, at))) {
    at = next;
    bool equal;
    if (MapKeyEqual(&key, &MapSlot(t, at)->key, &equal) != 0) return -1;
    if (equal) {
      MapListUnlink(t, at);
      *slot = at;
      *existed = true;
      return 0;
    }
  }
  uint8_t code;
  uint64_t empty;
  if (MapTableFull(t) || !MapFindEmpty(t, at, &code, &empty)) return 0;
  MapFill(t, empty, kMapSlotNotHead, key);
  MapSetJump(t, at, code);
  t->base.size += 1;
  *slot = empty;
  return 0;
}

/* Moves the table `from` (head fields only) into `t`, whose object header stays untouched:
 * other threads may hold references to a Dict while it grows. */
inline void MapAdoptTable(DenseMapHead* t, const DenseMapHead& from) {
  t->base.data = from.base.data;
  t->base.size = from.base.size;
  t->base.slots = from.base.slots;
  t->base.data_deleter = from.base.data_deleter;
  t->fib_shift = from.fib_shift;
  t->list_head = from.list_head;
  t->list_tail = from.list_tail;
}

inline int MapDenseInsert(DenseMapHead* t, const TVMFFIAny& key, const TVMFFIAny& value,
                          bool owned);
/* Frees a table under construction whose entries are bit copies owned elsewhere; returns -1. */
inline int MapDropTable(DenseMapHead* t) {
  t->base.data_deleter(t->base.data);
  return -1;
}
/* Inserts or assigns key -> value (`hash` is the key's), growing the table as often as needed.
 * `owned`: the caller hands over its references to key and value; otherwise they are copied. */
inline int MapDenseInsertHashed(DenseMapHead* t, const TVMFFIAny& key, uint64_t hash,
                                const TVMFFIAny& value, bool owned) {
  uint64_t slot;
  bool existed;
  if (MapDensePlace(t, key, hash, &slot, &existed) != 0) return -1;
  if (slot != kMapNoIndex) {
    MapItem* item = MapSlot(t, slot);
    if (!owned) {
      MapAnyIncRef(value);
      if (!existed) MapAnyIncRef(key);
    } else if (existed) {
      MapAnyDecRef(key);  // the stored key stays
    }
    MapAnyDecRef(item->value);
    item->value = value;
    MapListPushBack(t, slot);
    return 0;
  }
  // Rebuild twice as large, moving the entries in insertion order, then insert. Until it is
  // done the new table holds only bit copies, so a failing hook leaves `t` as it was.
  DenseMapHead bigger;
  if (MapNewTable(t->base.slots * 2, t->fib_shift - 1, &bigger) != 0) return -1;
  for (uint64_t at = t->list_head; at != kMapNoIndex;) {
    MapItem* item = MapSlot(t, at);
    at = item->next;
    if (MapDenseInsert(&bigger, item->key, item->value, true) != 0) return MapDropTable(&bigger);
  }
  if (MapDenseInsertHashed(&bigger, key, hash, value, owned) != 0) return MapDropTable(&bigger);
  if (t->base.data_deleter != nullptr) t->base.data_deleter(t->base.data);
  MapAdoptTable(t, bigger);
  return 0;
}

inline int MapDenseInsert(DenseMapHead* t, const TVMFFIAny& key, const TVMFFIAny& value,
                          bool owned) {
  uint64_t hash;
  if (MapKeyHash(&key, &hash) != 0) return -1;
  return MapDenseInsertHashed(t, key, hash, value, owned);
}

/* ---- map objects --------------------------------------------------------------------- */

inline void MapClear(TVMFFIObject* map);
inline void MapDeleter(void* self, int flags) {
  MapHead* m = static_cast<MapHead*>(self);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    MapClear(&m->header);
    if (m->data_deleter != nullptr) m->data_deleter(m->data);
    m->data = nullptr;
    m->data_deleter = nullptr;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) std::free(self);
}

inline MapHead* MapAllocObject(int32_t type_index, size_t bytes) {
  MapHead* m = static_cast<MapHead*>(std::malloc(bytes));
  if (m == nullptr) return nullptr;
  m->header.combined_ref_count = kCombinedBothOne;
  m->header.type_index = type_index;
  m->header.__padding = 0;
  m->header.deleter = MapDeleter;
  m->size = 0;
  m->data_deleter = nullptr;
  return m;
}

inline int MapNewSmall(int32_t type_index, uint64_t capacity, MapHead** out) {
  capacity = capacity < kMapSmallMinCapacity ? kMapSmallMinCapacity : capacity;
  MapHead* m = MapAllocObject(type_index, sizeof(MapHead) + capacity * sizeof(MapKV));
  if (m == nullptr) return MapRaise("MemoryError", "cannot allocate a map");
  m->data = m + 1;
  m->slots = kMapSmallTag | capacity;
  *out = m;
  return 0;
}

/* An empty map (type_index kTVMFFIMap or kTVMFFIDict) sized for n entries as apache-tvm-ffi
 * sizes one built from n pairs: small with capacity max(n, 2) below 4, else dense. */
inline int MapNew(int32_t type_index, uint64_t n, TVMFFIObject** out) {
  MapHead* m;
  if (n < kMapSmallMaxCapacity) {
    if (MapNewSmall(type_index, n, &m) != 0) return -1;
  } else {
    m = MapAllocObject(type_index, sizeof(DenseMapHead));
    if (m == nullptr) return MapRaise("MemoryError", "cannot allocate a map");
    uint64_t slots;
    uint32_t fib_shift;
    MapTableSize(n, &slots, &fib_shift);
    if (MapNewTable(slots, fib_shift, MapDense(m)) != 0) {
      std::free(m);
      return -1;
    }
  }
  *out = &m->header;
  return 0;
}

inline uint64_t MapSize(const TVMFFIObject* map) {
  return reinterpret_cast<const MapHead*>(map)->size;
}

/* Positions in insertion order: a pair index (small) or a slot (dense). */
inline uint64_t MapIterEnd(const TVMFFIObject* map) {
  const MapHead* m = reinterpret_cast<const MapHead*>(map);
  return MapIsSmall(m) ? m->size : kMapNoIndex;
}
inline uint64_t MapIterBegin(const TVMFFIObject* map) {
  const MapHead* m = reinterpret_cast<const MapHead*>(map);
  return MapIsSmall(m) ? 0 : (m->size == 0 ? kMapNoIndex : MapDense(m)->list_head);
}
inline uint64_t MapIterNext(const TVMFFIObject* map, uint64_t pos) {
  const MapHead* m = reinterpret_cast<const MapHead*>(map);
  if (MapIsSmall(m)) return pos + 1 < m->size ? pos + 1 : m->size;
  return pos == kMapNoIndex ? pos : MapSlot(MapDense(m), pos)->next;
}
/* The previous position; from the end, the last entry. */
inline uint64_t MapIterPrev(const TVMFFIObject* map, uint64_t pos) {
  const MapHead* m = reinterpret_cast<const MapHead*>(map);
  if (MapIsSmall(m)) return pos > 0 ? pos - 1 : m->size;
  return pos == kMapNoIndex ? MapDense(m)->list_tail : MapSlot(MapDense(m), pos)->prev;
}
inline MapKV* MapIterItem(const TVMFFIObject* map, uint64_t pos) {
  const MapHead* m = reinterpret_cast<const MapHead*>(map);
  if (MapIsSmall(m)) return MapSmallData(m) + pos;
  return reinterpret_cast<MapKV*>(MapSlot(MapDense(m), pos));
}

/* The position of `key`, MapIterEnd(map) when absent. */
inline int MapFind(const TVMFFIObject* map, const TVMFFIAny* key, uint64_t* pos) {
  const MapHead* m = reinterpret_cast<const MapHead*>(map);
  if (MapIsSmall(m)) {
    const MapKV* kv = MapSmallData(m);
    for (*pos = 0; *pos < m->size; ++*pos) {
      bool equal;
      if (MapKeyEqual(&kv[*pos].key, key, &equal) != 0) return -1;
      if (equal) return 0;
    }
    return 0;
  }
  uint64_t hash;
  if (MapKeyHash(key, &hash) != 0) return -1;
  return MapDenseFind(MapDense(m), key, hash, pos);
}

/* The value stored for `key`, nullptr when absent. */
inline int MapLookup(const TVMFFIObject* map, const TVMFFIAny* key, TVMFFIAny** value) {
  uint64_t pos;
  if (MapFind(map, key, &pos) != 0) return -1;
  *value = pos == MapIterEnd(map) ? nullptr : &MapIterItem(map, pos)->value;
  return 0;
}

/* Destroys every entry; the map keeps its storage. */
inline void MapClear(TVMFFIObject* map) {
  MapHead* m = reinterpret_cast<MapHead*>(map);
  if (MapIsSmall(m)) {
    for (uint64_t i = 0; i < m->size; ++i) {
      MapAnyDecRef(MapSmallData(m)[i].key);
      MapAnyDecRef(MapSmallData(m)[i].value);
    }
  } else if (m->data != nullptr) {
    DenseMapHead* t = MapDense(m);
    for (uint64_t slot = 0; slot < m->slots; ++slot) {
      uint8_t* meta = MapMeta(t, slot);
      if (*meta == kMapSlotEmpty || *meta == kMapSlotReserved) continue;
      *meta = kMapSlotEmpty;
      MapAnyDecRef(MapSlot(t, slot)->key);
      MapAnyDecRef(MapSlot(t, slot)->value);
    }
    t->list_head = t->list_tail = kMapNoIndex;
  }
  m->size = 0;
}

/* A copy of `map` (either layout) as a new object of type_index: a small map gets capacity
 * max(size, 2), a dense one the same table with the same slots, so order is kept. */
inline int MapCopy(const TVMFFIObject* map, int32_t type_index, TVMFFIObject** out) {
  const MapHead* from = reinterpret_cast<const MapHead*>(map);
  MapHead* m;
  if (MapIsSmall(from)) {
    if (MapNewSmall(type_index, from->size, &m) != 0) return -1;
    for (uint64_t i = 0; i < from->size; ++i) {
      MapSmallData(m)[i] = MapSmallData(from)[i];
      MapAnyIncRef(MapSmallData(m)[i].key);
      MapAnyIncRef(MapSmallData(m)[i].value);
    }
  } else {
    m = MapAllocObject(type_index, sizeof(DenseMapHead));
    if (m == nullptr) return MapRaise("MemoryError", "cannot allocate a map");
    const DenseMapHead* src = MapDense(from);
    DenseMapHead* dst = MapDense(m);
    if (MapNewTable(from->slots, src->fib_shift, dst) != 0) {
      std::free(m);
      return -1;
    }
    for (uint64_t slot = 0; slot < from->slots; ++slot) {
      uint8_t meta = *MapMeta(src, slot);
      *MapMeta(dst, slot) = meta;
      if (meta == kMapSlotEmpty) continue;
      *MapSlot(dst, slot) = *MapSlot(src, slot);
      MapAnyIncRef(MapSlot(dst, slot)->key);
      MapAnyIncRef(MapSlot(dst, slot)->value);
    }
    dst->list_head = src->list_head;
    dst->list_tail = src->list_tail;
  }
  m->size = from->size;
  *out = &m->header;
  return 0;
}

/* A Map shared with others is copied before a change (the caller's reference moves to the
 * copy); a Dict is changed where it is. */
inline bool MapIsUnique(const TVMFFIObject* obj) {
#ifdef _MSC_VER
  return *reinterpret_cast<const volatile uint64_t*>(&obj->combined_ref_count) == kCombinedBothOne;
#else
  return __atomic_load_n(&obj->combined_ref_count, __ATOMIC_ACQUIRE) == kCombinedBothOne;
#endif
}
inline int MapPrepareWrite(TVMFFIObject** map) {
  TVMFFIObject* obj = *map;
  if (obj->type_index != kTVMFFIMap || MapIsUnique(obj)) return 0;
  if (MapCopy(obj, obj->type_index, map) != 0) return -1;
  TVMFFIObjectDecRef(obj);
  return 0;
}

/* Sets key -> value (both borrowed). On a Map, *map may be replaced by a copy (see
 * MapPrepareWrite); a Map or Dict never moves when it grows. As in apache-tvm-ffi, assigning
 * an existing key keeps its place in a small map that has room, and moves it last otherwise. */
inline int MapSet(TVMFFIObject** map, const TVMFFIAny* key, const TVMFFIAny* value) {
  if (MapPrepareWrite(map) != 0) return -1;
  MapHead* m = reinterpret_cast<MapHead*>(*map);
  if (!MapIsSmall(m)) return MapDenseInsert(MapDense(m), *key, *value, false);
  uint64_t capacity = MapSmallCapacity(m), pos;
  if (MapFind(*map, key, &pos) != 0) return -1;
  MapKV* kv = MapSmallData(m);
  bool full = m->size == capacity;
  if (pos < m->size && !(full && capacity >= kMapSmallMaxCapacity)) {
    MapAnyIncRef(*value);
    MapAnyDecRef(kv[pos].value);
    kv[pos].value = *value;
    return 0;
  }
  if (full && capacity < kMapSmallMaxCapacity) {  // a bigger array for the pairs
    uint64_t grown = capacity * 2 < kMapSmallMaxCapacity ? capacity * 2 : kMapSmallMaxCapacity;
    grown = grown < kMapSmallMinCapacity ? kMapSmallMinCapacity : grown;
    MapKV* data = static_cast<MapKV*>(std::malloc(grown * sizeof(MapKV)));
    if (data == nullptr) return MapRaise("MemoryError", "cannot grow a map");
    if (m->size != 0) std::memcpy(data, kv, m->size * sizeof(MapKV));
    if (m->data_deleter != nullptr) m->data_deleter(m->data);
    m->data = kv = data;
    m->data_deleter = MapFreeData;
    m->slots = kMapSmallTag | grown;
  } else if (full) {  // the 4 pairs and the new one move to a dense table in this object
    // The first hashing of these keys: a failing __any_hash__ leaves the small map as it was.
    DenseMapHead table;
    uint64_t slots;
    uint32_t fib_shift;
    MapTableSize(m->size, &slots, &fib_shift);
    if (MapNewTable(slots, fib_shift, &table) != 0) return -1;
    for (uint64_t i = 0; i < m->size; ++i) {
      if (MapDenseInsert(&table, kv[i].key, kv[i].value, true) != 0) return MapDropTable(&table);
    }
    if (MapDenseInsert(&table, *key, *value, false) != 0) return MapDropTable(&table);
    if (m->data_deleter != nullptr) m->data_deleter(m->data);
    MapAdoptTable(MapDense(m), table);
    return 0;
  }
  MapAnyIncRef(*key);
  MapAnyIncRef(*value);
  kv[m->size].key = *key;
  kv[m->size].value = *value;
  m->size += 1;
  return 0;
}

/* Removes the entry at `pos` (a position from MapFind or iteration). */
inline int MapEraseAt(TVMFFIObject* map, uint64_t pos) {
  MapHead* m = reinterpret_cast<MapHead*>(map);
  if (MapIsSmall(m)) {
    MapKV* kv = MapSmallData(m);
    MapAnyDecRef(kv[pos].key);
    MapAnyDecRef(kv[pos].value);
    std::memmove(kv + pos, kv + pos + 1, (m->size - pos - 1) * sizeof(MapKV));
    m->size -= 1;
    return 0;
  }
  DenseMapHead* t = MapDense(m);
  uint8_t meta = *MapMeta(t, pos);
  MapItem* item = MapSlot(t, pos);
  if ((meta & kMapJumpMask) == 0) {  // the chain's last: cut it off its predecessor
    uint64_t prev;
    if ((meta & kMapSlotNotHead) && MapChainPrev(t, pos, &prev) != 0) return -1;
    if (meta & kMapSlotNotHead) MapSetJump(t, prev, 0);
    MapListUnlink(t, pos);
    MapAnyDecRef(item->key);
    MapAnyDecRef(item->value);
    *MapMeta(t, pos) = kMapSlotEmpty;
  } else {  // the chain's last entry moves here, keeping its place in insertion order
    uint64_t last = pos, before = pos;
    for (uint64_t next; (next = MapChainNext(t, last, *MapMeta(t, last))) != kMapNoIndex;) {
      before = last;
      last = next;
    }
    MapListUnlink(t, pos);
    MapAnyDecRef(item->key);
    MapAnyDecRef(item->value);
    item->key = MapSlot(t, last)->key;
    item->value = MapSlot(t, last)->value;
    MapListReplace(t, last, pos);
    *MapMeta(t, last) = kMapSlotEmpty;
    MapSetJump(t, before, 0);
  }
  m->size -= 1;
  return 0;
}

/* Removes `key` if present (*erased says whether it was). On a Map, *map may be replaced by a
 * copy first, as in MapSet. */
inline int MapErase(TVMFFIObject** map, const TVMFFIAny* key, bool* erased) {
  uint64_t pos;
  if (MapPrepareWrite(map) != 0 || MapFind(*map, key, &pos) != 0) return -1;
  *erased = pos != MapIterEnd(*map);
  return *erased ? MapEraseAt(*map, pos) : 0;
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#endif  // TVM_FFI_DETAIL_MAP_LAYOUT_H_
