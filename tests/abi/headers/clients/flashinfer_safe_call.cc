// The hand-written safe-call entries FlashInfer generates for its experimental host shims
// (flashinfer-python 0.7.2.post1, data/csrc/experimental/*/generated/*_binding.cu): the C
// signature, TVM_FFI_SAFE_CALL_BEGIN/END and tvm::ffi::TypeTraits<std::nullptr_t>::CopyToAnyView.
#include <tvm/ffi/function.h>
namespace {
void RunPacked(const tvm::ffi::AnyView* args, int32_t n) {
  TVM_FFI_CHECK(n == 1, ValueError) << "one argument";
  TVM_FFI_ICHECK_EQ(args[0].cast<int64_t>(), 3);
}
}  // namespace
extern "C" {
TVM_FFI_DLL_EXPORT int __tvm_ffi_run(void* self, const TVMFFIAny* args, int32_t num_args,
                                     TVMFFIAny* result) {
  TVM_FFI_SAFE_CALL_BEGIN();
  (void)self;
  RunPacked(reinterpret_cast<const tvm::ffi::AnyView*>(args), num_args);
  tvm::ffi::TypeTraits<std::nullptr_t>::CopyToAnyView(nullptr, result);
  TVM_FFI_SAFE_CALL_END();
}
}
