/*
 * tvm::ffi::Object, ObjectPtr<T>, ObjectRef and make_object<T>: reference-counted objects whose
 * first bytes are the 24-byte TVMFFIObject header of c_api.h, so an object made here can be
 * held, counted and freed by the runtime, by Python or by a library built with apache-tvm-ffi's
 * headers, and the reverse.
 *
 *   struct CounterObj : tvm::ffi::Object {
 *     int64_t value = 0;
 *     TVM_FFI_DECLARE_OBJECT_INFO_FINAL("my.Counter", CounterObj, tvm::ffi::Object);
 *   };
 */
#ifndef TVM_FFI_OBJECT_H_
#define TVM_FFI_OBJECT_H_

#include <tvm/ffi/base_detail.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/object_count.h>
#include <tvm/ffi/detail/type_index.h>

#include <cstdlib>
#include <new>
#include <string>
#include <utility>

// compat: apache-tvm-ffi. The standard headers its object.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#include <exception>
#include <optional>
#include <typeinfo>

namespace tvm {
namespace ffi {

class Object;
template <typename T>
class ObjectPtr;

// Declared here, defined in any.h, optional.h and container/variant.h: apache-tvm-ffi's
// object.h declares them, so code may name them (pointers, friends) after object.h alone.
class Any;
class AnyView;
template <typename T, typename = void>
class Optional;
template <typename... V>
class Variant;

/*! \brief Tag for the constructors that leave a handle empty (even a non-nullable one). */
struct UnsafeInit {};

namespace details {
struct ObjectUnsafe;
template <typename T>
TVM_FFI_HIDDEN void ObjectDeleter(void* self, int flags) noexcept;
}  // namespace details

/*! \brief The base of every object: the C header, and the type facts of the root type. */
class TVM_FFI_HIDDEN_MEMBERS Object {
 public:
  static constexpr const char* _type_key = "ffi.Object";
  static constexpr int32_t _type_index = kTVMFFIObject;
  static constexpr int32_t _type_depth = 0;
  static constexpr bool _type_final = false;
  static constexpr bool _type_mutable = false;
  static constexpr int32_t _type_child_slots = 0;
  static constexpr bool _type_child_slots_can_overflow = true;
  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindUnsupported;
  static constexpr bool _type_s_eq_hash_subclass_kind_fixed = false;

  TVM_FFI_HIDDEN static int32_t RuntimeTypeIndex() noexcept { return kTVMFFIObject; }
  TVM_FFI_HIDDEN static int32_t _GetOrAllocRuntimeTypeIndex() noexcept { return kTVMFFIObject; }

  TVM_FFI_HIDDEN Object() noexcept : header_{0, 0, 0, {nullptr}} {}
  // A copy is a new object: it starts with no references and gets its own header.
  TVM_FFI_HIDDEN Object(const Object&) noexcept : Object() {}
  TVM_FFI_HIDDEN Object& operator=(const Object&) noexcept { return *this; }

  TVM_FFI_HIDDEN int32_t type_index() const noexcept { return header_.type_index; }
  /*! \brief The registered type key, e.g. "ffi.Array". */
  TVM_FFI_HIDDEN std::string GetTypeKey() const {
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(header_.type_index);
    return std::string(info->type_key.data, info->type_key.size);
  }
  /*! \brief Whether this object is a T (by registered index and ancestry, never by key). */
  template <typename T>
  TVM_FFI_HIDDEN bool IsInstance() const noexcept;
  TVM_FFI_HIDDEN int32_t use_count() const noexcept {
    return static_cast<int32_t>(details::StrongCount(&header_));
  }
  TVM_FFI_HIDDEN bool unique() const noexcept { return details::IsUnique(&header_); }

 private:
  TVMFFIObject header_;
  friend struct details::ObjectUnsafe;
};

namespace details {

/*! \brief The one place that moves between Object*, the C header and handles. */
struct TVM_FFI_HIDDEN_MEMBERS ObjectUnsafe {
  TVM_FFI_HIDDEN static TVMFFIObject* Header(const Object* obj) noexcept {
    return const_cast<TVMFFIObject*>(&obj->header_);
  }
  TVM_FFI_HIDDEN static Object* FromHeader(const TVMFFIObject* header) noexcept {
    // header_ is Object's only member, at its offset 0 (static_assert below).
    return reinterpret_cast<Object*>(const_cast<TVMFFIObject*>(header));
  }
  template <typename T>
  TVM_FFI_HIDDEN static void InitHeader(T* obj, void (*deleter)(void*, int)) noexcept {
    TVMFFIObject* h = Header(obj);
    h->combined_ref_count = kNewObjectCount;
    h->type_index = T::RuntimeTypeIndex();
    h->__padding = 0;
    h->deleter = deleter;
  }
  /*! \brief An ObjectPtr adopting a reference the caller owns. */
  template <typename T>
  TVM_FFI_HIDDEN static ObjectPtr<T> PtrFromOwned(const TVMFFIObject* header) noexcept;
  /*! \brief An ObjectPtr adding its own reference to a borrowed object. */
  template <typename T>
  TVM_FFI_HIDDEN static ObjectPtr<T> PtrFromBorrowed(const TVMFFIObject* header) noexcept;
  template <typename T>
  TVM_FFI_HIDDEN static TVMFFIObject* MoveToOwned(ObjectPtr<T>* ptr) noexcept;
  template <typename RefType>
  TVM_FFI_HIDDEN static TVMFFIObject* HeaderOf(const RefType& ref) noexcept {
    return ref.data_.data_ == nullptr ? nullptr : Header(ref.data_.data_);
  }
  template <typename RefType>
  TVM_FFI_HIDDEN static TVMFFIObject* MoveRefToOwned(RefType* ref) noexcept {
    return MoveToOwned(&ref->data_);
  }
  // ObjectPtr is defined below: the pointer type is spelled through RefType, so that it is
  // looked up at instantiation (clang checks non-dependent names at definition).
  template <typename RefType>
  TVM_FFI_HIDDEN static RefType RefFromOwned(const TVMFFIObject* header) noexcept {
    RefType ref{UnsafeInit{}};
    ref.data_ = PtrFromOwned<std::remove_pointer_t<decltype(ref.data_.get())>>(header);
    return ref;
  }
  template <typename RefType>
  TVM_FFI_HIDDEN static RefType RefFromBorrowed(const TVMFFIObject* header) noexcept {
    RefType ref{UnsafeInit{}};
    ref.data_ = PtrFromBorrowed<std::remove_pointer_t<decltype(ref.data_.get())>>(header);
    return ref;
  }
};

}  // namespace details

/*! \brief An owning pointer to an object of type T (or derived). */
template <typename T>
class TVM_FFI_HIDDEN_MEMBERS ObjectPtr {
 public:
  TVM_FFI_HIDDEN ObjectPtr() noexcept = default;
  TVM_FFI_HIDDEN ObjectPtr(std::nullptr_t) noexcept {}  // NOLINT: implicit, like a pointer
  TVM_FFI_HIDDEN ObjectPtr(const ObjectPtr& other) noexcept : data_(other.data_) { Retain(); }
  TVM_FFI_HIDDEN ObjectPtr(ObjectPtr&& other) noexcept : data_(other.data_) {
    other.data_ = nullptr;
  }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  TVM_FFI_HIDDEN ObjectPtr(const ObjectPtr<U>& other) noexcept  // NOLINT: upcast
      : data_(other.data_) {
    Retain();
  }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  TVM_FFI_HIDDEN ObjectPtr(ObjectPtr<U>&& other) noexcept : data_(other.data_) {  // NOLINT
    other.data_ = nullptr;
  }
  TVM_FFI_HIDDEN ~ObjectPtr() {
    if (data_ != nullptr) details::DecRef(details::ObjectUnsafe::Header(data_));
  }
  TVM_FFI_HIDDEN ObjectPtr& operator=(const ObjectPtr& other) noexcept {
    ObjectPtr(other).swap(*this);
    return *this;
  }
  TVM_FFI_HIDDEN ObjectPtr& operator=(ObjectPtr&& other) noexcept {
    ObjectPtr(std::move(other)).swap(*this);
    return *this;
  }

  TVM_FFI_HIDDEN T* get() const noexcept { return static_cast<T*>(data_); }
  TVM_FFI_HIDDEN T* operator->() const noexcept { return get(); }
  TVM_FFI_HIDDEN T& operator*() const noexcept { return *get(); }
  TVM_FFI_HIDDEN explicit operator bool() const noexcept { return data_ != nullptr; }
  TVM_FFI_HIDDEN bool operator==(std::nullptr_t) const noexcept { return data_ == nullptr; }
  TVM_FFI_HIDDEN bool operator!=(std::nullptr_t) const noexcept { return data_ != nullptr; }
  TVM_FFI_HIDDEN bool operator==(const ObjectPtr& o) const noexcept { return data_ == o.data_; }
  TVM_FFI_HIDDEN bool operator!=(const ObjectPtr& o) const noexcept { return data_ != o.data_; }
  TVM_FFI_HIDDEN int use_count() const noexcept {
    return data_ == nullptr ? 0 : data_->use_count();
  }
  TVM_FFI_HIDDEN bool unique() const noexcept { return data_ != nullptr && data_->unique(); }
  TVM_FFI_HIDDEN void reset() noexcept { ObjectPtr().swap(*this); }
  TVM_FFI_HIDDEN void swap(ObjectPtr& other) noexcept { std::swap(data_, other.data_); }

 private:
  TVM_FFI_HIDDEN void Retain() noexcept {
    if (data_ != nullptr) details::IncRef(details::ObjectUnsafe::Header(data_));
  }
  Object* data_ = nullptr;
  template <typename U>
  friend class ObjectPtr;
  friend struct details::ObjectUnsafe;
};

/*! \brief A nullable handle to any object; the base of every handle class. */
class TVM_FFI_HIDDEN_MEMBERS ObjectRef {
 public:
  using ContainerType = Object;
  static constexpr bool _type_is_nullable = true;

  TVM_FFI_HIDDEN ObjectRef() noexcept = default;
  TVM_FFI_HIDDEN explicit ObjectRef(ObjectPtr<Object> data) noexcept : data_(std::move(data)) {}
  TVM_FFI_HIDDEN explicit ObjectRef(UnsafeInit) noexcept {}
  TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(ObjectRef);
  TVM_FFI_HIDDEN ~ObjectRef() = default;

  TVM_FFI_HIDDEN bool defined() const noexcept { return data_ != nullptr; }
  TVM_FFI_HIDDEN const Object* get() const noexcept { return data_.get(); }
  TVM_FFI_HIDDEN const Object* operator->() const noexcept { return get(); }
  TVM_FFI_HIDDEN int use_count() const noexcept { return data_.use_count(); }
  TVM_FFI_HIDDEN bool unique() const noexcept { return data_.unique(); }
  TVM_FFI_HIDDEN bool same_as(const ObjectRef& other) const noexcept {
    return data_ == other.data_;
  }
  TVM_FFI_HIDDEN bool operator==(const ObjectRef& other) const noexcept { return same_as(other); }
  TVM_FFI_HIDDEN bool operator!=(const ObjectRef& other) const noexcept { return !same_as(other); }
  TVM_FFI_HIDDEN bool operator<(const ObjectRef& other) const noexcept {
    return data_.get() < other.data_.get();
  }
  TVM_FFI_HIDDEN int32_t type_index() const noexcept {
    return data_ == nullptr ? kTVMFFINone : data_->type_index();
  }
  TVM_FFI_HIDDEN std::string GetTypeKey() const {
    return data_ == nullptr ? std::string("None") : data_->GetTypeKey();
  }
  /*! \brief The object as a const T*, or nullptr when empty or not a T. */
  template <typename T, typename = std::enable_if_t<std::is_base_of_v<Object, T>>>
  TVM_FFI_HIDDEN const T* as() const noexcept {
    const Object* obj = get();
    return obj != nullptr && obj->IsInstance<T>() ? static_cast<const T*>(obj) : nullptr;
  }

 protected:
  ObjectPtr<Object> data_;
  friend struct details::ObjectUnsafe;
};

namespace details {

template <typename T>
TVM_FFI_HIDDEN ObjectPtr<T> ObjectUnsafe::PtrFromOwned(const TVMFFIObject* header) noexcept {
  ObjectPtr<T> ptr;
  ptr.data_ = FromHeader(header);
  return ptr;
}
template <typename T>
TVM_FFI_HIDDEN ObjectPtr<T> ObjectUnsafe::PtrFromBorrowed(const TVMFFIObject* header) noexcept {
  if (header != nullptr) IncRef(const_cast<TVMFFIObject*>(header));
  return PtrFromOwned<T>(header);
}
template <typename T>
TVM_FFI_HIDDEN TVMFFIObject* ObjectUnsafe::MoveToOwned(ObjectPtr<T>* ptr) noexcept {
  Object* obj = ptr->data_;
  ptr->data_ = nullptr;
  return obj == nullptr ? nullptr : Header(obj);
}

/*! \brief Destroys (Strong) and frees (Weak) an object made by make_object<T>. */
template <typename T>
TVM_FFI_HIDDEN void ObjectDeleter(void* self, int flags) noexcept {
  // The header is the Object base; a class with a vtable keeps it after the vtable pointer,
  // and static_cast finds the allocation's start from it.
  T* obj = static_cast<T*>(ObjectUnsafe::FromHeader(static_cast<TVMFFIObject*>(self)));
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) obj->T::~T();
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) std::free(static_cast<void*>(obj));
}

template <typename T>
TVM_FFI_HIDDEN void* AllocObjectMemory(size_t bytes) {
  void* mem = nullptr;
  if constexpr (alignof(T) > alignof(std::max_align_t)) {
    if (posix_memalign(&mem, alignof(T), bytes) != 0) mem = nullptr;
  } else {
    mem = std::malloc(bytes);
  }
  if (mem == nullptr) throw std::bad_alloc();
  return mem;
}

/*! \brief Constructs a T in memory of `bytes` (>= sizeof(T)) and gives it its header. */
template <typename T, typename... Args>
TVM_FFI_HIDDEN ObjectPtr<T> MakeObjectInBytes(size_t bytes, Args&&... args) {
  static_assert(std::is_base_of_v<Object, T>, "make_object<T>: T must derive from Object");
  void* mem = AllocObjectMemory<T>(bytes);
  T* obj;
  try {
    obj = new (mem) T(std::forward<Args>(args)...);
  } catch (...) {
    std::free(mem);
    throw;
  }
  ObjectUnsafe::InitHeader(obj, &ObjectDeleter<T>);
  return ObjectUnsafe::PtrFromOwned<T>(ObjectUnsafe::Header(obj));
}

}  // namespace details

/*! \brief Creates a T with one reference, held by the result. */
template <typename T, typename... Args>
TVM_FFI_HIDDEN ObjectPtr<T> make_object(Args&&... args) {  // NOLINT(readability-identifier-naming)
  return details::MakeObjectInBytes<T>(sizeof(T), std::forward<Args>(args)...);
}

/*! \brief Creates a T followed by room for `n` elements of type E (strings, shapes, arrays). */
template <typename T, typename E, typename... Args>
TVM_FFI_HIDDEN ObjectPtr<T> make_inplace_array_object(size_t n, Args&&... args) {  // NOLINT
  return details::MakeObjectInBytes<T>(sizeof(T) + n * sizeof(E), std::forward<Args>(args)...);
}

namespace details {
/*! \brief TVMFFITypeMetadata::creator of a default-constructible class (an empty object). */
template <typename T>
TVM_FFI_HIDDEN int DefaultCreator(TVMFFIObjectHandle* out) noexcept {
  try {
    ObjectPtr<T> obj = make_object<T>();
    *out = ObjectUnsafe::MoveToOwned(&obj);
    return 0;
  } catch (...) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "constructing an empty object failed");
    return -1;
  }
}
template <typename T>
TVM_FFI_HIDDEN constexpr TVMFFIObjectCreator CreatorOf() noexcept {
  if constexpr (std::is_default_constructible_v<T>) return &DefaultCreator<T>;
  return nullptr;
}
}  // namespace details

template <typename T>
TVM_FFI_HIDDEN bool Object::IsInstance() const noexcept {
  if constexpr (std::is_same_v<T, Object>) {
    return true;
  } else {
    return details::IsInstanceOfIndex(header_.type_index, T::RuntimeTypeIndex(), T::_type_depth,
                                      T::_type_final);
  }
}

/*! \brief A handle of type RefType to an object the caller holds a pointer to. */
template <typename RefType, typename ObjType>
TVM_FFI_HIDDEN RefType GetRef(const ObjType* ptr) {
  return details::ObjectUnsafe::RefFromBorrowed<RefType>(details::ObjectUnsafe::Header(ptr));
}

/*! \brief An ObjectPtr to an object the caller holds a pointer to. */
template <typename T>
TVM_FFI_HIDDEN ObjectPtr<T> GetObjectPtr(const T* ptr) {
  return details::ObjectUnsafe::PtrFromBorrowed<T>(details::ObjectUnsafe::Header(ptr));
}

/*!
 * \brief A pointer that does not keep its object alive: lock() gives an ObjectPtr while a
 *  strong reference exists somewhere, and an empty one after the object was destroyed (its
 *  memory lives on until the last weak pointer goes, per the count protocol of c_api.h).
 */
template <typename T>
class TVM_FFI_HIDDEN_MEMBERS WeakObjectPtr {
 public:
  TVM_FFI_HIDDEN WeakObjectPtr() noexcept = default;
  TVM_FFI_HIDDEN WeakObjectPtr(const ObjectPtr<T>& ptr) noexcept  // NOLINT: implicit, as std's
      : data_(ptr.get()) {
    if (data_ != nullptr) details::IncWeakRef(details::ObjectUnsafe::Header(data_));
  }
  TVM_FFI_HIDDEN WeakObjectPtr(const WeakObjectPtr& other) noexcept
      : WeakObjectPtr(other.data_, true) {}
  TVM_FFI_HIDDEN WeakObjectPtr(WeakObjectPtr&& other) noexcept : data_(other.data_) {
    other.data_ = nullptr;
  }
  TVM_FFI_HIDDEN WeakObjectPtr& operator=(WeakObjectPtr other) noexcept {
    std::swap(data_, other.data_);
    return *this;
  }
  TVM_FFI_HIDDEN ~WeakObjectPtr() { reset(); }

  /*! \brief A strong pointer, or an empty one once the object has been destroyed. */
  TVM_FFI_HIDDEN ObjectPtr<T> lock() const noexcept {
    if (data_ == nullptr) return ObjectPtr<T>();
    TVMFFIObject* h = details::ObjectUnsafe::Header(data_);
    if (!details::IncRefIfAlive(h)) return ObjectPtr<T>();
    return details::ObjectUnsafe::PtrFromOwned<T>(h);
  }
  TVM_FFI_HIDDEN bool expired() const noexcept {
    return data_ == nullptr || details::StrongCount(details::ObjectUnsafe::Header(data_)) == 0;
  }
  TVM_FFI_HIDDEN void reset() noexcept {
    if (data_ != nullptr) details::DecWeakRef(details::ObjectUnsafe::Header(data_));
    data_ = nullptr;
  }

 private:
  TVM_FFI_HIDDEN WeakObjectPtr(T* data, bool) noexcept : data_(data) {
    if (data_ != nullptr) details::IncWeakRef(details::ObjectUnsafe::Header(data_));
  }
  T* data_ = nullptr;
};

static_assert(sizeof(Object) == sizeof(TVMFFIObject), "Object is exactly the C header");
static_assert(sizeof(ObjectRef) == sizeof(void*), "a handle is one pointer");

}  // namespace ffi
}  // namespace tvm

// The type index of a class declared by the macros below: registered with the runtime on first
// use, once per library (a hidden function-local static).
#define TVM_FFI_DETAIL_DYNAMIC_TYPE_INDEX(TypeName, ParentType)                              \
  static int32_t _GetOrAllocRuntimeTypeIndex() {                                             \
    static_assert(!ParentType::_type_final, "the parent type is final");                     \
    static const int32_t tindex = ::tvm::ffi::details::RegisterObjectType(                   \
        TypeName::_type_key, TypeName::_type_depth, TypeName::_type_child_slots,             \
        TypeName::_type_child_slots_can_overflow, ParentType::_GetOrAllocRuntimeTypeIndex(), \
        static_cast<int32_t>(sizeof(TypeName)), ::tvm::ffi::details::CreatorOf<TypeName>()); \
    return tindex;                                                                           \
  }                                                                                          \
  static int32_t RuntimeTypeIndex() { return _GetOrAllocRuntimeTypeIndex(); }                \
  using _type_parent [[maybe_unused]] = ParentType

/*!
 * \brief Declares an object class's type key and parent inside its body; the runtime gives
 * the class an index on first use (or at reflection::ObjectDef<T>()).
 */
#define TVM_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType)    \
  static constexpr const char* _type_key = TypeKey;                   \
  static constexpr int32_t _type_depth = ParentType::_type_depth + 1; \
  TVM_FFI_DETAIL_DYNAMIC_TYPE_INDEX(TypeName, ParentType)

/*! \brief TVM_FFI_DECLARE_OBJECT_INFO for a class nothing derives from. */
#define TVM_FFI_DECLARE_OBJECT_INFO_FINAL(TypeKey, TypeName, ParentType) \
  static constexpr int32_t _type_child_slots [[maybe_unused]] = 0;       \
  static constexpr bool _type_final [[maybe_unused]] = true;             \
  TVM_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType)

// The built-in types of c_api.h: their indices are fixed, the runtime knows them already.
#define TVM_FFI_DETAIL_DECLARE_STATIC_OBJECT_INFO(TypeKey, TypeName, ParentType, Index)  \
  static constexpr const char* _type_key = TypeKey;                                      \
  static constexpr int32_t _type_index = Index;                                          \
  static constexpr int32_t _type_depth = ParentType::_type_depth + 1;                    \
  TVM_FFI_HIDDEN static int32_t RuntimeTypeIndex() noexcept { return Index; }            \
  TVM_FFI_HIDDEN static int32_t _GetOrAllocRuntimeTypeIndex() noexcept { return Index; } \
  using _type_parent [[maybe_unused]] = ParentType

#define TVM_FFI_DETAIL_REF_METHODS(TypeName, ParentType, ObjectName, Vis)                  \
  Vis explicit TypeName(::tvm::ffi::UnsafeInit tag) noexcept : ParentType(tag) {}          \
  TVM_FFI_DETAIL_DEFAULT_COPY_MOVE(TypeName, Vis);                                         \
  using TvmFfiPtrType_ =                                                                   \
      std::conditional_t<ObjectName::_type_mutable, ObjectName*, const ObjectName*>;       \
  Vis TvmFfiPtrType_ operator->() const noexcept { return get(); }                         \
  Vis TvmFfiPtrType_ get() const noexcept {                                                \
    return static_cast<TvmFfiPtrType_>(const_cast<::tvm::ffi::Object*>(ObjectRef::get())); \
  }                                                                                        \
  using ContainerType = ObjectName

#define TVM_FFI_DETAIL_NULLABLE_REF_METHODS(TypeName, ParentType, ObjectName, Vis) \
  Vis TypeName() noexcept = default;                                               \
  Vis explicit TypeName(::tvm::ffi::ObjectPtr<ObjectName> n) noexcept              \
      : ParentType(::tvm::ffi::ObjectPtr<::tvm::ffi::Object>(std::move(n))) {}     \
  static constexpr bool _type_is_nullable = true;                                  \
  TVM_FFI_DETAIL_REF_METHODS(TypeName, ParentType, ObjectName, Vis)

/*!
 * \brief The constructors and accessors of a handle class over ObjectName; a default
 * constructor makes an empty handle. `->` is mutable when ObjectName::_type_mutable is true.
 */
#define TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(TypeName, ParentType, ObjectName) \
  TVM_FFI_DETAIL_NULLABLE_REF_METHODS(TypeName, ParentType, ObjectName, /* default */)

/*!
 * \brief The same, for handles that are never empty: no default constructor, and (as in
 * apache-tvm-ffi) no constructor from an ObjectPtr; the class defines its own, or GetRef.
 */
#define TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(TypeName, ParentType, ObjectName) \
  static constexpr bool _type_is_nullable = false;                                      \
  TVM_FFI_DETAIL_REF_METHODS(TypeName, ParentType, ObjectName, /* default */)

#endif  // TVM_FFI_OBJECT_H_
