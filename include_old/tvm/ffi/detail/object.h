/*
 * The implementation behind tvm/ffi/object.h (the public header).
 *
 * tvm::ffi::Object, ObjectPtr<T>, ObjectRef and make_object<T>: reference-counted C++ objects
 * that cross the C ABI as kTVMFFIRefObject values (c_api.h, docs/abi.md). Functions
 * (function.h) and modules (extra/module.h) are objects; so is any class a library derives
 * from Object and registers with reflection::ObjectDef (reflection/registry.h).
 *
 * An ObjectRef holds any TVMFFIRefObject, also one made by another library or by Python;
 * get() reaches the C++ Object only when the object is one (TVM_FFI_OBJECT_IS_CXX).
 */
#ifndef TVM_FFI_DETAIL_OBJECT_H_
#define TVM_FFI_DETAIL_OBJECT_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/detail/ref_count.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tvm {
namespace ffi {

// Object, ObjectPtr, ObjectRef and UnsafeInit (and ModuleObj, extra/module.h) have default
// visibility, unlike the rest of the headers: user classes derive from them and hold them as
// fields, and a class of default visibility (the default) with a hidden base or field draws
// -Wattributes. Their members are small inline functions of one ABI version, the same in every
// library. Everything else here is hidden: each library keeps its own copy.
class Object;
class ObjectRef;
template <typename T>
class ObjectPtr;

/*! \brief Tag for the constructors that leave an object handle empty (apache-tvm-ffi's name). */
struct UnsafeInit {};

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace detail {
struct ObjectCells;
template <typename T>
struct ObjectTypeOf;
}  // namespace detail
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief Base of every C++ object that crosses the ABI. Derive from it, declare the type key
 * with TVM_FFI_DECLARE_OBJECT_INFO[_FINAL], create instances with make_object<T>(...).
 */
class Object {
 public:
  static constexpr const char* _type_key = "ffi.Object";
  static constexpr bool _type_final = false;
  static constexpr bool _type_mutable = false;
  static constexpr int _type_child_slots = 0;
  static constexpr int32_t _type_depth = 0;
  /*! \brief TVM_FFI_OBJECT_IS_* flags of the type; FunctionObj and ModuleObj add theirs. */
  static constexpr int32_t _type_ffi_flags = TVM_FFI_OBJECT_IS_CXX;
  /*! \brief type->call and type->get_function of the type; FunctionObj and ModuleObj set them. */
  static constexpr std::nullptr_t _type_ffi_call = nullptr;
  static constexpr std::nullptr_t _type_ffi_get_function = nullptr;

  Object() noexcept = default;
  // An object's identity and count are its own: copying the fields of a derived object
  // (a copy constructor the user writes) starts a new object with no references yet.
  Object(const Object&) noexcept {}
  Object& operator=(const Object&) noexcept { return *this; }
  // Not virtual: the last reference deletes the object as the type make_object created, and
  // Object stays standard-layout, so its C view is at its own address.
  ~Object() = default;

  /*! \brief The type key the object was made with (make_object<T>: T::_type_key). */
  const char* GetTypeKey() const noexcept {
    return cell_.type != nullptr ? cell_.type->type_key : _type_key;
  }
  /*! \brief Whether the object is a T: its type key, or for functions and modules its kind. */
  template <typename T>
  bool IsInstance() const noexcept;
  int32_t use_count() const noexcept { return refs_.Load(); }

 private:
  TVMFFIRefObject cell_{nullptr};  // the object's C view, first; type set by make_object
  detail::RefCount<int32_t> refs_{0};
  friend struct detail::ObjectCells;
};

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace detail {

/*! \brief Moves between an Object and its C view, and counts references through the view. */
struct ObjectCells {
  static TVMFFIRefObject* CellOf(const Object* obj) noexcept {
    return const_cast<TVMFFIRefObject*>(&obj->cell_);
  }
  /*! \brief The Object behind a cell, or nullptr when the cell is not a C++ Object's. */
  static Object* ObjectOf(TVMFFIRefObject* cell) noexcept {
    if (cell == nullptr || (cell->type->flags & TVM_FFI_OBJECT_IS_CXX) == 0) return nullptr;
    return ObjectOfCxx(cell);
  }
  /*! \brief The Object behind a cell known to be a C++ Object's (its own type's slots). */
  static Object* ObjectOfCxx(TVMFFIRefObject* cell) noexcept {
    // The cell is the first member of a standard-layout Object: the same address.
    return reinterpret_cast<Object*>(cell);
  }
  template <typename T>
  static void Init(T* obj) noexcept {
    obj->cell_.type = &ObjectTypeOf<T>::kType;
  }
  static void IncRef(TVMFFIRefObject* cell) noexcept {
    ObjectOfCxx(cell)->refs_.Increment();
  }
  template <typename T>
  static void DecRef(TVMFFIRefObject* cell) noexcept {
    Object* obj = ObjectOfCxx(cell);
    if (obj->refs_.Decrement()) delete static_cast<T*>(obj);
  }
  /*! \brief The cell a handle holds (nullptr when empty), still owned by the handle. */
  static TVMFFIRefObject* CellOfRef(const ObjectRef& ref) noexcept;
};

inline void RetainCell(TVMFFIRefObject* cell) noexcept {
  if (cell != nullptr) cell->type->inc_ref(cell);
}
inline void ReleaseCell(TVMFFIRefObject* cell) noexcept {
  if (cell != nullptr) cell->type->dec_ref(cell);
}

/*! \brief The one TVMFFIObjectType of a C++ object class, in the library that makes it. */
template <typename T>
struct ObjectTypeOf {
  static constexpr TVMFFIObjectType kType = {TVM_FFI_ABI_VERSION,
                                             T::_type_ffi_flags,
                                             T::_type_key,
                                             ObjectCells::IncRef,
                                             ObjectCells::DecRef<T>,
                                             T::_type_ffi_call,
                                             T::_type_ffi_get_function};
};

}  // namespace detail

TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief An owning pointer to an object: a C++ T, or (as ObjectPtr<Object>) any object that
 * came through the ABI. Copying adds a reference, destruction drops one.
 */
template <typename T>
class ObjectPtr {
 public:
  ObjectPtr() noexcept = default;
  ObjectPtr(std::nullptr_t) noexcept {}  // NOLINT: implicit, like a pointer
  ObjectPtr(const ObjectPtr& other) noexcept : cell_(other.cell_) { detail::RetainCell(cell_); }
  ObjectPtr(ObjectPtr&& other) noexcept : cell_(std::exchange(other.cell_, nullptr)) {}
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(const ObjectPtr<U>& other) noexcept : cell_(other.cell_) {  // NOLINT
    detail::RetainCell(cell_);
  }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(ObjectPtr<U>&& other) noexcept : cell_(std::exchange(other.cell_, nullptr)) {}  // NOLINT
  ObjectPtr& operator=(ObjectPtr other) noexcept {
    std::swap(cell_, other.cell_);
    return *this;
  }
  ~ObjectPtr() { detail::ReleaseCell(cell_); }

  /*! \brief The C++ object, or nullptr (empty, or an object that is not a C++ Object). */
  T* get() const noexcept { return static_cast<T*>(detail::ObjectCells::ObjectOf(cell_)); }
  T* operator->() const noexcept { return get(); }
  T& operator*() const noexcept { return *get(); }
  explicit operator bool() const noexcept { return cell_ != nullptr; }
  bool operator==(std::nullptr_t) const noexcept { return cell_ == nullptr; }
  bool operator!=(std::nullptr_t) const noexcept { return cell_ != nullptr; }
  int32_t use_count() const noexcept { return get() != nullptr ? get()->use_count() : 0; }
  void reset() noexcept { ObjectPtr().swap(*this); }
  void swap(ObjectPtr& other) noexcept { std::swap(cell_, other.cell_); }

  /*! \brief Adopts a reference the caller owns (a result's kTVMFFIRefObject). */
  static ObjectPtr Adopt(TVMFFIRefObject* cell) noexcept {
    ObjectPtr p;
    p.cell_ = cell;
    return p;
  }
  /*! \brief Takes a new reference to a borrowed cell (an argument's kTVMFFIRefObject). */
  static ObjectPtr Borrow(TVMFFIRefObject* cell) noexcept {
    detail::RetainCell(cell);
    return Adopt(cell);
  }
  /*! \brief The C view, still owned by this pointer. */
  TVMFFIRefObject* cell() const noexcept { return cell_; }
  /*! \brief Gives the reference up to the caller (a result's new reference). */
  TVMFFIRefObject* Release() noexcept { return std::exchange(cell_, nullptr); }

 private:
  TVMFFIRefObject* cell_ = nullptr;
  template <typename U>
  friend class ObjectPtr;
};

TVM_FFI_DETAIL_HIDDEN_BEGIN
/*! \brief Creates a T (derived from Object) with one reference, held by the result. */
template <typename T, typename... Args>
ObjectPtr<T> make_object(Args&&... args) {  // NOLINT(readability-identifier-naming)
  static_assert(std::is_base_of_v<Object, T>, "make_object<T>: T must derive from Object");
  T* obj = new T(std::forward<Args>(args)...);
  detail::ObjectCells::Init(obj);
  TVMFFIRefObject* cell = detail::ObjectCells::CellOf(obj);
  cell->type->inc_ref(cell);
  return ObjectPtr<T>::Adopt(cell);
}

TVM_FFI_DETAIL_HIDDEN_END

/*! \brief A handle to an object; the base of Function, Module and user handle types. */
class ObjectRef {
 public:
  using ContainerType = Object;
  static constexpr bool _type_is_nullable = true;

  ObjectRef() noexcept = default;
  ObjectRef(std::nullptr_t) noexcept {}  // NOLINT: implicit, like a pointer
  explicit ObjectRef(ObjectPtr<Object> data) noexcept : data_(std::move(data)) {}
  explicit ObjectRef(UnsafeInit) noexcept {}

  bool defined() const noexcept { return static_cast<bool>(data_); }
  const Object* get() const noexcept { return data_.get(); }
  const Object* operator->() const noexcept { return get(); }
  int32_t use_count() const noexcept { return data_.use_count(); }
  bool same_as(const ObjectRef& other) const noexcept { return data_.cell() == other.data_.cell(); }
  bool operator==(std::nullptr_t) const noexcept { return !defined(); }
  bool operator!=(std::nullptr_t) const noexcept { return defined(); }
  /*! \brief The object as a T, or nullptr when it is not one (Object::IsInstance). */
  template <typename T>
  const T* as() const noexcept {
    const Object* obj = get();
    return obj != nullptr && obj->IsInstance<T>() ? static_cast<const T*>(obj) : nullptr;
  }
  /*! \brief The type key of the object ("" when empty). */
  const char* GetTypeKey() const noexcept {
    return data_.cell() != nullptr ? data_.cell()->type->type_key : "";
  }

 protected:
  ObjectPtr<Object> data_;
  friend struct detail::ObjectCells;
};

TVM_FFI_DETAIL_HIDDEN_BEGIN

inline TVMFFIRefObject* detail::ObjectCells::CellOfRef(const ObjectRef& ref) noexcept {
  return ref.data_.cell();
}

namespace detail {
inline bool SameTypeKey(const char* a, const char* b) noexcept {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

/*!
 * \brief Whether `cell` is a T. Functions and modules are told by their flags (they may come
 * from another library or from Python, and are used only through their type's slots). Other
 * classes by their definition, not their type key: another library's type of the same key may
 * have another layout (a rebuilt library loaded beside the old one), so only T's own type, or a
 * C++ object of this library under T's key (a class derived from T that kept its key), is a T.
 */
template <typename T>
bool CellIsA(const TVMFFIRefObject* cell) noexcept {
  if constexpr (std::is_same_v<T, Object>) {
    return true;
  } else {
    constexpr int32_t kFlags = T::_type_ffi_flags & ~TVM_FFI_OBJECT_IS_CXX;
    if constexpr (kFlags != 0) {
      return (cell->type->flags & kFlags) == kFlags;
    } else {
      if constexpr (!std::is_abstract_v<T>) {  // an abstract T has no objects of its own type
        if (TVM_FFI_LIKELY(cell->type == &ObjectTypeOf<T>::kType)) return true;
      }
      // ObjectCells::IncRef is hidden: its address is this library's alone.
      return cell->type->inc_ref == &ObjectCells::IncRef &&
             SameTypeKey(cell->type->type_key, T::_type_key);
    }
  }
}

/*! \brief Whether `cell` has T's type key without being a T: another library's definition. */
template <typename T>
bool CellIsForeignDefinitionOf(const TVMFFIRefObject* cell) noexcept {
  return cell != nullptr && !CellIsA<T>(cell) && SameTypeKey(cell->type->type_key, T::_type_key);
}
}  // namespace detail

template <typename T>
bool Object::IsInstance() const noexcept {
  return detail::CellIsA<T>(&cell_);
}

/*! \brief A handle of type RefType to an object the caller holds a pointer to. */
template <typename RefType, typename ObjType>
RefType GetRef(const ObjType* ptr) {
  TVMFFIRefObject* cell = detail::ObjectCells::CellOf(ptr);
  return RefType(ObjectPtr<typename RefType::ContainerType>::Borrow(cell));
}

/*! \brief An ObjectPtr to an object the caller holds a pointer to. */
template <typename T>
ObjectPtr<T> GetObjectPtr(const T* ptr) {
  return ObjectPtr<T>::Borrow(detail::ObjectCells::CellOf(ptr));
}

}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief Declares an object class's type key inside its body:
 *   struct MyObj : tvm::ffi::Object { TVM_FFI_DECLARE_OBJECT_INFO("my.Obj", MyObj, Object); };
 */
// Ends in a member function definition, so a `;` after the macro is optional, as with
// apache-tvm-ffi's.
#define TVM_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType)        \
  static constexpr const char* _type_key = TypeKey;                       \
  static constexpr int32_t _type_depth = ParentType::_type_depth + 1;     \
  static constexpr bool TvmFfiParentIsNotFinal_() noexcept {              \
    static_assert(!ParentType::_type_final, "the parent type is final");  \
    return true;                                                          \
  }
/*! \brief TVM_FFI_DECLARE_OBJECT_INFO for a class nothing derives from. */
#define TVM_FFI_DECLARE_OBJECT_INFO_FINAL(TypeKey, TypeName, ParentType) \
  static constexpr bool _type_final = true;                              \
  TVM_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType)

/*!
 * \brief The constructors and accessors of a handle class over ObjectName (nullable: a default
 * constructor makes an empty handle). `->` is mutable when ObjectName::_type_mutable is true.
 */
#define TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(TypeName, ParentType, ObjectName) \
  TypeName() = default;                                                             \
  TVM_FFI_DETAIL_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName, true)
/*! \brief TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE without the default constructor. */
#define TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(TypeName, ParentType, ObjectName) \
  TVM_FFI_DETAIL_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName, false)

#define TVM_FFI_DETAIL_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName, Nullable)           \
  explicit TypeName(::tvm::ffi::ObjectPtr<ObjectName> n) noexcept                              \
      : ParentType(::tvm::ffi::ObjectPtr<typename ParentType::ContainerType>(std::move(n))) {} \
  explicit TypeName(::tvm::ffi::UnsafeInit tag) noexcept : ParentType(tag) {}                  \
  TypeName(const TypeName&) = default;                                                         \
  TypeName(TypeName&&) noexcept = default;                                                     \
  TypeName& operator=(const TypeName&) = default;                                              \
  TypeName& operator=(TypeName&&) noexcept = default;                                          \
  using TvmFfiPtrType_ =                                                                       \
      std::conditional_t<ObjectName::_type_mutable, ObjectName*, const ObjectName*>;           \
  TvmFfiPtrType_ operator->() const noexcept { return get(); }                                 \
  TvmFfiPtrType_ get() const noexcept {                                                        \
    return static_cast<TvmFfiPtrType_>(const_cast<::tvm::ffi::Object*>(ParentType::get()));   \
  }                                                                                            \
  static constexpr bool _type_is_nullable = Nullable;                                          \
  using ContainerType = ObjectName

#endif  // TVM_FFI_DETAIL_OBJECT_H_
