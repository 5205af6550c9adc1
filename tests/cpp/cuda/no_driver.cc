// Run on a machine without libcuda.so.1: every failure must be a clear tvm::ffi::Error,
// never a crash. Prints "<kind>: <message>" per case for test_cubin_launcher_header.py.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

static void Report(const std::function<void()>& body) {
  try {
    body();
    std::printf("no error\n");
  } catch (const tvm::ffi::Error& err) {
    std::printf("%s: %s\n", err.kind().c_str(), err.message().c_str());
  }
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::ifstream file(argv[1], std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Report([&] { tvm::ffi::CubinModule module{tvm::ffi::Bytes(cubin)}; });
  Report([&] { tvm::ffi::CubinModule module(cubin.data(), 1000); });
  Report([&] { tvm::ffi::CubinModule module("\x12\x34\x56\x78 not an image"); });
  Report([&] { tvm::ffi::CubinModule::FromFile("/nonexistent/k.cubin"); });
  Report([&] {
    tvm::ffi::CubinKernel empty;
    void* args[] = {nullptr};
    TVM_FFI_CHECK_CUDA_DRIVER_ERROR(
        empty.Launch(args, tvm::ffi::dim3(1), tvm::ffi::dim3(1), nullptr));
  });
  Report([&] { TVM_FFI_CHECK_CUDA_ERROR(cudaErrorInvalidValue); });
  Report([&] { TVM_FFI_CHECK_CUDA_DRIVER_ERROR(CUDA_SUCCESS); });
  return 0;
}
