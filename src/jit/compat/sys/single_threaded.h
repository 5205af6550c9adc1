/*
 * Stands in for glibc's <sys/single_threaded.h> (glibc 2.32+) when setup.py builds the JIT's
 * launcher object for wheels (TVM_FFI_ZIG): libstdc++ reads __libc_single_threaded to skip
 * atomic reference counts in a single-threaded process, and an object that names it cannot
 * link on an older glibc. 0 ("maybe threaded") keeps the atomic counts, as on such a glibc.
 */
#ifndef TVM_FFI_JIT_COMPAT_SYS_SINGLE_THREADED_H_
#define TVM_FFI_JIT_COMPAT_SYS_SINGLE_THREADED_H_
static const char __libc_single_threaded = 0;
#endif  // TVM_FFI_JIT_COMPAT_SYS_SINGLE_THREADED_H_
