/*
 * Registration into the process-wide registry (libtvm_ffi, c_api.h):
 *
 *   TVM_FFI_STATIC_INIT_BLOCK() {                       // runs when the library is loaded
 *     tvm::ffi::reflection::GlobalDef().def("my.add", [](int64_t a, int64_t b) { return a + b; });
 *   }
 *   tvm::ffi::reflection::ObjectDef<CounterObj>()       // a class Python can construct
 *       .def(tvm::ffi::reflection::init<int64_t>())     // -> CounterObj(int64_t)
 *       .def("increment", &CounterObj::Increment);      // obj.increment(...) in Python
 *
 * Python finds global functions with tvm_ffi.get_global_func(name), and constructs and uses
 * registered classes through tvm_ffi.register_object(type_key) subclasses of tvm_ffi.Object.
 */
#ifndef TVM_FFI_REFLECTION_REGISTRY_H_
#define TVM_FFI_REFLECTION_REGISTRY_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/detail/object_convert.h>
#include <tvm/ffi/detail/error.h>
#include <tvm/ffi/detail/function.h>
#include <tvm/ffi/detail/object.h>
#include <tvm/ffi/detail/names.h>  // the names apache-tvm-ffi's header brings

#include <cstdio>
#include <exception>
#include <string>
#include <utility>

TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace reflection {

/*! \brief ObjectDef<T>().def(init<Args...>()): construct a T from Args in Python. */
template <typename... Args>
struct init {};

namespace detail {

using ::tvm::ffi::detail::CellIsA;
using ::tvm::ffi::detail::ObjectCells;

template <typename T, typename... Args>
struct InitCall {
  ObjectRef operator()(Args... args) const {
    return ObjectRef(ObjectPtr<Object>(make_object<T>(std::forward<Args>(args)...)));
  }
};

template <typename T>
T* SelfAs(const ObjectRef& self, const char* type_key) {
  TVMFFIRefObject* cell = ObjectCells::CellOfRef(self);
  if (TVM_FFI_UNLIKELY(cell == nullptr || !CellIsA<T>(cell))) {
    if (::tvm::ffi::detail::CellIsForeignDefinitionOf<T>(cell)) {
      throw Error("TypeError",
                  ::tvm::ffi::detail::Concat({"a method of '", type_key, "' called on ",
                                              ::tvm::ffi::detail::ForeignDefinitionText<T>(cell)}));
    }
    throw Error("TypeError", ::tvm::ffi::detail::Concat(
                                 {"a method of '", type_key, "' called on ",
                                  cell == nullptr ? "None" : cell->type->type_key}));
  }
  return static_cast<T*>(ObjectCells::ObjectOf(cell));
}

template <typename T, typename Method, typename R, typename... Args>
struct MethodCall {
  Method method;
  R operator()(ObjectRef self, Args... args) const {
    return (SelfAs<T>(self, T::_type_key)->*method)(std::forward<Args>(args)...);
  }
};

template <typename T, typename Member, typename Field>
struct FieldGet {
  Member field;
  Field operator()(ObjectRef self) const { return SelfAs<T>(self, T::_type_key)->*field; }
};

/*! \brief Where a field's getter is registered: Python reads `obj.name` through it. */
inline std::string FieldMemberName(const char* name) {
  return ::tvm::ffi::detail::Concat({"__ffi_field__", name});
}

template <typename T, typename Method>
struct MethodOf;
template <typename T, typename C, typename R, typename... Args>
struct MethodOf<T, R (C::*)(Args...)> {
  using Call = MethodCall<T, R (C::*)(Args...), R, Args...>;
};
template <typename T, typename C, typename R, typename... Args>
struct MethodOf<T, R (C::*)(Args...) const> {
  using Call = MethodCall<T, R (C::*)(Args...) const, R, Args...>;
};

[[noreturn]] TVM_FFI_COLD inline void ThrowTaken(const char* what, const std::string& name) {
  throw Error("RuntimeError", ::tvm::ffi::detail::Concat({what, " '", name,
                                                         "' is already registered"}));
}

/*!
 * \brief Registers `func` under `name`, replacing an entry another library (or Python) made:
 * a rebuilt library loaded beside the old one registers its names again, and its definitions
 * are the newer. The same name registered twice by this library is a RuntimeError.
 */
inline void SetGlobalFromThisLibrary(const char* name, const Function& func) {
  if (TVMFFIFunctionSetGlobal == nullptr) ::tvm::ffi::detail::ThrowNoRegistry("GlobalDef");
  TVMFFIRefObject* cell = ObjectCells::CellOfRef(func);
  if (TVMFFIFunctionSetGlobal(name, cell, 0) == 0) return;
  TVMFFIRefObject* old = TVMFFIFunctionGetGlobal(name);
  // ObjectCells::IncRef is hidden: only this library's C++ objects have it.
  const bool ours = old != nullptr && old->type->inc_ref == &ObjectCells::IncRef;
  ::tvm::ffi::detail::ReleaseCell(old);
  if (ours) {
    throw Error("RuntimeError",
                ::tvm::ffi::detail::Concat({"global function '", name,
                                            "' is registered twice by the same library"}));
  }
  TVMFFIFunctionSetGlobal(name, cell, 1);
}

inline void RecordStaticInitError(const char* kind, const char* message) noexcept {
  if (TVMFFIInitErrorRecord != nullptr) {
    TVMFFIInitErrorRecord(&::tvm::ffi::detail::kThisLibrary, kind, message);
  } else {
    std::fprintf(stderr, "tvm_ffi: a TVM_FFI_STATIC_INIT_BLOCK failed: %s: %s\n", kind, message);
  }
}

/*!
 * \brief Runs a TVM_FFI_STATIC_INIT_BLOCK body. It runs inside dlopen, where an escaping
 * exception ends the process: a failure is recorded in the registry instead, for the loader
 * (tvm_ffi.load_module raises it), or printed when there is no registry to record it.
 */
inline void RunStaticInit(void (*body)()) noexcept {
  try {
    body();
  } catch (const Error& e) {
    RecordStaticInitError(e.kind().c_str(), e.message().c_str());
  } catch (const std::exception& e) {
    RecordStaticInitError("RuntimeError", e.what());
  } catch (...) {
    RecordStaticInitError("RuntimeError", "a C++ exception of unknown type");
  }
}

}  // namespace detail

/*! \brief Registers global functions: GlobalDef().def("name", callable).def(...). */
class GlobalDef {
 public:
  /*! \brief A typed callable (arguments checked as an exported function's are). */
  template <typename Func, typename... Extra>
  GlobalDef& def(const char* name, Func&& func, Extra&&...) {
    detail::SetGlobalFromThisLibrary(name, Function::FromTyped(std::forward<Func>(func), name));
    return *this;
  }
  /*! \brief A packed callable: func(PackedArgs args, Any* result). */
  template <typename Func, typename... Extra>
  GlobalDef& def_packed(const char* name, Func func, Extra&&...) {
    detail::SetGlobalFromThisLibrary(name, Function::FromPacked(std::move(func)));
    return *this;
  }
};

/*!
 * \brief Registers the constructor and methods of the object class T under T::_type_key.
 * Registering again (a library loaded twice) replaces the earlier members.
 */
template <typename T>
class ObjectDef {
 public:
  ObjectDef() {
    if (TVMFFITypeSetMember == nullptr) ::tvm::ffi::detail::ThrowNoRegistry("ObjectDef");
  }

  /*! \brief The constructor Python's __ffi_init__ calls: T(Args...). */
  template <typename... Args, typename... Extra>
  ObjectDef& def(init<Args...>, Extra&&...) {
    return Member("__ffi_init__", Function::FromTyped(detail::InitCall<T, Args...>{},
                                                     std::string(T::_type_key) + ".__init__"));
  }
  /*! \brief A method: a member function of T (or of a base), called on the object. */
  template <typename Method, typename... Extra>
  ObjectDef& def(const char* name, Method method, Extra&&...) {
    using Call = typename detail::MethodOf<T, Method>::Call;
    return Member(name, Function::FromTyped(Call{method},
                                            std::string(T::_type_key) + "." + name));
  }
  /*! \brief A function of the class that takes no object. */
  template <typename Func, typename... Extra>
  ObjectDef& def_static(const char* name, Func&& func, Extra&&...) {
    return Member(name, Function::FromTyped(std::forward<Func>(func),
                                            std::string(T::_type_key) + "." + name));
  }

  // compat: apache-tvm-ffi (a field Python reads as an attribute, `obj.name`; its value is
  // converted as a result is, at each read)
  template <typename Class, typename Field, typename... Extra>
  ObjectDef& def_ro(const char* name, Field Class::*field, Extra&&...) {
    const std::string member = detail::FieldMemberName(name);
    return Member(member.c_str(),
                  Function::FromTyped(detail::FieldGet<T, Field Class::*, Field>{field},
                                      std::string(T::_type_key) + "." + name));
  }
  // compat: apache-tvm-ffi (here too read-only from Python: assigning raises AttributeError)
  template <typename Class, typename Field, typename... Extra>
  ObjectDef& def_rw(const char* name, Field Class::*field, Extra&&... extra) {
    return def_ro(name, field, std::forward<Extra>(extra)...);
  }

 private:
  ObjectDef& Member(const char* name, const Function& func) {
    if (TVMFFITypeSetMember(T::_type_key, name, detail::ObjectCells::CellOfRef(func), 1) != 0) {
      detail::ThrowTaken("member", std::string(T::_type_key) + "." + name);
    }
    return *this;
  }
};

}  // namespace reflection
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

/*!
 * \brief `TVM_FFI_STATIC_INIT_BLOCK() { ... }`: the block runs once, when the library is
 * loaded, so that its registrations exist before anyone looks. An exception it throws is kept
 * for the loader (detail::RunStaticInit), never let out into the dynamic loader.
 */
#define TVM_FFI_STATIC_INIT_BLOCK() TVM_FFI_DETAIL_STATIC_INIT_BLOCK(__COUNTER__)
// One more expansion, so that __COUNTER__ is a number before it is pasted into names.
#define TVM_FFI_DETAIL_STATIC_INIT_BLOCK(n) TVM_FFI_DETAIL_STATIC_INIT_BLOCK_(n)
#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_DETAIL_STATIC_INIT_BLOCK_(n)                                      \
  static void TvmFfiStaticInitBody_##n();                                         \
  __attribute__((constructor)) static void TvmFfiStaticInit_##n() {               \
    ::tvm::ffi::reflection::detail::RunStaticInit(TvmFfiStaticInitBody_##n);      \
  }                                                                               \
  static void TvmFfiStaticInitBody_##n()
#else
#define TVM_FFI_DETAIL_STATIC_INIT_BLOCK_(n)                                            \
  static void TvmFfiStaticInitBody_##n();                                               \
  [[maybe_unused]] static const int TvmFfiStaticInit_##n =                              \
      (::tvm::ffi::reflection::detail::RunStaticInit(TvmFfiStaticInitBody_##n), 0);    \
  static void TvmFfiStaticInitBody_##n()
#endif

#endif  // TVM_FFI_REFLECTION_REGISTRY_H_
