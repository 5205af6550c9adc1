/*
 * Compiler helpers shared by the core headers. Plain C++17, no dependencies.
 */
#ifndef TVM_FFI_BASE_H_
#define TVM_FFI_BASE_H_

#if defined(__GNUC__) || defined(__clang__)
/*! \brief Makes a symbol visible outside the shared library even under -fvisibility=hidden. */
#define TVM_FFI_DLL_EXPORT __attribute__((visibility("default")))
/*! \brief Keeps a symbol private to its shared library, so each library gets its own copy. */
#define TVM_FFI_DLL_LOCAL __attribute__((visibility("hidden")))
#define TVM_FFI_LIKELY(x) __builtin_expect(!!(x), 1)
#define TVM_FFI_UNLIKELY(x) __builtin_expect(!!(x), 0)
/*! \brief For error paths: keep them out of the caller's instruction stream. */
#define TVM_FFI_COLD __attribute__((noinline, cold))
/*! \brief Brackets internals whose instantiations no other library should see or bind to. */
#define TVM_FFI_DETAIL_HIDDEN_BEGIN _Pragma("GCC visibility push(hidden)")
#define TVM_FFI_DETAIL_HIDDEN_END _Pragma("GCC visibility pop")
#else
#define TVM_FFI_DLL_EXPORT __declspec(dllexport)
#define TVM_FFI_DLL_LOCAL
#define TVM_FFI_LIKELY(x) (x)
#define TVM_FFI_UNLIKELY(x) (x)
#define TVM_FFI_COLD __declspec(noinline)
#define TVM_FFI_DETAIL_HIDDEN_BEGIN
#define TVM_FFI_DETAIL_HIDDEN_END
#endif

/*
 * TVM_FFI_DETAIL_TLS_MODEL: the TLS model a shared object may use even when the file was
 * compiled without -fPIC (a hidden thread_local otherwise gets local-exec, which ld refuses
 * in a .so: "relocation R_X86_64_TPOFF32 ... recompile with -fPIC"). With -fPIC it is what the
 * compiler picks anyway. nvcc's front end does not know the attribute and says so (1835), but
 * passes it on to the host compiler, which applies it: the _BEGIN/_END pair silences that.
 */
#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_DETAIL_TLS_MODEL __attribute__((tls_model("global-dynamic")))
#else
#define TVM_FFI_DETAIL_TLS_MODEL
#endif
#if defined(__NVCC__)
#define TVM_FFI_DETAIL_TLS_MODEL_BEGIN _Pragma("nv_diag_suppress 1835")
#define TVM_FFI_DETAIL_TLS_MODEL_END _Pragma("nv_diag_default 1835")
#else
#define TVM_FFI_DETAIL_TLS_MODEL_BEGIN
#define TVM_FFI_DETAIL_TLS_MODEL_END
#endif

#endif  // TVM_FFI_BASE_H_
