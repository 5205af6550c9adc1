/*
 * Reflection: registering global functions (GlobalDef) and an object type's constructor,
 * methods and fields (ObjectDef) with the runtime's registries (TVMFFIFunctionSetGlobal...,
 * TVMFFITypeRegister*), so any frontend (Python through apache-tvm-ffi or this package)
 * can construct and use the type:
 *
 *   TVM_FFI_STATIC_INIT_BLOCK() {
 *     namespace refl = tvm::ffi::reflection;
 *     refl::ObjectDef<CounterObj>()
 *         .def(refl::init<int64_t>(), "__init__")
 *         .def("add", &CounterObj::Add)
 *         .def_ro("value", &CounterObj::value);
 *     refl::GlobalDef().def("my.counter_total", Total);
 *   }
 */
#ifndef TVM_FFI_REFLECTION_REGISTRY_H_
#define TVM_FFI_REFLECTION_REGISTRY_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/container/variant.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <string>
#include <type_traits>
#include <utility>

// compat: apache-tvm-ffi. The standard headers its registry.h brings along, which code written
// for it names without including them (tests/cpp/test_apache_std_headers.py).
#include <algorithm>
#include <iterator>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {

inline TVMFFIByteArray ByteArrayOf(const char* s) noexcept {
  return TVMFFIByteArray{s, s == nullptr ? 0 : std::char_traits<char>::length(s)};
}

/*! \brief The docstring among a def's extra arguments (the first const char*), or none. */
inline const char* DocOf() noexcept { return nullptr; }
template <typename First, typename... Rest>
const char* DocOf(const First& first, const Rest&... rest) noexcept {
  if constexpr (std::is_convertible_v<const First&, const char*>) {
    return first;
  } else {
    return DocOf(rest...);
  }
}

/*! \brief The object behind a method's `self`, or TypeError naming the method. */
template <typename Class>
Class* SelfOf(const ObjectRef& self, const std::string& method) {
  const Class* obj = self.as<Class>();
  if (TVM_FFI_UNLIKELY(obj == nullptr)) {
    TVM_FFI_THROW(TypeError) << method << "() self must be " << Class::_type_key << ", not "
                             << self.GetTypeKey();
  }
  return const_cast<Class*>(obj);
}

template <typename Class, typename F>
struct MethodAdapter;
#define TVM_FFI_DETAIL_METHOD_ADAPTER(Quals)                                     \
  template <typename Class, typename C, typename R, typename... Args>            \
  struct MethodAdapter<Class, R (C::*)(Args...) Quals> {                         \
    static Function Make(R (C::*f)(Args...) Quals, std::string name) {           \
      return Function::FromTyped(                                                \
          [f, name](ObjectRef self, Args... args) -> R {                         \
            return (SelfOf<Class>(self, name)->*f)(std::forward<Args>(args)...); \
          },                                                                     \
          name);                                                                 \
    }                                                                            \
  };
TVM_FFI_DETAIL_METHOD_ADAPTER()
TVM_FFI_DETAIL_METHOD_ADAPTER(const)
TVM_FFI_DETAIL_METHOD_ADAPTER(noexcept)
TVM_FFI_DETAIL_METHOD_ADAPTER(const noexcept)
#undef TVM_FFI_DETAIL_METHOD_ADAPTER

/*! \brief A field's value out of an object (TVMFFIFieldInfo::getter). */
template <typename T>
int FieldGetter(void* field, TVMFFIAny* result) noexcept {
  try {
    TypeTraits<T>::MoveToAny(T(*static_cast<const T*>(field)), result);
    return 0;
  } catch (...) {
    return RaiseCurrentException("field getter", kStageResult);
  }
}
template <typename T>
int FieldSetter(void* field, const TVMFFIAny* value) noexcept {
  try {
    *static_cast<T*>(field) = ConvertFromView<T>(*value);
    return 0;
  } catch (...) {
    return RaiseCurrentException("field setter", 0);
  }
}

inline void CheckRegistered(int code, const char* operation) {
  if (TVM_FFI_UNLIKELY(code != 0)) throw MoveFromRaised(operation);
}

}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

namespace tvm {
namespace ffi {
namespace reflection {

/*! \brief A constructor to register with ObjectDef::def: make_object<Class>(Args...). */
template <typename... Args>
struct init {
  TVM_FFI_HIDDEN init() noexcept = default;
};

/*! \brief Registers global functions: GlobalDef().def("name", func, "doc"). */
class TVM_FFI_HIDDEN_MEMBERS GlobalDef {
 public:
  template <typename Func, typename... Extra>
  TVM_FFI_HIDDEN GlobalDef& def(const char* name, Func&& func, Extra&&... extra) {
    Register(name, Function::FromTyped(std::forward<Func>(func), name), details::DocOf(extra...));
    return *this;
  }
  /*! \brief A function of the packed convention: func(PackedArgs, Any*). */
  template <typename Func, typename... Extra>
  TVM_FFI_HIDDEN GlobalDef& def_packed(const char* name, Func func, Extra&&... extra) {
    Register(name, Function::FromPacked(std::move(func)), details::DocOf(extra...));
    return *this;
  }

 private:
  TVM_FFI_HIDDEN static void Register(const char* name, const Function& func, const char* doc) {
    TVMFFIMethodInfo info{};
    info.name = details::ByteArrayOf(name);
    info.doc = details::ByteArrayOf(doc);
    info.metadata = details::ByteArrayOf("{}");
    info.flags = 0;
    details::TypeTraits<Function>::CopyToView(func, &info.method);
    details::CheckRegistered(TVMFFIFunctionSetGlobalFromMethodInfo(&info, 0),
                             "TVMFFIFunctionSetGlobalFromMethodInfo");
  }
};

/*!
 * \brief Registers an object type with the runtime: its layout (total size, creator when
 * default-constructible), constructor (`__ffi_init__`), methods and fields.
 */
template <typename Class>
class TVM_FFI_HIDDEN_MEMBERS ObjectDef {
 public:
  /*!
   * Registering the type index also registered its layout (total size, creator: see
   * detail/type_index.h); apache-tvm-ffi's runtime accepts that once per key, so a docstring
   * among `extra` is not registered.
   */
  template <typename... Extra>
  TVM_FFI_HIDDEN explicit ObjectDef(Extra&&...)
      : type_index_(Class::_GetOrAllocRuntimeTypeIndex()) {}
  ObjectDef(const ObjectDef&) = delete;
  ObjectDef& operator=(const ObjectDef&) = delete;

  /*! \brief A method: a member function pointer, or a callable taking the object first. */
  template <typename Func, typename... Extra>
  TVM_FFI_HIDDEN ObjectDef& def(const char* name, Func&& func, Extra&&... extra) {
    RegisterMethod(name, false, MakeMethod(name, std::forward<Func>(func)),
                   details::DocOf(extra...));
    return *this;
  }
  template <typename Func, typename... Extra>
  TVM_FFI_HIDDEN ObjectDef& def_static(const char* name, Func&& func, Extra&&... extra) {
    RegisterMethod(name, true, Function::FromTyped(std::forward<Func>(func), Qualified(name)),
                   details::DocOf(extra...));
    return *this;
  }
  /*! \brief The constructor Python calls: make_object<Class>(Args...). */
  template <typename... Args, typename... Extra>
  TVM_FFI_HIDDEN ObjectDef& def(init<Args...>, Extra&&... extra) {
    Function ctor = Function::FromTyped(
        [](Args... args) { return ObjectRef(make_object<Class>(std::forward<Args>(args)...)); },
        Qualified(kInit));
    RegisterMethod(kInit, true, ctor, details::DocOf(extra...));
    TVMFFIAny value;
    details::TypeTraits<Function>::CopyToView(ctor, &value);
    const TVMFFIByteArray attr = details::ByteArrayOf(kInit);
    details::CheckRegistered(TVMFFITypeRegisterAttr(type_index_, &attr, &value),
                             "TVMFFITypeRegisterAttr");
    return *this;
  }
  template <typename T, typename Base, typename... Extra>
  TVM_FFI_HIDDEN ObjectDef& def_ro(const char* name, T Base::* field, Extra&&... extra) {
    RegisterField(name, field, false, details::DocOf(extra...));
    return *this;
  }
  template <typename T, typename Base, typename... Extra>
  TVM_FFI_HIDDEN ObjectDef& def_rw(const char* name, T Base::* field, Extra&&... extra) {
    RegisterField(name, field, true, details::DocOf(extra...));
    return *this;
  }

 private:
  static constexpr const char* kInit = "__ffi_init__";

  TVM_FFI_HIDDEN static std::string Qualified(const char* name) {
    return std::string(Class::_type_key) + "." + name;
  }
  template <typename Func>
  TVM_FFI_HIDDEN static Function MakeMethod(const char* name, Func&& func) {
    if constexpr (std::is_member_function_pointer_v<std::decay_t<Func>>) {
      return details::MethodAdapter<Class, std::decay_t<Func>>::Make(func, Qualified(name));
    } else {
      return Function::FromTyped(std::forward<Func>(func), Qualified(name));
    }
  }
  TVM_FFI_HIDDEN void RegisterMethod(const char* name, bool is_static, const Function& func,
                                     const char* doc) {
    TVMFFIMethodInfo info{};
    info.name = details::ByteArrayOf(name);
    info.doc = details::ByteArrayOf(doc);
    info.metadata = details::ByteArrayOf("{}");
    info.flags = is_static ? kTVMFFIFieldFlagBitMaskIsStaticMethod : 0;
    details::TypeTraits<Function>::CopyToView(func, &info.method);
    details::CheckRegistered(TVMFFITypeRegisterMethod(type_index_, &info),
                             "TVMFFITypeRegisterMethod");
  }
  template <typename T, typename Base>
  TVM_FFI_HIDDEN void RegisterField(const char* name, T Base::* field, bool writable,
                                    const char* doc) {
    static_assert(std::is_base_of_v<Base, Class>, "the field must be a member of the class");
    // The field's offset from the object header (the Object base, after a vtable if any).
    alignas(Class) static char probe[sizeof(Class)];
    const Class* obj = reinterpret_cast<const Class*>(probe);
    TVMFFIFieldInfo info{};
    info.name = details::ByteArrayOf(name);
    info.doc = details::ByteArrayOf(doc);
    info.metadata = details::ByteArrayOf("{}");
    info.flags = writable ? kTVMFFIFieldFlagBitMaskWritable : 0;
    info.size = sizeof(T);
    info.alignment = alignof(T);
    info.offset = reinterpret_cast<const char*>(&(obj->*field)) -
                  reinterpret_cast<const char*>(static_cast<const Object*>(obj));
    info.getter = &details::FieldGetter<T>;
    info.setter = writable ? reinterpret_cast<void*>(&details::FieldSetter<T>) : nullptr;
    details::SetPOD(&info.default_value_or_factory, kTVMFFINone);
    info.field_static_type_index = kTVMFFIAny;
    details::CheckRegistered(TVMFFITypeRegisterField(type_index_, &info),
                             "TVMFFITypeRegisterField");
  }
  int32_t type_index_;
};

}  // namespace reflection
}  // namespace ffi
}  // namespace tvm

#endif  // TVM_FFI_REFLECTION_REGISTRY_H_
