// The type table: static and dynamic type indices, ancestors, reflection (fields, methods,
// metadata) and per-type attribute columns.
#include <dlfcn.h>

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "internal.h"

namespace tvm_ffi_runtime {
namespace {

// Indices are dense and small: a fixed table lets TVMFFIGetTypeInfo read without a lock
// while another thread registers.
constexpr int32_t kMaxTypes = 1 << 14;

struct TypeEntry {
  TVMFFITypeInfo info{};
  std::string key;
  std::vector<const TVMFFITypeInfo*> ancestors;
  std::deque<std::string> texts;  // owns the bytes behind names, docs and metadata
  std::vector<TVMFFIFieldInfo> fields;
  std::vector<TVMFFIMethodInfo> methods;
  TVMFFITypeMetadata metadata{};
  std::string metadata_from;  // the library that registered the metadata, for messages
  int32_t num_child_slots = 0;
  bool child_slots_can_overflow = true;
  int32_t next_child_slot = 0;  // children allocated inside the reserved range so far

  TVMFFIByteArray Keep(const TVMFFIByteArray& b) {
    texts.emplace_back(b.data == nullptr ? "" : std::string(b.data, b.size));
    return TVMFFIByteArray{texts.back().data(), texts.back().size()};
  }
};

struct AttrColumn {
  std::vector<TVMFFIAny> data;
  TVMFFITypeAttrColumn column{nullptr, 0, 0};
};

struct TypeTable {
  std::mutex mutex;
  std::atomic<TypeEntry*> entries[kMaxTypes] = {};
  std::unordered_map<std::string, int32_t> by_key;
  int32_t next_dynamic = kTVMFFIDynObjectBegin;
  std::unordered_map<std::string, std::unique_ptr<AttrColumn>> attrs;
  // Placeholders handed out for unregistered indices (see TVMFFIGetTypeInfo).
  std::unordered_map<int32_t, std::unique_ptr<TypeEntry>> placeholders;

  TypeTable();
  TypeEntry* Get(int32_t index) {
    if (index < 0 || index >= kMaxTypes) return nullptr;
    return entries[index].load(std::memory_order_acquire);
  }
  TypeEntry* Add(std::string_view key, int32_t index, int32_t parent, int32_t slots, bool overflow);
};

TypeTable& Table() {
  static TypeTable* table = new TypeTable();  // never destroyed: libraries unload after us
  return *table;
}

TypeEntry* TypeTable::Add(std::string_view key, int32_t index, int32_t parent, int32_t slots,
                          bool overflow) {
  auto entry = std::make_unique<TypeEntry>();
  entry->key = std::string(key);
  if (parent >= 0) {
    TypeEntry* p = Get(parent);
    entry->ancestors = p->ancestors;
    entry->ancestors.push_back(&p->info);
  }
  entry->num_child_slots = slots;
  entry->child_slots_can_overflow = overflow;
  TVMFFITypeInfo& info = entry->info;
  info.type_index = index;
  info.type_depth = static_cast<int32_t>(entry->ancestors.size());
  info.type_key = TVMFFIByteArray{entry->key.data(), entry->key.size()};
  info.type_ancestors = entry->ancestors.empty() ? nullptr : entry->ancestors.data();
  info.type_key_hash = std::hash<std::string>()(entry->key);
  TypeEntry* raw = entry.release();
  entries[index].store(raw, std::memory_order_release);
  by_key.emplace(raw->key, index);
  return raw;
}

TypeTable::TypeTable() {
  static const char* const kValueKeys[] = {"None",
                                           "int",
                                           "bool",
                                           "float",
                                           "void*",
                                           "DataType",
                                           "Device",
                                           "DLTensor*",
                                           "const char*",
                                           "TVMFFIByteArray*",
                                           "ObjectRValueRef",
                                           "ffi.SmallStr",
                                           "ffi.SmallBytes",
                                           "ffi.Unchanged"};
  for (int32_t i = 0; i <= kTVMFFIUnchanged; ++i) Add(kValueKeys[i], i, -1, 0, true);
  static const char* const kObjectKeys[] = {"ffi.Object", "ffi.String",         "ffi.Bytes",
                                            "ffi.Error",  "ffi.Function",       "ffi.Shape",
                                            "ffi.Tensor", "ffi.Array",          "ffi.Map",
                                            "ffi.Module", "ffi.OpaquePyObject", "ffi.List",
                                            "ffi.Dict",   "ffi.VisitInterrupt", "ffi.BigInt"};
  Add(kObjectKeys[0], kTVMFFIObject, -1, 0, true);
  for (int32_t i = kTVMFFIStr; i < kTVMFFIStaticObjectEnd; ++i) {
    Add(kObjectKeys[i - kTVMFFIObject], i, kTVMFFIObject, 0, true);
  }
  // The attribute columns apache's runtime creates at start: libraries' inline code looks
  // them up by name and throws when one is missing, even where no type has a value in it.
  static const char* const kColumns[] = {"__any_equal__",
                                         "__any_hash__",
                                         "__data_from_json__",
                                         "__data_to_json__",
                                         "__ffi_compare__",
                                         "__ffi_convert__",
                                         "__ffi_enum__",
                                         "__ffi_eq__",
                                         "__ffi_hash__",
                                         "__ffi_init__",
                                         "__ffi_new__",
                                         "__ffi_repr__",
                                         "__ffi_shallow_copy__",
                                         "__ffi_type_final__",
                                         "__s_equal__",
                                         "__s_hash__",
                                         "__s_maybe_inplace_mutate__",
                                         "__s_mutate__",
                                         "__s_visit__"};
  for (const char* name : kColumns) attrs.emplace(name, std::make_unique<AttrColumn>());
}

std::string Key(const TVMFFIByteArray* b) { return std::string(b->data, b->size); }

// The conflicts recorded while the loader runs a library's initialisers (see internal.h).
thread_local bool load_checks_active = false;
thread_local std::string load_conflict;

// A registration that disagrees with the first one: recorded during a load, thrown otherwise.
void Conflict(const char* kind, std::string message) {
  if (!load_checks_active) Throw(kind, std::move(message));
  if (load_conflict.empty()) load_conflict = std::move(message);
}

// Why a registration of this thread was refused, so that the calls that follow with the -1
// it got can repeat the reason instead of "unknown type index -1".
thread_local std::string refused_registration;

TypeEntry* RequireType(TypeTable& t, int32_t index, const char* op) {
  TypeEntry* e = t.Get(index);
  if (e == nullptr || index < kTVMFFIStaticObjectBegin) {
    if (index == -1 && !refused_registration.empty()) Throw("TypeError", refused_registration);
    Throw("ValueError", std::string(op) + ": type index " + std::to_string(index) +
                            " is not a registered object type");
  }
  return e;
}

int32_t GetOrAlloc(const std::string& key, int32_t static_index, int32_t depth, int32_t slots,
                   bool overflow, int32_t parent) {
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.by_key.find(key);
  if (parent == -2) return it == t.by_key.end() ? -2 : it->second;
  if (it != t.by_key.end()) {
    TypeEntry* e = t.Get(it->second);
    int32_t old_parent = e->ancestors.empty() ? -1 : e->ancestors.back()->type_index;
    if (old_parent != parent) {
      // During a load the library gets the existing index and the loader refuses it.
      Conflict("TypeError", "type key '" + key + "' was registered with parent type index " +
                                std::to_string(old_parent) + "; this registration declares " +
                                std::to_string(parent));
    }
    return it->second;
  }
  TypeEntry* p = t.Get(parent);
  if (p == nullptr || parent < kTVMFFIStaticObjectBegin) {
    Throw("ValueError", "cannot register type key '" + key + "': parent type index " +
                            std::to_string(parent) + " is not a registered object type");
  }
  if (depth != p->info.type_depth + 1) {
    Throw("ValueError", "cannot register type key '" + key + "' at depth " + std::to_string(depth) +
                            ": its parent '" + p->key + "' is at depth " +
                            std::to_string(p->info.type_depth));
  }
  int32_t index;
  if (static_index >= 0) {
    if (static_index >= kMaxTypes || t.Get(static_index) != nullptr) {
      Throw("ValueError", "cannot register type key '" + key + "' at static index " +
                              std::to_string(static_index) + ": the index is taken");
    }
    index = static_index;
  } else if (p->next_child_slot < p->num_child_slots) {
    // Children take the slots right after their parent, so a range check tells subtypes.
    index = parent + 1 + p->next_child_slot++;
  } else {
    if (p->num_child_slots > 0 && !p->child_slots_can_overflow) {
      Throw("TypeError", "cannot register type key '" + key + "': its parent '" + p->key +
                             "' reserved " + std::to_string(p->num_child_slots) +
                             " child slots, all taken, and does not allow more");
    }
    index = t.next_dynamic;
    if (index >= kMaxTypes) Throw("RuntimeError", "type table full registering '" + key + "'");
    t.next_dynamic += 1 + (slots > 0 ? slots : 0);
  }
  t.Add(key, index, parent, slots > 0 ? slots : 0, overflow);
  return index;
}

// The file of the library whose code is at `address` (the caller of a registration).
std::string LibraryOf(void* address) {
  Dl_info info;
  if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
    return std::string("'") + info.dli_fname + "'";
  }
  return "an unknown library";
}

bool SameBytes(const TVMFFIByteArray& a, const TVMFFIByteArray& b) {
  return a.size == b.size && (a.size == 0 || std::memcmp(a.data, b.data, a.size) == 0);
}

}  // namespace

void BeginLoadChecks() {
  load_checks_active = true;
  load_conflict.clear();
}

std::string EndLoadChecks() {
  load_checks_active = false;
  return std::move(load_conflict);
}

}  // namespace tvm_ffi_runtime

using namespace tvm_ffi_runtime;

extern "C" {

int TVMFFITypeKeyToIndex(const TVMFFIByteArray* type_key, int32_t* out_tindex) {
  TVM_FFI_RT_BEGIN();
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.by_key.find(Key(type_key));
  if (it == t.by_key.end())
    Throw("KeyError", "no type is registered with key '" + Key(type_key) + "'");
  *out_tindex = it->second;
  TVM_FFI_RT_END();
}

int32_t TVMFFITypeGetOrAllocIndex(const TVMFFIByteArray* type_key, int32_t static_type_index,
                                  int32_t type_depth, int32_t num_child_slots,
                                  int32_t child_slots_can_overflow, int32_t parent_type_index) {
  // Returns the index (or -2 for an absent key queried with parent -2). A refused
  // registration returns -1 with a TypeError/ValueError in the slot; the library's next
  // registration call with that -1 repeats the reason.
  try {
    int32_t index = GetOrAlloc(Key(type_key), static_type_index, type_depth, num_child_slots,
                               child_slots_can_overflow != 0, parent_type_index);
    return index;
  } catch (const RtError& e) {
    refused_registration = e.message;
    RaiseInSlot(e.kind, e.message);
    return -1;
  }
}

const TVMFFITypeInfo* TVMFFIGetTypeInfo(int32_t type_index) {
  TypeTable& t = Table();
  if (TypeEntry* e = t.Get(type_index)) return &e->info;
  // Inline code of libraries reads the answer without a check, mostly to name a type in a
  // message; a placeholder keyed "<unregistered type index N>" keeps that message readable
  // and the process alive (apache's runtime aborts). It has no ancestors, so no instance
  // check can succeed against it.
  std::lock_guard<std::mutex> lock(t.mutex);
  auto& slot = t.placeholders[type_index];
  if (!slot) {
    slot = std::make_unique<TypeEntry>();
    slot->key = "<unregistered type index " + std::to_string(type_index) + ">";
    slot->info.type_index = type_index;
    slot->info.type_key = TVMFFIByteArray{slot->key.data(), slot->key.size()};
    slot->info.type_key_hash = std::hash<std::string>()(slot->key);
  }
  return &slot->info;
}

int TVMFFITypeRegisterField(int32_t type_index, const TVMFFIFieldInfo* info) {
  TVM_FFI_RT_BEGIN();
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  TypeEntry* e = RequireType(t, type_index, "TVMFFITypeRegisterField");
  for (const TVMFFIFieldInfo& f : e->fields) {
    if (!SameBytes(f.name, info->name)) continue;
    // A second library defining the same type repeats its fields: same place, same size.
    if (f.offset == info->offset && f.size == info->size) return 0;
    Conflict("TypeError",
             "field '" + Key(&info->name) + "' of type '" + e->key + "' was registered at offset " +
                 std::to_string(f.offset) + " (" + std::to_string(f.size) +
                 " bytes); this registration declares offset " + std::to_string(info->offset) +
                 " (" + std::to_string(info->size) + " bytes)");
  }
  TVMFFIFieldInfo copy = *info;
  copy.name = e->Keep(info->name);
  copy.doc = e->Keep(info->doc);
  copy.metadata = e->Keep(info->metadata);
  copy.default_value_or_factory = OwnedCopy(info->default_value_or_factory);
  if ((copy.flags & kTVMFFIFieldFlagBitSetterIsFunctionObj) && copy.setter != nullptr) {
    IncRef(Header(copy.setter));
  }
  e->fields.push_back(copy);
  e->info.fields = e->fields.data();
  e->info.num_fields = static_cast<int32_t>(e->fields.size());
  TVM_FFI_RT_END();
}

int TVMFFITypeRegisterMethod(int32_t type_index, const TVMFFIMethodInfo* info) {
  TVM_FFI_RT_BEGIN();
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  TypeEntry* e = RequireType(t, type_index, "TVMFFITypeRegisterMethod");
  for (const TVMFFIMethodInfo& m : e->methods) {
    // The first definition stays: a second library repeating the type keeps the first one's.
    if (SameBytes(m.name, info->name)) return 0;
  }
  TVMFFIMethodInfo copy = *info;
  copy.name = e->Keep(info->name);
  copy.doc = e->Keep(info->doc);
  copy.metadata = e->Keep(info->metadata);
  copy.method = OwnedCopy(info->method);
  e->methods.push_back(copy);
  e->info.methods = e->methods.data();
  e->info.num_methods = static_cast<int32_t>(e->methods.size());
  TVM_FFI_RT_END();
}

int TVMFFITypeRegisterMetadata(int32_t type_index, const TVMFFITypeMetadata* metadata) {
  void* caller = __builtin_return_address(0);
  TVM_FFI_RT_BEGIN();
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  TypeEntry* e = RequireType(t, type_index, "TVMFFITypeRegisterMetadata");
  if (e->info.metadata != nullptr) {
    int32_t before = e->metadata.total_size;
    // Objects of one type index are read with one layout: two sizes mean two layouts, and
    // the second library's objects would be read wrongly by the first's code.
    if (before != 0 && metadata->total_size != 0 && before != metadata->total_size) {
      Conflict("TypeError", "type key '" + e->key + "' was registered with " +
                                std::to_string(before) + "-byte objects by " + e->metadata_from +
                                "; " + LibraryOf(caller) + " declares " +
                                std::to_string(metadata->total_size));
    }
    return 0;
  }
  e->metadata_from = LibraryOf(caller);
  e->metadata = *metadata;
  e->metadata.doc = e->Keep(metadata->doc);
  e->info.metadata = &e->metadata;
  TVM_FFI_RT_END();
}

int TVMFFITypeRegisterAttr(int32_t type_index, const TVMFFIByteArray* attr_name,
                           const TVMFFIAny* attr_value) {
  TVM_FFI_RT_BEGIN();
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (type_index != kTVMFFINone && t.Get(type_index) == nullptr) {
    RequireType(t, type_index, "TVMFFITypeRegisterAttr");
  }
  auto& col = t.attrs[Key(attr_name)];
  if (!col) col = std::make_unique<AttrColumn>();
  // Index kTVMFFINone only makes sure the column exists (apache's EnsureTypeAttrColumn).
  if (type_index == kTVMFFINone) return 0;
  if (static_cast<size_t>(type_index) >= col->data.size()) {
    col->data.resize(static_cast<size_t>(type_index) + 1, NoneValue());
  }
  TVMFFIAny& slot = col->data[static_cast<size_t>(type_index)];
  if (slot.type_index != kTVMFFINone) return 0;  // the first registration stays
  slot = OwnedCopy(*attr_value);
  col->column.data = col->data.data();
  col->column.size = static_cast<int32_t>(col->data.size());
  col->column.begin_index = 0;
  TVM_FFI_RT_END();
}

const TVMFFITypeAttrColumn* TVMFFIGetTypeAttrColumn(const TVMFFIByteArray* attr_name) {
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.attrs.find(Key(attr_name));
  return it == t.attrs.end() ? nullptr : &it->second->column;
}

}  // extern "C"
