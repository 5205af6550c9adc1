// The C++ side of the Option 1 block: the image embedded as my_kernels, launched by a C
// function for ctypes (mylib_run: 0 when every result is right), and its size.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

TVM_FFI_EMBED_CUBIN(my_kernels);

extern "C" __attribute__((visibility("default"))) size_t mylib_image_size() {
  return static_cast<size_t>(__tvm_ffi__cubin_my_kernels_end - __tvm_ffi__cubin_my_kernels);
}

extern "C" __attribute__((visibility("default"))) int mylib_run() {
  constexpr int64_t kCount = 1000;
  float* x_dev = nullptr;
  float* y_dev = nullptr;
  try {
    std::vector<float> x(kCount), y(kCount);
    for (int64_t i = 0; i < kCount; ++i) x[i] = 0.5f * static_cast<float>(i * 7919 % 1013);
    const size_t bytes = kCount * sizeof(float);
    TVM_FFI_CHECK_CUDA_ERROR(cudaMalloc(reinterpret_cast<void**>(&x_dev), bytes));
    TVM_FFI_CHECK_CUDA_ERROR(cudaMalloc(reinterpret_cast<void**>(&y_dev), bytes));
    TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(x_dev, x.data(), bytes, cudaMemcpyHostToDevice));
    TVM_FFI_CHECK_CUDA_ERROR(cudaMemset(y_dev, 0xff, bytes));  // NaN: a skipped element fails
    auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_kernels, "add_one");
    int64_t n = kCount;
    void* args[] = {&x_dev, &y_dev, &n};
    CUresult result = kernel.Launch(args, tvm::ffi::dim3(4), tvm::ffi::dim3(256),
                                    static_cast<CUstream>(nullptr));
    TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
    TVM_FFI_CHECK_CUDA_ERROR(cudaMemcpy(y.data(), y_dev, bytes, cudaMemcpyDeviceToHost));
    cudaFree(x_dev);
    cudaFree(y_dev);
    for (int64_t i = 0; i < kCount; ++i) {
      if (!(y[i] == x[i] + 1.0f)) {
        std::fprintf(stderr, "mylib: y[%lld] = %g, expected %g\n", static_cast<long long>(i),
                     y[i], x[i] + 1.0f);
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& err) {
    cudaFree(x_dev);
    cudaFree(y_dev);
    std::fprintf(stderr, "mylib: %s\n", err.what());
    return 1;
  }
}
