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
  if (cell == nullptr || !CellIsA<T>(cell)) {
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

}  // namespace detail

/*! \brief Registers global functions: GlobalDef().def("name", callable).def(...). */
class GlobalDef {
 public:
  /*! \brief A typed callable (arguments checked as an exported function's are). */
  template <typename Func, typename... Extra>
  GlobalDef& def(const char* name, Func&& func, Extra&&...) {
    Function::SetGlobal(name, Function::FromTyped(std::forward<Func>(func), name));
    return *this;
  }
  /*! \brief A packed callable: func(PackedArgs args, Any* result). */
  template <typename Func, typename... Extra>
  GlobalDef& def_packed(const char* name, Func func, Extra&&...) {
    Function::SetGlobal(name, Function::FromPacked(std::move(func)));
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

#define TVM_FFI_DETAIL_CONCAT_(a, b) a##b
#define TVM_FFI_DETAIL_CONCAT(a, b) TVM_FFI_DETAIL_CONCAT_(a, b)
#if defined(__GNUC__) || defined(__clang__)
/*!
 * \brief `TVM_FFI_STATIC_INIT_BLOCK() { ... }`: the block runs once, when the library is
 * loaded (a constructor function), so that its registrations exist before anyone looks.
 */
#define TVM_FFI_STATIC_INIT_BLOCK() \
  __attribute__((constructor)) static void TVM_FFI_DETAIL_CONCAT(TvmFfiStaticInit_, __COUNTER__)()
#else
#define TVM_FFI_STATIC_INIT_BLOCK() \
  TVM_FFI_DETAIL_STATIC_INIT_BLOCK(TVM_FFI_DETAIL_CONCAT(TvmFfiStaticInit_, __COUNTER__))
#define TVM_FFI_DETAIL_STATIC_INIT_BLOCK(Fn)                 \
  static void Fn();                                          \
  [[maybe_unused]] static const int Fn##Registered_ = (Fn(), 0); \
  static void Fn()
#endif

#endif  // TVM_FFI_REFLECTION_REGISTRY_H_
