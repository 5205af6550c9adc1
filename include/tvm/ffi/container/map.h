/*
 * tvm::ffi::Map<K, V>: a hash map with copy-on-write, kept in insertion order. Its object
 * (MapObj, type index kTVMFFIMap) is written and read by detail/map_layout.h alone, the one
 * implementation of the layout that apache-tvm-ffi-built code reads inline too; a change copies
 * the object first unless this handle is its only owner, so a map a caller passed in is never
 * changed under it. Dict (container/dict.h) is the same table with reference semantics.
 */
#ifndef TVM_FFI_CONTAINER_MAP_H_
#define TVM_FFI_CONTAINER_MAP_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/detail/map_layout.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>

namespace tvm {
namespace ffi {

namespace details {
/*!
 * \brief The object of a Map or a Dict, viewed only: made, changed and freed by
 *  detail/map_layout.h (the two differ in their type index alone).
 */
class TVM_FFI_HIDDEN_MEMBERS MapLayoutObj : public Object {
 public:
  static constexpr bool _type_final = true;
  MapLayoutObj() = delete;
  TVM_FFI_HIDDEN size_t size() const noexcept {
    return static_cast<size_t>(MapSize(ObjectUnsafe::Header(this)));
  }
};
}  // namespace details

/*! \brief The map object (copy-on-write). */
class TVM_FFI_HIDDEN_MEMBERS MapObj : public details::MapLayoutObj {
 public:
  TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO("ffi.Map", MapObj, Object, kTVMFFIMap);
};

namespace details {

/*! \brief Turns a map_layout.h failure (-1, error raised in the runtime) into an exception. */
TVM_FFI_HIDDEN inline void MapCheck(int rc, const char* operation) {
  if (TVM_FFI_UNLIKELY(rc != 0)) throw MoveFromRaised(operation);
}

TVM_FFI_HIDDEN inline ObjectPtr<Object> MapNewObject(int32_t type_index, size_t n) {
  TVMFFIObject* out = nullptr;
  MapCheck(MapNew(type_index, n, &out), "allocating a map");
  return ObjectUnsafe::PtrFromOwned<Object>(out);
}

/*!
 * \brief What Map and Dict share: lookups, iteration and changes through map_layout.h. The
 *  layout decides copy-on-write by the object's type index (a Map copies when shared, a
 *  Dict never does), so one body serves both.
 */
template <typename K, typename V, typename Obj>
class TVM_FFI_HIDDEN_MEMBERS MapHandle : public ObjectRef {
  static constexpr int32_t kIndex = Obj::_type_index;

 public:
  using ContainerType = Obj;
  using key_type = K;
  using mapped_type = V;
  static constexpr bool _type_is_nullable = false;

  /*! \brief Yields (key, value) pairs, converted on each read, in insertion order. */
  class TVM_FFI_HIDDEN_MEMBERS iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = std::pair<K, V>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;
    TVM_FFI_HIDDEN iterator(const TVMFFIObject* map, uint64_t pos) noexcept
        : map_(map), pos_(pos) {}
    TVM_FFI_HIDDEN value_type operator*() const {
      const MapKV* kv = MapIterItem(map_, pos_);
      return value_type(AnyUnsafe::ViewFrom(kv->key).template cast<K>(),
                        AnyUnsafe::ViewFrom(kv->value).template cast<V>());
    }
    TVM_FFI_HIDDEN iterator& operator++() noexcept { return pos_ = MapIterNext(map_, pos_), *this; }
    TVM_FFI_HIDDEN iterator& operator--() noexcept { return pos_ = MapIterPrev(map_, pos_), *this; }
    TVM_FFI_HIDDEN bool operator==(const iterator& o) const noexcept { return pos_ == o.pos_; }
    TVM_FFI_HIDDEN bool operator!=(const iterator& o) const noexcept { return pos_ != o.pos_; }

   private:
    const TVMFFIObject* map_;
    uint64_t pos_;
  };
  using const_iterator = iterator;

  TVM_FFI_HIDDEN size_t size() const noexcept { return static_cast<size_t>(MapSize(Head())); }
  TVM_FFI_HIDDEN bool empty() const noexcept { return size() == 0; }
  TVM_FFI_HIDDEN size_t count(const K& key) const { return Lookup(key) != nullptr ? 1 : 0; }
  TVM_FFI_HIDDEN bool contains(const K& key) const { return count(key) != 0; }
  /*! \brief The value of `key`; KeyError naming the key when it is absent. */
  TVM_FFI_HIDDEN V at(const K& key) const {
    const TVMFFIAny* value = Lookup(key);
    if (TVM_FFI_UNLIKELY(value == nullptr)) ThrowMissing(key);
    return AnyUnsafe::ViewFrom(*value).template cast<V>();
  }
  TVM_FFI_HIDDEN V operator[](const K& key) const { return at(key); }
  /*! \brief The value of `key`, or nullopt. */
  TVM_FFI_HIDDEN Optional<V> Get(const K& key) const {
    const TVMFFIAny* value = Lookup(key);
    if (value == nullptr) return Optional<V>();
    return Optional<V>(AnyUnsafe::ViewFrom(*value).template cast<V>());
  }
  TVM_FFI_HIDDEN iterator begin() const noexcept { return iterator(Head(), MapIterBegin(Head())); }
  TVM_FFI_HIDDEN const Obj* get() const noexcept {
    return static_cast<const Obj*>(ObjectRef::get());
  }
  TVM_FFI_HIDDEN const Obj* operator->() const noexcept { return get(); }
  TVM_FFI_HIDDEN iterator end() const noexcept { return iterator(Head(), MapIterEnd(Head())); }

  /*! \brief Sets key -> value (a shared Map is copied first). */
  TVM_FFI_HIDDEN void Set(const K& key, const V& value) {
    Any k(key), v(value);
    Change(
        [&](TVMFFIObject** map) { return MapSet(map, &AnyUnsafe::View(k), &AnyUnsafe::View(v)); },
        "Map.Set");
  }
  /*! \brief Removes `key`; returns how many entries went (0 or 1). */
  TVM_FFI_HIDDEN size_t erase(const K& key) {
    Any k(key);
    bool erased = false;
    Change([&](TVMFFIObject** map) { return MapErase(map, &AnyUnsafe::View(k), &erased); },
           "Map.erase");
    return erased ? 1 : 0;
  }

 protected:
  TVM_FFI_HIDDEN MapHandle() : ObjectRef(MapNewObject(kIndex, 0)) {}
  TVM_FFI_HIDDEN explicit MapHandle(size_t n) : ObjectRef(MapNewObject(kIndex, n)) {}
  TVM_FFI_HIDDEN explicit MapHandle(UnsafeInit tag) noexcept : ObjectRef(tag) {}
  TVM_FFI_HIDDEN MapHandle(std::initializer_list<std::pair<K, V>> entries)
      : MapHandle(entries.size()) {
    for (const auto& e : entries) Set(e.first, e.second);
  }
  TVM_FFI_HIDDEN TVMFFIObject* Head() const noexcept { return ObjectUnsafe::HeaderOf(*this); }

  template <typename Op>
  TVM_FFI_HIDDEN void Change(Op op, const char* operation) {
    // The layout may replace a shared Map by its copy: it takes this handle's reference and
    // gives back the one to keep, failure or not.
    TVMFFIObject* map = ObjectUnsafe::MoveRefToOwned(this);
    const int rc = op(&map);
    data_ = ObjectUnsafe::PtrFromOwned<Object>(map);
    MapCheck(rc, operation);
  }

 private:
  TVM_FFI_HIDDEN const TVMFFIAny* Lookup(const K& key) const {
    Any k(key);
    TVMFFIAny* value = nullptr;
    MapCheck(MapLookup(Head(), &AnyUnsafe::View(k), &value), "Map lookup");
    return value;
  }
  [[noreturn]] TVM_FFI_COLD static void ThrowMissing(const K& key) {
    std::string text;
    AppendKey(text, AnyUnsafe::View(Any(key)));
    TVM_FFI_THROW(KeyError) << "key " << text << " is not in the "
                            << (kIndex == kTVMFFIMap ? "Map" : "Dict");
  }
  TVM_FFI_COLD static void AppendKey(std::string& out, const TVMFFIAny& key) {
    const char* data;
    size_t size;
    int32_t kind;
    if (MapStringView(key, &kind, &data, &size)) {
      out += '\'';
      out.append(data, size);
      out += '\'';
    } else if (key.type_index == kTVMFFIInt) {
      AppendTo(out, key.v_int64);
    } else {
      out += "of type " + AnyTypeName(key);
    }
  }
};

/*! \brief The shared part of TypeTraits<Map<K, V>> and TypeTraits<Dict<K, V>>. */
template <typename Ref, typename K, typename V>
struct MapTraitsBase {
  static constexpr bool kEnabled = TypeTraits<K>::kEnabled && TypeTraits<V>::kEnabled;
  static void CopyToView(const Ref& v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::HeaderOf(v), out);
  }
  static void MoveToAny(Ref v, TVMFFIAny* out) noexcept {
    ObjectHeaderToAny(ObjectUnsafe::MoveRefToOwned(&v), out);
  }
  /*! \brief Whether every key and value reads back as itself (the object can be shared). */
  static bool Shareable(const TVMFFIObject* map) {
    for (uint64_t p = MapIterBegin(map); p != MapIterEnd(map); p = MapIterNext(map, p)) {
      const MapKV* kv = MapIterItem(map, p);
      if (!ConvertsToItself<K>(kv->key) || !ConvertsToItself<V>(kv->value)) return false;
    }
    return true;
  }
  static void TypeName(const char* name, std::string* out) {
    *out += name;
    *out += "[";
    TypeTraits<K>::TypeName(out);
    *out += ", ";
    TypeTraits<V>::TypeName(out);
    *out += "]";
  }
  static void Schema(const char* key, std::string* out) {
    *out += R"({"type":")";
    *out += key;
    *out += R"(","args":[)";
    TypeTraits<K>::Schema(out);
    *out += ",";
    TypeTraits<V>::Schema(out);
    *out += "]}";
  }
};

}  // namespace details

template <typename K, typename V>
class TVM_FFI_HIDDEN_MEMBERS Map : public details::MapHandle<K, V, MapObj> {
  using Base = details::MapHandle<K, V, MapObj>;

 public:
  TVM_FFI_HIDDEN Map() = default;
  TVM_FFI_HIDDEN explicit Map(UnsafeInit tag) noexcept : Base(tag) {}
  TVM_FFI_HIDDEN Map(std::initializer_list<std::pair<K, V>> entries) : Base(entries) {}
  template <typename Hash, typename Equal>
  TVM_FFI_HIDDEN Map(const std::unordered_map<K, V, Hash, Equal>& entries)  // NOLINT: implicit
      : Base(entries.size()) {
    for (const auto& e : entries) this->Set(e.first, e.second);
  }
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(Map);
  TVM_FFI_HIDDEN ~Map() = default;
  TVM_FFI_HIDDEN void clear() { this->data_ = details::MapNewObject(kTVMFFIMap, 0); }
};

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace details {

template <typename K, typename V>
struct HasOwnTraits<Map<K, V>> : std::true_type {};

/*! \brief An entry's key as an error names it: "key" for a str, 3 for an int, else <type>. */
TVM_FFI_COLD inline std::string MapKeyText(const TVMFFIAny& key) {
  TVMFFIByteArray text;
  if (ViewStrBytes(key, &text)) return Concat({"\"", std::string_view(text.data, text.size), "\""});
  if (key.type_index == kTVMFFIInt) return std::string(std::string_view(DecimalText(key.v_int64)));
  return Concat({"<", AnyTypeName(key), ">"});
}

/*! \brief Converts an entry, naming it in the error as ConvertElement names an element:
 *  "f() argument 1["key"] must be int, not str", "f() argument 1 key 3 must be str, not int". */
template <typename T>
T ConvertEntry(const TVMFFIAny& v, const TVMFFIAny& key, bool is_key) {
  try {
    return ConvertFromView<T>(v);
  } catch (ConversionError& e) {
    const std::string text = MapKeyText(key);
    e.path = is_key ? Concat({" key ", text, e.path}) : Concat({"[", text, "]", e.path});
    throw;
  }
}

template <typename K, typename V>
struct TypeTraits<Map<K, V>> : MapTraitsBase<Map<K, V>, K, V> {
  using Base = MapTraitsBase<Map<K, V>, K, V>;
  static Maybe<Map<K, V>> TryFromView(const TVMFFIAny& v) {
    if (v.type_index != kTVMFFIMap) return std::nullopt;
    // An entry that does not convert is no error here: the conversion below names it by key.
    if (Base::Shareable(v.v_obj)) return ObjectUnsafe::RefFromBorrowed<Map<K, V>>(v.v_obj);
    // A value: converting the entries into a new map changes nobody else's.
    Map<K, V> copy;
    for (uint64_t p = MapIterBegin(v.v_obj); p != MapIterEnd(v.v_obj);
         p = MapIterNext(v.v_obj, p)) {
      const MapKV* kv = MapIterItem(v.v_obj, p);
      copy.Set(ConvertEntry<K>(kv->key, kv->key, true), ConvertEntry<V>(kv->value, kv->key, false));
    }
    return copy;
  }
  static void TypeName(std::string* out) { Base::TypeName("Map", out); }
  static void Schema(std::string* out) { Base::Schema("ffi.Map", out); }
};

}  // namespace details
TVM_FFI_DETAIL_HIDDEN_END

}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_CONTAINER_MAP_H_
