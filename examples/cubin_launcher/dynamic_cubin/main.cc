// Loads a kernel image from a file named on the command line (not embedded), launches
// its scale_add kernel and checks the result:
//   dynamic_cubin path/to/scale_add.cubin
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

namespace {

constexpr int64_t kNumElements = 1000003;  // the last block is partial
constexpr unsigned int kThreads = 256;

struct DeviceBuffer {
  float* ptr = nullptr;
  explicit DeviceBuffer(size_t count) {
    TVM_FFI_CHECK_CUDA_ERROR(cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(float)));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

int Run(const char* path) {
  // A wrong path fails here, before any GPU work.
  auto module = tvm::ffi::CubinModule::FromFile(path);
  auto kernel = module["scale_add"];

  std::vector<float> x(kNumElements);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-10.0f, 10.0f);
  for (float& v : x) v = uniform(rng);
  float a = 2.5f, b = -0.75f;

  DeviceBuffer x_dev(kNumElements), y_dev(kNumElements);
  const size_t bytes = kNumElements * sizeof(float);
  TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(x_dev.ptr, x.data(), bytes, cudaMemcpyHostToDevice));
  TVM_FFI_CHECK_CUDA_ERROR(cudaMemset(y_dev.ptr, 0xff, bytes));  // NaN poison

  int64_t n = kNumElements;
  void* args[] = {&x_dev.ptr, &y_dev.ptr, &a, &b, &n};
  tvm::ffi::dim3 grid(static_cast<unsigned int>((n + kThreads - 1) / kThreads));
  tvm::ffi::dim3 block(kThreads);
  CUresult result = kernel.Launch(args, grid, block, static_cast<CUstream>(nullptr));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
  TVM_FFI_CHECK_CUDA_ERROR(cudaDeviceSynchronize());

  std::vector<float> y(kNumElements);
  TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(y.data(), y_dev.ptr, bytes, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) {
    // The device may fuse the multiply-add; allow for the one rounding it saves.
    float expected = a * x[i] + b;
    if (!(std::fabs(y[i] - expected) <= 1e-5f * (1.0f + std::fabs(expected)))) {
      std::fprintf(stderr, "dynamic_cubin: y[%lld] = %g, expected %g\n",
                   static_cast<long long>(i), y[i], expected);
      return 1;
    }
  }
  std::printf("dynamic_cubin: OK (%lld elements)\n", static_cast<long long>(n));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <kernel image: .cubin, .fatbin or .ptx>\n", argv[0]);
    return 2;
  }
  try {
    return Run(argv[1]);
  } catch (const std::exception& err) {
    std::fprintf(stderr, "dynamic_cubin: %s\n", err.what());
    return 1;
  }
}
