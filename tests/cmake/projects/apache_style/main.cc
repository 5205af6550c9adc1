// A program with two images embedded by tvm_ffi_embed_bin_into: a CUBIN from
// $<TARGET_OBJECTS:...> and a fatbin from a file. `apache_exe --sizes` prints their
// sizes (no GPU needed); without arguments it runs add_one from both.
#include <cstdio>
#include <cstring>

#include "run_add_one.h"

TVM_FFI_EMBED_CUBIN(cubin_env);
TVM_FFI_EMBED_CUBIN(from_file);

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--sizes") == 0) {
    std::printf("cubin_env=%zu from_file=%zu\n",
                static_cast<size_t>(__tvm_ffi__cubin_cubin_env_end - __tvm_ffi__cubin_cubin_env),
                static_cast<size_t>(__tvm_ffi__cubin_from_file_end - __tvm_ffi__cubin_from_file));
    return 0;
  }
  int failures = 0;
  failures += RunAddOne("cubin_env", [] { return TVM_FFI_EMBED_CUBIN_GET_KERNEL(cubin_env, "add_one"); });
  failures += RunAddOne("from_file", [] { return TVM_FFI_EMBED_CUBIN_GET_KERNEL(from_file, "add_one"); });
  if (failures != 0) return 1;
  std::printf("apache_exe: OK\n");
  return 0;
}
