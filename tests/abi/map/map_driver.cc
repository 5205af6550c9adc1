// Checks staging/include/tvm/ffi/detail/map_layout.h against apache-tvm-ffi's compiled map code
// (apache_maps.cc, built with apache's headers): maps built by either side are read, iterated,
// changed and hashed by the other with identical results, down to the slot of every key.
// Prints "<n> passed, <m> failed"; argv[1] is the seed of the randomized differential test.
#include <tvm/ffi/detail/map_layout.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
TVMFFIObject* ap_new(int dict);
TVMFFIObject* ap_range(int dict, const TVMFFIAny* keys, const TVMFFIAny* values, uint64_t n);
void ap_set(TVMFFIObject** map, const TVMFFIAny* key, const TVMFFIAny* value);
void ap_erase(TVMFFIObject** map, const TVMFFIAny* key);
int ap_find(TVMFFIObject* map, const TVMFFIAny* key, TVMFFIAny* value);
uint64_t ap_count(TVMFFIObject* map, const TVMFFIAny* key);
uint64_t ap_size(TVMFFIObject* map);
uint64_t ap_items(TVMFFIObject* map, TVMFFIAny* keys, TVMFFIAny* values, uint64_t max);
uint64_t ap_hash(const TVMFFIAny* key);
int ap_equal(const TVMFFIAny* lhs, const TVMFFIAny* rhs);
TVMFFIAny ap_string(const char* data, size_t size, int bytes);
TVMFFIAny ap_object(int64_t n);
TVMFFIAny ap_bigint(double value);
void ap_release(TVMFFIAny* value);
uint64_t ap_jump(int code);
}

namespace md = tvm::ffi::details;

// ---- harness ---------------------------------------------------------------------------------

static int g_failed_checks = 0;
static std::string g_context;
#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      if (g_failed_checks++ < 20) {                                                            \
        std::printf("%s:%d: FAILED: %s [%s]\n", __FILE__, __LINE__, #cond, g_context.c_str()); \
      }                                                                                        \
    }                                                                                          \
  } while (0)

struct Case {
  const char* name;
  void (*body)();
};
static std::vector<Case>& Cases() {
  static std::vector<Case> cases;
  return cases;
}
struct Register {
  Register(const char* name, void (*body)()) { Cases().push_back({name, body}); }
};
#define TEST(name)                                     \
  static void test_##name();                           \
  static Register register_##name(#name, test_##name); \
  static void test_##name()

// ---- values ----------------------------------------------------------------------------------

static TVMFFIAny Int(int64_t v) {
  TVMFFIAny a = md::MapNone();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}
static TVMFFIAny Str(const std::string& s, int bytes = 0) {
  return ap_string(s.data(), s.size(), bytes);
}
static bool SameBits(const TVMFFIAny& a, const TVMFFIAny& b) {
  return std::memcmp(&a, &b, 16) == 0;
}

// Keys of one family (ints, short strings, long strings, objects, or all mixed), owned here.
struct KeySet {
  std::vector<TVMFFIAny> keys;
  ~KeySet() {
    for (auto& k : keys) ap_release(&k);
  }
};
static TVMFFIAny MakeKey(int family, int64_t i) {
  switch (family == 4 ? i % 4 : family) {
    case 0:
      return Int(i * 1000003 - 500);
    case 1:
      return Str("k" + std::to_string(i));  // at most 7 bytes below 10^6: a small string
    case 2:
      return Str("a-long-key-number-" + std::to_string(i) + std::string(i % 9, 'x'));
    default:
      return ap_object(i);
  }
}
static const char* kFamilies[] = {"int", "short str", "long str", "object", "mixed"};

// ---- comparing two maps ----------------------------------------------------------------------

static std::vector<md::MapKV> OurItems(const TVMFFIObject* map) {
  std::vector<md::MapKV> items;
  for (uint64_t p = md::MapIterBegin(map); p != md::MapIterEnd(map); p = md::MapIterNext(map, p)) {
    items.push_back(*md::MapIterItem(map, p));
  }
  return items;
}
static std::vector<md::MapKV> ApacheItems(TVMFFIObject* map) {
  uint64_t n = ap_size(map);
  std::vector<TVMFFIAny> keys(n + 1), values(n + 1);
  CHECK(ap_items(map, keys.data(), values.data(), n + 1) == n);
  std::vector<md::MapKV> items(n);
  for (uint64_t i = 0; i < n; ++i) items[i] = {keys[i], values[i]};
  return items;
}
static bool SameItems(const std::vector<md::MapKV>& a, const std::vector<md::MapKV>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameBits(a[i].key, b[i].key) || !SameBits(a[i].value, b[i].value)) return false;
  }
  return true;
}

// Both maps use the same layout, table size and slot for every key.
static bool SameLayout(const TVMFFIObject* a, const TVMFFIObject* b) {
  auto ha = reinterpret_cast<const md::MapHead*>(a);
  auto hb = reinterpret_cast<const md::MapHead*>(b);
  if (ha->size != hb->size || md::MapIsSmall(ha) != md::MapIsSmall(hb)) return false;
  if (md::MapIsSmall(ha)) return true;  // capacities may differ: growth happens in place here
  auto ta = md::MapDense(ha), tb = md::MapDense(hb);
  if (ha->slots != hb->slots || ta->fib_shift != tb->fib_shift) return false;
  for (uint64_t s = 0; s < ha->slots; ++s) {
    uint8_t meta = *md::MapMeta(ta, s);
    if (meta != *md::MapMeta(tb, s)) return false;
    if (meta != md::kMapSlotEmpty && !SameBits(md::MapSlot(ta, s)->key, md::MapSlot(tb, s)->key)) {
      return false;
    }
  }
  return ta->list_head == tb->list_head && ta->list_tail == tb->list_tail;
}

// Our reader on `map` agrees with apache's on every key of `probe`.
static void CheckLookups(TVMFFIObject* map, const std::vector<TVMFFIAny>& probe) {
  for (const auto& key : probe) {
    TVMFFIAny* ours = nullptr;
    TVMFFIAny theirs;
    CHECK(md::MapLookup(map, &key, &ours) == 0);
    int found = ap_find(map, &key, &theirs);
    CHECK((ours != nullptr) == (found == 1));
    CHECK(ap_count(map, &key) == uint64_t(found));
    if (ours != nullptr && found) CHECK(SameBits(*ours, theirs));
  }
}

static void CheckSame(TVMFFIObject* ours, TVMFFIObject* theirs,
                      const std::vector<TVMFFIAny>& probe) {
  CHECK(md::MapSize(ours) == ap_size(theirs));
  CHECK(SameItems(OurItems(ours), ApacheItems(ours)));
  CHECK(SameItems(OurItems(theirs), ApacheItems(theirs)));
  CHECK(SameItems(OurItems(ours), OurItems(theirs)));
  CHECK(SameLayout(ours, theirs));
  CheckLookups(ours, probe);
  CheckLookups(theirs, probe);
}

static void OurSet(TVMFFIObject** map, const TVMFFIAny& key, const TVMFFIAny& value) {
  CHECK(md::MapSet(map, &key, &value) == 0);
}
static void OurErase(TVMFFIObject** map, const TVMFFIAny& key) {
  bool erased;
  CHECK(md::MapErase(map, &key, &erased) == 0);
}
static TVMFFIObject* OurNew(int dict, uint64_t n = 0) {
  TVMFFIObject* map = nullptr;
  CHECK(md::MapNew(dict ? kTVMFFIDict : kTVMFFIMap, n, &map) == 0);
  return map;
}

// ---- tests -----------------------------------------------------------------------------------

// Maps of 1 to 1000 entries built by both sides, one key at a time (every growth step) and from a
// range, then with every third key erased: same entries, order, lookups and slots.
TEST(maps_built_by_either_side_agree) {
  for (int dict = 0; dict < 2; ++dict) {
    for (int family = 0; family < 5; ++family) {
      for (uint64_t n : {1, 2, 3, 4, 5, 8, 17, 1000}) {
        g_context = std::string(dict ? "Dict" : "Map") + " of " + std::to_string(n) + " " +
                    kFamilies[family] + " keys";
        KeySet ks;
        for (uint64_t i = 0; i < n + 50; ++i) ks.keys.push_back(MakeKey(family, int64_t(i)));
        std::vector<TVMFFIAny> values;
        for (uint64_t i = 0; i < n; ++i) values.push_back(Int(int64_t(i) * 7 + 1));
        TVMFFIObject *ours = OurNew(dict), *theirs = ap_new(dict);
        for (uint64_t i = 0; i < n; ++i) {
          OurSet(&ours, ks.keys[i], values[i]);
          ap_set(&theirs, &ks.keys[i], &values[i]);
        }
        CheckSame(ours, theirs, ks.keys);
        TVMFFIObject *our_range = OurNew(dict, n),
                     *their_range = ap_range(dict, ks.keys.data(), values.data(), n);
        for (uint64_t i = 0; i < n; ++i) OurSet(&our_range, ks.keys[i], values[i]);
        CheckSame(our_range, their_range, ks.keys);
        // a map made for n entries has apache's capacity for n pairs
        CHECK(reinterpret_cast<md::MapHead*>(our_range)->slots ==
              reinterpret_cast<md::MapHead*>(their_range)->slots);
        for (uint64_t i = 0; i < n; i += 3) {
          OurErase(&ours, ks.keys[i]);
          ap_erase(&theirs, &ks.keys[i]);
        }
        CheckSame(ours, theirs, ks.keys);
        for (TVMFFIObject* m : {ours, theirs, our_range, their_range}) TVMFFIObjectDecRef(m);
      }
    }
  }
}

// The 126 chain distances are apache's, and so is the table a map made for n entries gets
// (small up to 3, else the table apache's range constructor makes).
TEST(jump_distances_and_table_sizes) {
  for (int code = 0; code < md::kMapNumJumps; ++code) {
    g_context = "jump code " + std::to_string(code);
    CHECK(md::MapJumpDistance(uint8_t(code)) == ap_jump(code));
  }
  std::vector<TVMFFIAny> ints;
  for (uint64_t n = 0; n <= 70000; n = n < 300 ? n + 1 : n * 2 - 1 + n % 2) {
    while (ints.size() < n) ints.push_back(Int(int64_t(ints.size())));
    g_context = std::to_string(n) + " entries";
    TVMFFIObject *ours = OurNew(0, n), *theirs = ap_range(0, ints.data(), ints.data(), n);
    auto a = reinterpret_cast<md::MapHead*>(ours), b = reinterpret_cast<md::MapHead*>(theirs);
    CHECK(a->slots == b->slots);
    CHECK(md::MapIsSmall(a) || md::MapDense(a)->fib_shift == md::MapDense(b)->fib_shift);
    TVMFFIObjectDecRef(ours);
    TVMFFIObjectDecRef(theirs);
  }
}

// Reverse iteration visits the entries of an apache-built map in reverse insertion order.
TEST(reverse_iteration) {
  for (uint64_t n : {3, 200}) {
    TVMFFIObject* theirs = ap_new(0);
    for (uint64_t i = 0; i < n; ++i) {
      TVMFFIAny k = Int(int64_t(i) * 31), v = Int(int64_t(i));
      ap_set(&theirs, &k, &v);
    }
    std::vector<md::MapKV> forward = OurItems(theirs), backward;
    uint64_t end = md::MapIterEnd(theirs);
    for (uint64_t p = md::MapIterPrev(theirs, end); p != end; p = md::MapIterPrev(theirs, p)) {
      backward.insert(backward.begin(), *md::MapIterItem(theirs, p));
      if (backward.size() > n) break;
    }
    CHECK(SameItems(forward, backward));
    TVMFFIObjectDecRef(theirs);
  }
}

// Key hashes equal apache's AnyHash; key equality equals its AnyEqual.
TEST(key_hash_and_equality_match_apache) {
  std::vector<TVMFFIAny> keys = {Int(0), Int(1), Int(-1), Int(int64_t(1) << 40), md::MapNone()};
  TVMFFIAny b = Int(1), f = Int(0);
  b.type_index = kTVMFFIBool;
  f.type_index = kTVMFFIFloat;
  f.v_float64 = 2.5;
  keys.push_back(b);
  keys.push_back(f);
  std::string text = "The quick brown fox jumps over the lazy dog, twice over";
  for (size_t len = 0; len <= 41; ++len) {
    keys.push_back(Str(text.substr(0, len)));
    keys.push_back(Str(text.substr(len % 5, len), 1));
  }
  keys.push_back(Str(std::string("nul\0inside", 10)));
  keys.push_back(ap_object(3));
  keys.push_back(ap_bigint(1e30));
  keys.push_back(ap_bigint(-3e25));
  for (const auto& k : keys) {
    g_context = "key of type index " + std::to_string(k.type_index);
    uint64_t hash = 0;
    CHECK(md::MapKeyHash(&k, &hash) == 0);
    CHECK(hash == ap_hash(&k));
    for (const auto& other : keys) {
      bool equal = false;
      CHECK(md::MapKeyEqual(&k, &other, &equal) == 0);
      CHECK(equal == (ap_equal(&k, &other) != 0));
    }
  }
  // The argument views hash and compare as the strings they show.
  for (size_t len : {0, 5, 7, 8, 30}) {
    std::string s = text.substr(0, len);
    TVMFFIAny str = Str(s), bytes = Str(s, 1), raw = md::MapNone(), view = md::MapNone();
    TVMFFIByteArray array{s.data(), s.size()};
    raw.type_index = kTVMFFIRawStr;
    raw.v_c_str = s.c_str();
    view.type_index = kTVMFFIByteArrayPtr;
    view.v_ptr = &array;
    uint64_t h1, h2;
    bool equal;
    CHECK(md::MapKeyHash(&raw, &h1) == 0 && h1 == ap_hash(&str));
    CHECK(md::MapKeyHash(&view, &h2) == 0 && h2 == ap_hash(&bytes));
    CHECK(md::MapKeyEqual(&raw, &str, &equal) == 0 && equal);
    CHECK(md::MapKeyEqual(&view, &bytes, &equal) == 0 && equal);
    CHECK(md::MapKeyEqual(&raw, &bytes, &equal) == 0 && !equal);
    ap_release(&str);
    ap_release(&bytes);
  }
  for (auto& k : keys) ap_release(&k);
}

// BigInt keys (a type with __any_hash__/__any_equal__ hooks): an equal number held by another
// object finds the entry on both sides.
TEST(keys_with_type_hooks) {
  TVMFFIAny k1 = ap_bigint(1e30), k2 = ap_bigint(1e30), k3 = ap_bigint(2e30), v = Int(5);
  CHECK(k1.type_index == kTVMFFIBigInt && k1.v_obj != k2.v_obj);
  for (int dict = 0; dict < 2; ++dict) {
    TVMFFIObject *ours = OurNew(dict), *theirs = ap_new(dict);
    OurSet(&ours, k1, v);
    ap_set(&theirs, &k1, &v);
    CheckSame(ours, theirs, {k1, k2, k3});
    TVMFFIAny* found = nullptr;
    CHECK(md::MapLookup(theirs, &k2, &found) == 0 && found != nullptr);
    CHECK(ap_count(ours, &k2) == 1 && ap_count(ours, &k3) == 0);
    TVMFFIObjectDecRef(ours);
    TVMFFIObjectDecRef(theirs);
  }
  for (TVMFFIAny* k : {&k1, &k2, &k3}) ap_release(k);
}

// A Dict keeps its address through every growth step on our side; a shared Map is copied before
// a change and the other holder's map is left as it was.
TEST(dict_grows_in_place_and_shared_map_is_copied) {
  TVMFFIObject* dict = OurNew(1);
  TVMFFIObject* before = dict;
  for (int64_t i = 0; i < 300; ++i) {
    TVMFFIAny k = Int(i);
    OurSet(&dict, k, k);
    CHECK(dict == before);
  }
  TVMFFIObjectDecRef(dict);
  for (uint64_t n : {3, 100}) {
    TVMFFIObject* map = OurNew(0);
    for (uint64_t i = 0; i < n; ++i) OurSet(&map, Int(int64_t(i)), Int(int64_t(i)));
    TVMFFIObject* shared = map;
    TVMFFIObjectIncRef(shared);
    OurSet(&map, Int(-1), Int(-1));
    CHECK(map != shared && md::MapSize(shared) == n && md::MapSize(map) == n + 1);
    OurErase(&shared, Int(0));  // unique again: changed in place
    CHECK(md::MapSize(shared) == n - 1);
    TVMFFIObjectDecRef(shared);
    TVMFFIObjectDecRef(map);
  }
}

// Assigning an existing key keeps its place in a small map with room, and moves it last in a
// full small map (which turns dense) and in a dense map, on both sides.
TEST(assignment_order) {
  for (uint64_t n : {3, 4, 10}) {
    TVMFFIObject *ours = OurNew(0), *theirs = ap_new(0);
    std::vector<TVMFFIAny> keys;
    for (uint64_t i = 0; i < n; ++i) {
      keys.push_back(Int(int64_t(i)));
      OurSet(&ours, keys[i], keys[i]);
      ap_set(&theirs, &keys[i], &keys[i]);
    }
    TVMFFIAny v = Int(100);
    OurSet(&ours, keys[1], v);
    ap_set(&theirs, &keys[1], &v);
    g_context = std::to_string(n) + " entries";
    CheckSame(ours, theirs, keys);
    bool last = SameBits(OurItems(ours).back().key, keys[1]);
    CHECK(last == (n >= 4));
    TVMFFIObjectDecRef(ours);
    TVMFFIObjectDecRef(theirs);
  }
}

// One map changed in turn by both implementations (the other's objects, tables and deleters)
// matches a map changed by apache alone.
TEST(maps_changed_by_both_sides_in_turn) {
  std::mt19937_64 rng(7);
  KeySet ks;
  for (int i = 0; i < 60; ++i) ks.keys.push_back(MakeKey(4, i));
  for (int dict = 0; dict < 2; ++dict) {
    TVMFFIObject *mixed = dict ? OurNew(1) : ap_new(0), *reference = ap_new(dict);
    for (int step = 0; step < 600; ++step) {
      const TVMFFIAny& key = ks.keys[rng() % ks.keys.size()];
      TVMFFIAny value = Int(step);
      bool by_us = rng() % 2, erase = rng() % 3 == 0;
      if (erase) {
        by_us ? OurErase(&mixed, key) : ap_erase(&mixed, &key);
        ap_erase(&reference, &key);
      } else {
        by_us ? OurSet(&mixed, key, value) : ap_set(&mixed, &key, &value);
        ap_set(&reference, &key, &value);
      }
      g_context = std::string(dict ? "Dict" : "Map") + " step " + std::to_string(step);
      CHECK(SameItems(OurItems(mixed), ApacheItems(reference)));
      CHECK(SameLayout(mixed, reference));
    }
    CheckLookups(mixed, ks.keys);
    TVMFFIObjectDecRef(mixed);
    TVMFFIObjectDecRef(reference);
  }
}

// ---- a key type with its own __any_hash__ (a C function) and __any_equal__ (a Function) ----

struct HookKey {
  TVMFFIObject header;
  int64_t field;  // keys with equal fields are the same key
};
static int g_hash_mode = 0;  // 0: hash the field; 1: answer a float; 2: answer an Error

static TVMFFIAny HashHook(const TVMFFIAny* key) {
  if (g_hash_mode == 1) {
    TVMFFIAny wrong = Int(0);
    wrong.type_index = kTVMFFIFloat;
    return wrong;
  }
  if (g_hash_mode == 2) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "no hash today");
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);
    TVMFFIAny out = md::MapNone();
    out.type_index = kTVMFFIError;
    out.v_obj = static_cast<TVMFFIObject*>(error);
    return out;
  }
  return Int(reinterpret_cast<const HookKey*>(key->v_obj)->field * 3);
}
static int EqualHook(void*, const TVMFFIAny* args, int32_t, TVMFFIAny* result) {
  *result = Int(reinterpret_cast<const HookKey*>(args[0].v_obj)->field ==
                reinterpret_cast<const HookKey*>(args[1].v_obj)->field);
  result->type_index = kTVMFFIBool;
  return 0;
}
static int32_t HookKeyType() {
  static int32_t index = [] {
    TVMFFIByteArray key{"testing.map_layout.HookKey", 26};
    int32_t i = TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 0, kTVMFFIObject);
    TVMFFIAny hash = md::MapNone(), equal = md::MapNone();
    hash.type_index = kTVMFFIOpaquePtr;
    hash.v_ptr = reinterpret_cast<void*>(HashHook);
    TVMFFIObjectHandle function = nullptr;
    CHECK(TVMFFIFunctionCreate(nullptr, EqualHook, nullptr, &function) == 0);
    equal.type_index = kTVMFFIFunction;
    equal.v_obj = static_cast<TVMFFIObject*>(function);
    TVMFFIByteArray hash_name{"__any_hash__", 12}, equal_name{"__any_equal__", 13};
    CHECK(TVMFFITypeRegisterAttr(i, &hash_name, &hash) == 0);
    CHECK(TVMFFITypeRegisterAttr(i, &equal_name, &equal) == 0);
    TVMFFIObjectDecRef(function);
    return i;
  }();
  return index;
}
static void FreeHookKey(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) std::free(self);
}
static TVMFFIAny MakeHookKey(int64_t field) {
  HookKey* k = static_cast<HookKey*>(std::malloc(sizeof(HookKey)));
  k->header.combined_ref_count = md::kCombinedBothOne;
  k->header.type_index = HookKeyType();
  k->header.__padding = 0;
  k->header.deleter = FreeHookKey;
  k->field = field;
  TVMFFIAny a = md::MapNone();
  a.type_index = k->header.type_index;
  a.v_obj = &k->header;
  return a;
}
// The raised error as "Kind: message", taken out of the runtime.
static std::string TakeRaised() {
  TVMFFIObjectHandle error = nullptr;
  TVMFFIErrorMoveFromRaised(&error);
  if (error == nullptr) return "(nothing raised)";
  auto cell = reinterpret_cast<const TVMFFIErrorCell*>(static_cast<char*>(error) + 24);
  std::string text = std::string(cell->kind.data, cell->kind.size) + ": " +
                     std::string(cell->message.data, cell->message.size);
  TVMFFIObjectDecRef(error);
  return text;
}

// Keys whose type registers hooks hash and compare through them on both sides, in small and dense
// maps; a hook that fails leaves the map unchanged and its error raised.
TEST(key_type_hooks_and_their_errors) {
  KeySet ks;
  for (int64_t f : {5, 5, 6}) ks.keys.push_back(MakeHookKey(f));
  const TVMFFIAny &a = ks.keys[0], &b = ks.keys[1], &c = ks.keys[2];
  uint64_t hash = 0;
  bool equal = false;
  CHECK(md::MapKeyHash(&a, &hash) == 0 && hash == ap_hash(&a));
  CHECK(hash == md::MapHashCombine(uint64_t(a.type_index), 15));
  CHECK(md::MapKeyEqual(&a, &b, &equal) == 0 && equal && ap_equal(&a, &b));
  CHECK(md::MapKeyEqual(&a, &c, &equal) == 0 && !equal && !ap_equal(&a, &c));
  for (int dict = 0; dict < 2; ++dict) {
    for (int extra : {3, 10}) {  // a full small map (turning dense hashes), a dense one
      g_context = std::string(dict ? "Dict" : "Map") + " with " + std::to_string(extra) + " ints";
      TVMFFIObject *ours = OurNew(dict), *theirs = ap_new(dict);
      for (int i = 0; i < extra; ++i) {
        OurSet(&ours, Int(i), Int(i));
        TVMFFIAny k = Int(i);
        ap_set(&theirs, &k, &k);
      }
      TVMFFIAny one = Int(1), two = Int(2);
      OurSet(&ours, a, one);
      ap_set(&theirs, &a, &one);
      OurSet(&ours, b, two);  // the same key as a
      ap_set(&theirs, &b, &two);
      CheckSame(ours, theirs, ks.keys);
      CHECK(md::MapSize(ours) == uint64_t(extra) + 1);
      std::vector<md::MapKV> before = OurItems(ours);
      for (int mode : {1, 2}) {
        g_hash_mode = mode;
        TVMFFIAny fresh = MakeHookKey(99);
        TVMFFIObject* same = ours;
        int rc = md::MapSet(&ours, &fresh, &one);
        CHECK(rc == -1 && ours == same && SameItems(OurItems(ours), before));
        std::string raised = TakeRaised();
        if (mode == 1) {
          CHECK(raised ==
                "TypeError: the __any_hash__ of type 'testing.map_layout.HookKey' returned a "
                "value of type index 3, expected an int");
        } else {
          CHECK(raised == "ValueError: no hash today");
        }
        g_hash_mode = 0;
        ap_release(&fresh);
      }
      TVMFFIObjectDecRef(ours);
      TVMFFIObjectDecRef(theirs);
    }
  }
}

// The deleter honours the flags of the reference-count protocol: the last strong reference
// releases the entries (Strong), the last weak one the memory (Weak).
TEST(deleter_flags) {
  for (uint64_t n : {3, 40}) {
    for (int dict = 0; dict < 2; ++dict) {
      g_context = std::to_string(n) + " entries";
      TVMFFIAny value = ap_object(1);
      TVMFFIObject* map = OurNew(dict);
      for (uint64_t i = 0; i < n; ++i) OurSet(&map, Int(int64_t(i)), value);
      CHECK(value.v_obj->combined_ref_count == md::kCombinedBothOne + n);
      map->combined_ref_count += uint64_t(1) << 32;  // a weak reference
      TVMFFIObjectDecRef(map);                       // deleter(map, Strong)
      CHECK(value.v_obj->combined_ref_count == md::kCombinedBothOne);
      CHECK(map->combined_ref_count == uint64_t(1) << 32 && md::MapSize(map) == 0);
      map->deleter(map, kTVMFFIObjectDeleterFlagBitMaskWeak);  // the sanitizers see the free
      ap_release(&value);
    }
  }
}

static uint64_t g_seed = 20261128;

// 2,000 random inserts, assignments, erasures and lookups on our maps and apache's, compared
// after every step (entries, order, lookups of the key touched, slots).
TEST(randomized_differential) {
  std::mt19937_64 rng(g_seed);
  KeySet ks;
  for (int i = 0; i < 410; ++i) ks.keys.push_back(MakeKey(4, i));
  std::vector<TVMFFIAny> values;
  for (int i = 0; i < 50; ++i)
    values.push_back(i % 5 == 0 ? Str("value-" + std::to_string(i) + "-long") : Int(i));
  for (int dict = 0; dict < 2; ++dict) {
    TVMFFIObject *ours = OurNew(dict), *theirs = ap_new(dict);
    for (int step = 0; step < 2000; ++step) {
      // mostly a growing working set, with bursts of erasure that shrink it again
      uint64_t span = 10 + uint64_t(step) % 400;
      const TVMFFIAny& key = ks.keys[rng() % span];
      const TVMFFIAny& value = values[rng() % values.size()];
      int op = int(rng() % 10);
      g_context = std::string(dict ? "Dict" : "Map") + " step " + std::to_string(step) + " op " +
                  std::to_string(op) + " seed " + std::to_string(g_seed);
      if (op < 6) {
        OurSet(&ours, key, value);
        ap_set(&theirs, &key, &value);
      } else if (op < 9) {
        OurErase(&ours, key);
        ap_erase(&theirs, &key);
      }
      CHECK(md::MapSize(ours) == ap_size(theirs));
      CHECK(SameItems(OurItems(ours), ApacheItems(theirs)));
      CHECK(SameLayout(ours, theirs));
      CheckLookups(ours, {key});
      CheckLookups(theirs, {key});
    }
    CheckSame(ours, theirs, ks.keys);
    TVMFFIObjectDecRef(ours);
    TVMFFIObjectDecRef(theirs);
  }
  for (auto& v : values) ap_release(&v);
}

int main(int argc, char** argv) {
  if (argc > 1) g_seed = std::strtoull(argv[1], nullptr, 10);
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // a sanitizer report ends the process unflushed
  int passed = 0, failed = 0;
  for (const Case& c : Cases()) {
    int before = g_failed_checks;
    c.body();
    bool ok = g_failed_checks == before;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", c.name);
    ok ? ++passed : ++failed;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
