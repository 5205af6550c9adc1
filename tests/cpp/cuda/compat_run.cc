// The apache-tvm-ffi compatibility names, run on a CPU machine: ConstructLaunchConfig's
// output, a runtime-API launch configuration as LaunchEx reads it, how TVM_FFI_EMBED_CUBIN_FROM_BYTES sizes and labels its image (validation comes
// before the driver), and what CUDADeviceGuard and cuda_api say without a driver. Prints
// "<case>: <result>" per line for test_apache_compat.py.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/extra/cuda/device_guard.h>

#include <cstdio>
#include <functional>

namespace cuda_api = tvm::ffi::cuda_api;

// A CUBIN header whose section table (10 entries of 64 bytes at offset 1024) ends at byte
// 1664, in a 1000-byte array: bytes, and the same bytes as bin2c --type longlong writes them.
static const unsigned char truncated_bytes[1000] = {
    0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xbe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x0a, 0x00, 0x00, 0x00};
static const unsigned long long truncated_words[125] = {
    0x00000102464c457fULL, 0x0000000000000008ULL, 0x0000000000be0000ULL, 0x0000000000000000ULL,
    0x0000000000000000ULL, 0x0000000000000400ULL, 0x0000000000000000ULL, 0x0000000a00400000ULL};
// Declared without a size, as a bin2c header seen from another file: sized by its content.
extern const unsigned char not_an_image[];
const unsigned char not_an_image[] = {0x12, 0x34, 0x56, 0x78, 0x00};

TVM_FFI_EMBED_CUBIN_FROM_BYTES(truncated_bytes, truncated_bytes);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(truncated_words, truncated_words);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(not_an_image, not_an_image);

static void Report(const char* label, const std::function<void()>& body) {
  try {
    body();
    std::printf("%s: no error\n", label);
  } catch (const tvm::ffi::Error& err) {
    std::printf("%s: %s: %s\n", label, err.kind().c_str(), err.message().c_str());
  }
}

static void PrintConfig(const char* label, cuda_api::ResultType r, const cuda_api::LaunchConfig& c,
                        const cuda_api::LaunchAttrType& attr) {
  std::printf("%s: result %d grid %u %u %u block %u %u %u smem %u stream %p attrs %u", label,
              static_cast<int>(r), c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY,
              c.blockDimZ, c.sharedMemBytes, static_cast<void*>(c.hStream), c.numAttrs);
  if (c.numAttrs == 1) {
    std::printf(" [id %d cluster %u %u %u, points at attr: %s]", static_cast<int>(c.attrs[0].id),
                c.attrs[0].value.clusterDim.x, c.attrs[0].value.clusterDim.y,
                c.attrs[0].value.clusterDim.z, c.attrs == &attr ? "yes" : "no");
  } else {
    std::printf(" [attrs %s]", c.attrs == nullptr ? "null" : "set");
  }
  std::printf("\n");
}

int main() {
  const auto stream = reinterpret_cast<cuda_api::StreamHandle>(0x1234);
  for (int cluster : {4, 1, 0}) {
    cuda_api::LaunchConfig config;
    cuda_api::LaunchAttrType attr;
    const cuda_api::ResultType r = cuda_api::ConstructLaunchConfig(
        nullptr, stream, 4096, tvm::ffi::dim3(8, 2), tvm::ffi::dim3(128), cluster, config, attr);
    char label[32];
    std::snprintf(label, sizeof(label), "cluster %d", cluster);
    PrintConfig(label, r, config, attr);
  }
  {
    // A runtime-API configuration, as code written for apache-tvm-ffi's default mode builds
    // it: the driver's view shares its attributes.
    cudaLaunchAttribute attrs[2] = {};
    attrs[0].id = cudaLaunchAttributeCooperative;
    attrs[0].val.cooperative = 1;
    attrs[1].id = cudaLaunchAttributeClusterDimension;
    attrs[1].val.clusterDim.x = 2;
    attrs[1].val.clusterDim.y = 1;
    attrs[1].val.clusterDim.z = 1;
    cudaLaunchConfig_t runtime{};
    runtime.gridDim = {6, 1, 1};
    runtime.blockDim = {64, 2, 1};
    runtime.dynamicSmemBytes = 512;
    runtime.stream = stream;
    runtime.attrs = attrs;
    runtime.numAttrs = 2;
    const CUlaunchConfig driver = tvm::ffi::details::DriverLaunchConfig(runtime);
    std::printf("runtime config: grid %u %u %u block %u %u %u smem %u stream %p attrs %u [id %d "
                "cooperative %d] [id %d cluster %u] shared: %s\n",
                driver.gridDimX, driver.gridDimY, driver.gridDimZ, driver.blockDimX,
                driver.blockDimY, driver.blockDimZ, driver.sharedMemBytes,
                static_cast<void*>(driver.hStream), driver.numAttrs,
                static_cast<int>(driver.attrs[0].id), driver.attrs[0].value.cooperative,
                static_cast<int>(driver.attrs[1].id), driver.attrs[1].value.clusterDim.x,
                static_cast<void*>(driver.attrs) == static_cast<void*>(attrs) ? "yes" : "no");
    tvm::ffi::CubinKernel empty;
    void* args[] = {nullptr};
    std::printf("runtime config on an empty kernel: %d\n",
                static_cast<int>(empty.LaunchEx(args, runtime)));
  }
  Report("bytes", [] { (void)EmbedCubinModule_truncated_bytes::Global()->mod; });
  Report("bytes again", [] { (void)TVM_FFI_EMBED_CUBIN_GET_MODULE(truncated_bytes); });
  Report("words", [] { (void)EmbedCubinModule_truncated_words::Global()->mod; });
  Report("unsized", [] { (void)TVM_FFI_EMBED_CUBIN_GET_KERNEL(not_an_image, "k"); });
  Report("guard", [] { tvm::ffi::CUDADeviceGuard guard(1); });
  Report("check", [] { TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(CUDA_ERROR_INVALID_VALUE); });
  Report("check success", [] { TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::kSuccess); });
  const char* name = nullptr;
  const char* text = nullptr;
  cuda_api::GetErrorString(CUDA_ERROR_INVALID_VALUE, &name, &text);
  std::printf("error string: %s: %s\n", name, text);
  return 0;
}
