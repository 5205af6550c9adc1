// Must NOT compile: LaunchWithArgs copies arguments bytewise, so C++ objects are refused.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <string>

void Bad(const tvm::ffi::CubinKernel& kernel) {
  std::string not_a_kernel_argument;
  (void)kernel.LaunchWithArgs(tvm::ffi::LaunchConfig(), not_a_kernel_argument);
}
