// Launches add_one from an embedded module on 4099 random floats and checks every
// result; shared by the library and the program of this project.
#ifndef APACHE_STYLE_RUN_ADD_ONE_H_
#define APACHE_STYLE_RUN_ADD_ONE_H_

#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

// 0 when every y[i] == x[i] + 1, else 1 with a line on stderr naming `label`.
template <typename GetKernel>
int RunAddOne(const char* label, GetKernel get_kernel) {
  constexpr int64_t kCount = 4099;  // not a multiple of the block size
  float* x_dev = nullptr;
  float* y_dev = nullptr;
  try {
    std::vector<float> x(kCount), y(kCount);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-100.0f, 100.0f);
    for (float& v : x) v = uniform(rng);
    const size_t bytes = kCount * sizeof(float);
    TVM_FFI_CHECK_CUDA_ERROR(cudaMalloc(reinterpret_cast<void**>(&x_dev), bytes));
    TVM_FFI_CHECK_CUDA_ERROR(cudaMalloc(reinterpret_cast<void**>(&y_dev), bytes));
    TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(x_dev, x.data(), bytes, cudaMemcpyHostToDevice));
    TVM_FFI_CHECK_CUDA_ERROR(cudaMemset(y_dev, 0xff, bytes));  // NaN: a skipped element fails
    auto kernel = get_kernel();
    int64_t n = kCount;
    void* args[] = {&x_dev, &y_dev, &n};
    CUresult result = kernel.Launch(args, tvm::ffi::dim3(17), tvm::ffi::dim3(256),
                                    static_cast<CUstream>(nullptr));
    TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
    TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(y.data(), y_dev, bytes, cudaMemcpyDeviceToHost));
    cudaFree(x_dev);
    cudaFree(y_dev);
    for (int64_t i = 0; i < kCount; ++i) {
      if (!(y[i] == x[i] + 1.0f)) {
        std::fprintf(stderr, "%s: y[%lld] = %g, expected %g\n", label,
                     static_cast<long long>(i), y[i], x[i] + 1.0f);
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& err) {
    cudaFree(x_dev);
    cudaFree(y_dev);
    std::fprintf(stderr, "%s: %s\n", label, err.what());
    return 1;
  }
}

#endif  // APACHE_STYLE_RUN_ADD_ONE_H_
