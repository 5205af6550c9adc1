/*
 * The runtime's environment functions: what a library asks of whoever called it (the current
 * stream, a tensor allocator, signal checks, functions of imported modules). They live in
 * libtvm_ffi.so; a binding (the Python core) fills in the answers for the calls it makes.
 */
#ifndef TVM_FFI_EXTRA_C_ENV_API_H_
#define TVM_FFI_EXTRA_C_ENV_API_H_

#include <tvm/ffi/c_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device stream (a cudaStream_t for kDLCUDA). */
typedef void* TVMFFIStreamHandle;

/* Sets the calling thread's stream for one device; *opt_out_original_stream gets the old one. */
TVM_FFI_DLL int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id,
                                   TVMFFIStreamHandle stream,
                                   TVMFFIStreamHandle* opt_out_original_stream);
/* The stream the caller wants work on for that device; NULL means the default stream. */
TVM_FFI_DLL TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id);

/* The allocator TVMFFIEnvTensorAlloc uses: the thread's, or with write_to_global_context the
 * process-wide default. */
TVM_FFI_DLL int TVMFFIEnvSetDLPackManagedTensorAllocator(
    DLPackManagedTensorAllocator allocator, int write_to_global_context,
    DLPackManagedTensorAllocator* opt_out_original_allocator);
TVM_FFI_DLL DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator(void);
/* A new tensor object shaped like prototype (shape, dtype, device), from that allocator. */
TVM_FFI_DLL int TVMFFIEnvTensorAlloc(DLTensor* prototype, TVMFFIObjectHandle* out);

/* -1 with an error set when the frontend has a pending signal (Ctrl-C in Python). */
TVM_FFI_DLL int TVMFFIEnvCheckSignals(void);
/* A frontend registers the C functions the runtime may call back ("PyErr_CheckSignals", ...). */
TVM_FFI_DLL int TVMFFIEnvRegisterCAPI(const char* name, void* symbol);

/* Function func_name of the modules imported by the library whose context is library_ctx. */
TVM_FFI_DLL int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle library_ctx, const char* func_name,
                                              TVMFFIObjectHandle* out);
/* A data symbol the loader fills with *symbol in every library that defines `name`. */
TVM_FFI_DLL int TVMFFIEnvModRegisterContextSymbol(const char* name, void* symbol);
/* A function of the system library (libraries linked into the executable). */
TVM_FFI_DLL int TVMFFIEnvModRegisterSystemLibSymbol(const char* name, void* symbol);

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // TVM_FFI_EXTRA_C_ENV_API_H_
