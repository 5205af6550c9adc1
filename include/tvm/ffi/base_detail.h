/*
 * Compiler helpers every core header uses, and the spellings apache-tvm-ffi's headers define
 * here (TVM_FFI_INLINE, TVM_FFI_UNREACHABLE, TVM_FFI_STATIC_INIT_BLOCK, ...), which code written
 * for it uses on its own helpers.
 */
#ifndef TVM_FFI_BASE_DETAIL_H_
#define TVM_FFI_BASE_DETAIL_H_

#include <tvm/ffi/c_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <type_traits>
#include <utility>

#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_LIKELY(x) __builtin_expect(!!(x), 1)
#define TVM_FFI_UNLIKELY(x) __builtin_expect(!!(x), 0)
/*
 * Inline code of these headers is private to each library (docs/dev/abi.md): a library built
 * with them must never bind to a same-named weak symbol of another library, in particular of
 * one built with apache-tvm-ffi's headers (same mangled names, other bodies). Internals sit
 * between TVM_FFI_DETAIL_HIDDEN_BEGIN/END; the members of public classes, whose types stay of
 * default visibility so user classes may derive from them or hold them without -Wattributes,
 * carry TVM_FFI_HIDDEN one by one.
 */
#define TVM_FFI_HIDDEN __attribute__((visibility("hidden")))
// On the public classes as well: clang ignores TVM_FFI_HIDDEN on member templates of class
// templates, but hides every member of a class marked so while its type (typeinfo) stays
// visible; GCC has no type_visibility and relies on the member attributes.
#if defined(__clang__)
#define TVM_FFI_HIDDEN_MEMBERS __attribute__((visibility("hidden"), type_visibility("default")))
#else
#define TVM_FFI_HIDDEN_MEMBERS
#endif
#define TVM_FFI_DETAIL_HIDDEN_BEGIN _Pragma("GCC visibility push(hidden)")
#define TVM_FFI_DETAIL_HIDDEN_END _Pragma("GCC visibility pop")
#define TVM_FFI_COLD __attribute__((noinline, cold, visibility("hidden")))
#define TVM_FFI_INLINE [[gnu::always_inline]] inline   // compat: apache-tvm-ffi
#define TVM_FFI_NO_INLINE [[gnu::noinline]]            // compat: apache-tvm-ffi
#define TVM_FFI_UNREACHABLE() __builtin_unreachable()  // compat: apache-tvm-ffi
#define TVM_FFI_COLD_CODE [[gnu::cold]]                // compat: apache-tvm-ffi
#define TVM_FFI_FUNC_SIG __PRETTY_FUNCTION__           // compat: apache-tvm-ffi
#else
#define TVM_FFI_LIKELY(x) (x)
#define TVM_FFI_UNLIKELY(x) (x)
#define TVM_FFI_HIDDEN
#define TVM_FFI_HIDDEN_MEMBERS
#define TVM_FFI_DETAIL_HIDDEN_BEGIN
#define TVM_FFI_DETAIL_HIDDEN_END
#define TVM_FFI_COLD __declspec(noinline)
#define TVM_FFI_INLINE __forceinline
#define TVM_FFI_NO_INLINE __declspec(noinline)
#define TVM_FFI_UNREACHABLE() __assume(false)
#define TVM_FFI_COLD_CODE
#define TVM_FFI_FUNC_SIG __FUNCSIG__
#endif
// nvcc's front end warns (1407) where a template of these headers is instantiated with a type
// of an anonymous namespace: the hidden attribute does not apply to that internal-linkage
// instantiation, which is private to the library anyway. Instantiations happen in the user's
// code, after any push/pop pair here would end, so the warning is off for the whole file.
#if defined(__NVCC__)
#pragma nv_diag_suppress 1407
#endif

// compat: apache-tvm-ffi
#define TVM_FFI_PREDICT_FALSE(cond) TVM_FFI_UNLIKELY(cond)
#define TVM_FFI_PREDICT_TRUE(cond) TVM_FFI_LIKELY(cond)

/*! \brief Pastes two tokens after expanding them: TVM_FFI_STR_CONCAT(name_, __LINE__). */
#define TVM_FFI_STR_CONCAT_(x, y) x##y
#define TVM_FFI_STR_CONCAT(x, y) TVM_FFI_STR_CONCAT_(x, y)

// The macros that expand inside user classes leave their members' visibility to the user (a
// class in an anonymous namespace rejects the attribute); the headers' own classes pass
// TVM_FFI_HIDDEN as `Vis` through the TVM_FFI_DETAIL_ forms.
#define TVM_FFI_DETAIL_DEFAULT_COPY_MOVE(TypeName, Vis)     \
  Vis TypeName(const TypeName& other) = default;            \
  Vis TypeName(TypeName&& other) noexcept = default;        \
  Vis TypeName& operator=(const TypeName& other) = default; \
  Vis TypeName& operator=(TypeName&& other) noexcept = default

#define TVM_FFI_DETAIL_COPY_MOVE_HIDDEN(TypeName) \
  TVM_FFI_DETAIL_DEFAULT_COPY_MOVE(TypeName, TVM_FFI_HIDDEN)

/*! \brief Declares the defaulted copy and move constructors and assignments of `TypeName`. */
#define TVM_FFI_DEFINE_DEFAULT_COPY_MOVE_AND_ASSIGN(TypeName) \
  TVM_FFI_DETAIL_DEFAULT_COPY_MOVE(TypeName, /* default */)

/*!
 * \brief A block run when the library is loaded (registrations):
 *   TVM_FFI_STATIC_INIT_BLOCK() { refl::GlobalDef().def("my.f", F); }
 * It runs inside dlopen, where an escaping exception would end the process (std::terminate):
 * an exception is printed to stderr with the block's place instead, and loading goes on.
 */
TVM_FFI_DETAIL_HIDDEN_BEGIN
namespace tvm {
namespace ffi {
namespace details {
TVM_FFI_COLD inline void StaticInitFailed(const char* file, int line, const char* what) {
  std::fprintf(stderr, "%s:%d: TVM_FFI_STATIC_INIT_BLOCK failed: %s\n", file, line, what);
}
inline void RunStaticInit(void (*body)(), const char* file, int line) noexcept {
  try {
    body();
  } catch (const std::exception& e) {
    StaticInitFailed(file, line, e.what());
  } catch (...) {
    StaticInitFailed(file, line, "an exception of unknown type");
  }
}
}  // namespace details
}  // namespace ffi
}  // namespace tvm
TVM_FFI_DETAIL_HIDDEN_END

#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_DETAIL_STATIC_INIT_(Fn)                                     \
  static void Fn();                                                         \
  __attribute__((constructor)) static void TVM_FFI_STR_CONCAT(Fn, _run)() { \
    ::tvm::ffi::details::RunStaticInit(&Fn, __FILE__, __LINE__);            \
  }                                                                         \
  static void Fn()
#else
#define TVM_FFI_DETAIL_STATIC_INIT_(Fn)                                 \
  static void Fn();                                                     \
  [[maybe_unused]] static const int TVM_FFI_STR_CONCAT(Fn, _var) =      \
      (::tvm::ffi::details::RunStaticInit(&Fn, __FILE__, __LINE__), 0); \
  static void Fn()
#endif
#define TVM_FFI_STATIC_INIT_BLOCK() \
  TVM_FFI_DETAIL_STATIC_INIT_(TVM_FFI_STR_CONCAT(TvmFfiStaticInit_, __COUNTER__))

#endif  // TVM_FFI_BASE_DETAIL_H_
