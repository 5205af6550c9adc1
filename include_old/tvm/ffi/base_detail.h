/*
 * compat: apache-tvm-ffi. The compiler-helper macros apache-tvm-ffi's headers define here and
 * every one of its headers brings; code written for it uses them (TVM_FFI_INLINE on its own
 * helpers, TVM_FFI_UNREACHABLE after a throwing switch). This package's own helpers are in
 * base.h; these are thin spellings of the same compiler features.
 */
#ifndef TVM_FFI_BASE_DETAIL_H_
#define TVM_FFI_BASE_DETAIL_H_

#include <tvm/ffi/base.h>
#include <tvm/ffi/c_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_INLINE [[gnu::always_inline]] inline
#define TVM_FFI_NO_INLINE [[gnu::noinline]]
#define TVM_FFI_UNREACHABLE() __builtin_unreachable()
#define TVM_FFI_COLD_CODE [[gnu::cold]]
#define TVM_FFI_PREDICT_FALSE(cond) (__builtin_expect(static_cast<bool>(cond), 0))
#define TVM_FFI_PREDICT_TRUE(cond) (__builtin_expect(static_cast<bool>(cond), 1))
#define TVM_FFI_UNSAFE_ASSUME(cond)       \
  do {                                    \
    if (!(cond)) __builtin_unreachable(); \
  } while (0)
#define TVM_FFI_FUNC_SIG __PRETTY_FUNCTION__
#else
#define TVM_FFI_INLINE __forceinline
#define TVM_FFI_NO_INLINE __declspec(noinline)
#define TVM_FFI_UNREACHABLE() __assume(false)
#define TVM_FFI_COLD_CODE
#define TVM_FFI_PREDICT_FALSE(cond) (cond)
#define TVM_FFI_PREDICT_TRUE(cond) (cond)
#define TVM_FFI_UNSAFE_ASSUME(cond) __assume(cond)
#define TVM_FFI_FUNC_SIG __FUNCSIG__
#endif

/*! \brief Pastes two tokens after expanding them: TVM_FFI_STR_CONCAT(name_, __LINE__). */
#define TVM_FFI_STR_CONCAT_(x, y) x##y
#define TVM_FFI_STR_CONCAT(x, y) TVM_FFI_STR_CONCAT_(x, y)

/*! \brief Declares the defaulted copy and move constructors and assignments of `TypeName`. */
#define TVM_FFI_DEFINE_DEFAULT_COPY_MOVE_AND_ASSIGN(TypeName) \
  TypeName(const TypeName& other) = default;                  \
  TypeName(TypeName&& other) noexcept = default;              \
  TypeName& operator=(const TypeName& other) = default;       \
  TypeName& operator=(TypeName&& other) noexcept = default;

#endif  // TVM_FFI_BASE_DETAIL_H_
