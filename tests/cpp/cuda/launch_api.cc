// Every public entry point of cubin_launcher.h, compiled with -Wall -Wextra -Werror.
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <type_traits>
#include <utility>

using tvm::ffi::CubinKernel;
using tvm::ffi::CubinModule;
// CUDA's headers declare a global ::dim3; the launcher's is tvm::ffi::dim3.
using Dim = tvm::ffi::dim3;
using tvm::ffi::LaunchConfig;
using tvm::ffi::LaunchResult;

// Resource rules: move-only, explicit construction.
static_assert(!std::is_copy_constructible<CubinModule>::value, "");
static_assert(std::is_nothrow_move_constructible<CubinModule>::value, "");
static_assert(!std::is_copy_constructible<CubinKernel>::value, "");
static_assert(std::is_nothrow_move_constructible<CubinKernel>::value, "");
static_assert(!std::is_convertible<const tvm::ffi::Bytes&, CubinModule>::value, "");
static_assert(!std::is_convertible<const char*, CubinModule>::value, "");
static_assert(!std::is_convertible<unsigned, Dim>::value, "1-argument dim3 is explicit");
static_assert(Dim().x == 1 && Dim().y == 1 && Dim().z == 1, "");
static_assert(Dim(4, 5).z == 1 && Dim(4, 5, 6).z == 6, "");
static_assert(std::is_convertible<::dim3, Dim>::value, "CUDA's dim3 is accepted");
// The launch result converts to both APIs' enums and compares with both.
static_assert(std::is_convertible<LaunchResult, CUresult>::value, "");
static_assert(std::is_convertible<LaunchResult, cudaError_t>::value, "");
static_assert(LaunchResult(CUDA_ERROR_INVALID_VALUE) == cudaErrorInvalidValue, "");
static_assert(LaunchResult(CUDA_ERROR_INVALID_VALUE) == CUDA_ERROR_INVALID_VALUE, "");
static_assert(LaunchResult(CUDA_SUCCESS) != cudaErrorInvalidValue, "");
static_assert(cudaSuccess == LaunchResult(CUDA_SUCCESS), "");
static_assert(static_cast<int>(LaunchResult(CUDA_ERROR_NOT_FOUND)) == 500, "");

// The static-size form lives under its own names: a (static, dynamic) pair no longer fits
// the names whose single argument is the dynamic size.
template <typename M, typename = void>
struct TakesStaticAndDynamic : std::false_type {};
template <typename M>
struct TakesStaticAndDynamic<
    M, std::void_t<decltype(std::declval<const M&>().GetKernelWithMaxDynamicSharedMemory(
           "k", size_t{0}, int64_t{0}))>> : std::true_type {};
static_assert(!TakesStaticAndDynamic<CubinModule>::value, "");
template <typename K, typename = void>
struct KernelTakesStaticAndDynamic : std::false_type {};
template <typename K>
struct KernelTakesStaticAndDynamic<
    K, std::void_t<decltype(std::declval<const K&>().SetMaxDynamicSharedMemory(
           size_t{0}, int64_t{0}))>> : std::true_type {};
static_assert(!KernelTakesStaticAndDynamic<CubinKernel>::value, "");

TVM_FFI_EMBED_CUBIN(api_test);

void BothSpellings(void* s) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(api_test, "add_one");
  void* args[] = {nullptr};
  CUresult r1 = kernel.Launch(args, Dim(1), Dim(32), (CUstream)s);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(r1);
  cudaError_t r2 = kernel.Launch(args, Dim(1), Dim(32), (cudaStream_t)s);
  TVM_FFI_CHECK_CUDA_ERROR(r2);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.Launch(args, Dim(1), Dim(32), (CUstream)s, 128));
  TVM_FFI_CHECK_CUDA_ERROR(kernel.Launch(args, Dim(1), Dim(32), (cudaStream_t)s));
  if (kernel.Launch(args, Dim(1), Dim(32), (CUstream)s) != CUDA_SUCCESS) return;
  if (kernel.Launch(args, Dim(1), Dim(32), (cudaStream_t)s) != cudaSuccess) return;
  auto r3 = kernel.Launch(args, ::dim3(4, 2), ::dim3(32), (CUstream)s);
  if (!r3.ok()) TVM_FFI_CHECK_CUDA_DRIVER_ERROR(r3);
}

void Extended(void* s, float* x, float* y, int n) {
  const CubinModule& module = TVM_FFI_EMBED_CUBIN_GET_MODULE(api_test);
  // apache-tvm-ffi's meaning: the second argument is the dynamic shared memory in bytes.
  CubinKernel kernel = module.GetKernelWithMaxDynamicSharedMemory("add_one", 100 * 1024);
  CubinKernel widest = module.GetKernelWithMaxDynamicSharedMemory("add_one");
  CubinKernel given = module.GetKernelWithMaxDynamicSharedMemoryForStatic("add_one", 1024, -1);
  kernel.SetMaxDynamicSharedMemory(200 * 1024);
  widest.SetMaxDynamicSharedMemory();
  given.SetMaxDynamicSharedMemoryForStatic(1024, 200 * 1024);
  given.SetMaxDynamicSharedMemoryForStatic(0);
  LaunchConfig config(Dim(16), Dim(128), (CUstream)s, 4096);
  config.SetCluster(Dim(2, 1, 1))
      .SetClusterSchedulingPolicy(CU_CLUSTER_SCHEDULING_POLICY_SPREAD)
      .SetProgrammaticStreamSerialization(true)
      .SetCooperative(false)
      .SetPriority(0)
      .SetCheckArgs(true);
  CUlaunchAttribute mem_sync{};
  mem_sync.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  mem_sync.value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
  config.AddAttribute(mem_sync);
  void* args[] = {&x, &y, &n};
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.Launch(args, config));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchWithArgs(config, x, y, n));
  kernel.CheckArgs({sizeof(x), sizeof(y), sizeof(n)});

  // Seed 003, option B: the caller's own CUlaunchConfig.
  CUlaunchAttribute attrs[1];
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = 16;
  attrs[0].value.clusterDim.y = 1;
  attrs[0].value.clusterDim.z = 1;
  CUlaunchConfig raw{};
  raw.gridDimX = 16;
  raw.gridDimY = raw.gridDimZ = 1;
  raw.blockDimX = 128;
  raw.blockDimY = raw.blockDimZ = 1;
  raw.hStream = (CUstream)s;
  raw.attrs = attrs;
  raw.numAttrs = 1;
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchEx(args, raw));  // apache-tvm-ffi's order

  CUkernel handle = kernel.GetHandle();
  CUlibrary library = module.GetHandle();
  (void)handle;
  (void)library;
  for (const std::string& name : module.KernelNames()) (void)name;
  (void)kernel.name();
}

void Loading(const tvm::ffi::Bytes& bytes, const char* embedded, const void* data, size_t size) {
  CubinModule from_bytes(bytes);
  CubinModule from_pointer(embedded);
  CubinModule from_sized(data, size);
  CubinModule from_file = CubinModule::FromFile("kernel.cubin");
  CubinKernel kernel = from_bytes["add_one"];
  CubinKernel other = from_file.GetKernel("add_one");
  kernel = std::move(other);
  from_pointer = std::move(from_sized);
}
