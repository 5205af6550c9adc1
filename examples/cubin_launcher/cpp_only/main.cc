// A plain C++ program, no Python anywhere: the kernel image is embedded in the
// executable (tvm_ffi_target_embed_cubin, NAME add_one_kernels) and launched with
// the header; memory comes from the CUDA runtime.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

TVM_FFI_EMBED_CUBIN(add_one_kernels);

namespace {

constexpr int64_t kNumElements = int64_t{1} << 20;
constexpr unsigned int kThreads = 256;

// Frees the device buffer however main leaves.
struct DeviceBuffer {
  float* ptr = nullptr;
  explicit DeviceBuffer(size_t count) {
    TVM_FFI_CHECK_CUDA_ERROR(cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(float)));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

int Run() {
  std::vector<float> x(kNumElements);
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> uniform(-50.0f, 50.0f);
  for (float& v : x) v = uniform(rng);

  DeviceBuffer x_dev(kNumElements), y_dev(kNumElements);
  const size_t bytes = kNumElements * sizeof(float);
  TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(x_dev.ptr, x.data(), bytes, cudaMemcpyHostToDevice));
  // All-ones bytes are a NaN: any element the kernel skips fails the check below.
  TVM_FFI_CHECK_CUDA_ERROR(cudaMemset(y_dev.ptr, 0xff, bytes));

  auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(add_one_kernels, "add_one");
  int64_t n = kNumElements;
  void* args[] = {&x_dev.ptr, &y_dev.ptr, &n};
  tvm::ffi::dim3 grid(static_cast<unsigned int>((n + kThreads - 1) / kThreads));
  tvm::ffi::dim3 block(kThreads);
  CUresult result = kernel.Launch(args, grid, block, static_cast<CUstream>(nullptr));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
  TVM_FFI_CHECK_CUDA_ERROR(cudaDeviceSynchronize());

  std::vector<float> y(kNumElements);
  TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(y.data(), y_dev.ptr, bytes, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) {
    // One IEEE addition on either side: the results match exactly.
    if (!(y[i] == x[i] + 1.0f)) {
      std::fprintf(stderr, "cpp_only: y[%lld] = %g, expected %g\n", static_cast<long long>(i),
                   y[i], x[i] + 1.0f);
      return 1;
    }
  }
  std::printf("cpp_only: OK (%lld elements)\n", static_cast<long long>(n));
  return 0;
}

}  // namespace

int main() {
  try {
    return Run();
  } catch (const std::exception& err) {
    std::fprintf(stderr, "cpp_only: %s\n", err.what());
    return 1;
  }
}
