"""apache-tvm-ffi's CUDA names on a GPU: LaunchEx with a hand-built CUlaunchConfig (cluster +
programmatic stream serialization), with a runtime-API cudaLaunchConfig_t (cluster) and with
cuda_api::ConstructLaunchConfig, a bin2c array through TVM_FFI_EMBED_CUBIN_FROM_BYTES,
GetKernelWithMaxDynamicSharedMemory(name, bytes)
(apache's meaning: dynamic bytes, -1 for the device maximum less the kernel's static memory),
and CUDADeviceGuard switching and restoring devices.

Kernels are compiled here for the GPU's own architecture; inputs are random, outputs poisoned
first, so a kernel that did not run cannot pass.
"""

from __future__ import annotations

import re
import subprocess

import pytest
import torch

from helpers import gpu

pytestmark = pytest.mark.gpu


KERNELS_CU = (
    gpu.ADD_ONE_CU
    + gpu.PDL_PAIR_CU
    + r"""

// 4 KiB of static shared memory next to the dynamic buffer, so "-1" must subtract it.
extern "C" __global__ void smem_reverse(const float* x, float* y, int n) {
  __shared__ float fixed[1024];
  extern __shared__ float buf[];
  fixed[threadIdx.x % 1024] = 1.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    y[i] = 2.0f * buf[n - 1 - i] * fixed[i % 1024];
  }
}

// Each block records its rank in the cluster and the cluster's size (1 without clusters).
extern "C" __global__ void cluster_info(unsigned* out) {
  unsigned rank = 0, size = 1;
#if __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
#endif
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = rank;
    out[2 * blockIdx.x + 1] = size;
  }
}
"""
)

WRAPPER = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/extra/cuda/device_guard.h>
#include <tvm/ffi/extra/stl.h>  // std::vector results, as in apache-tvm-ffi
#include <tvm/ffi/function.h>

#include <vector>

namespace ffi = tvm::ffi;
namespace cuda_api = tvm::ffi::cuda_api;
using ffi::TensorView;

TVM_FFI_EMBED_CUBIN(compat);

static cuda_api::StreamHandle StreamOf(TensorView t) {
  return static_cast<cuda_api::StreamHandle>(
      TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}

// A CUlaunchConfig built by hand, passed in apache-tvm-ffi's argument order.
void ClusterInfoHandBuilt(TensorView out, int64_t blocks, int64_t cluster) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(compat, "cluster_info");
  cuda_api::LaunchAttrType attrs[2];
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = static_cast<unsigned>(cluster);
  attrs[0].value.clusterDim.y = 1;
  attrs[0].value.clusterDim.z = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[1].value.programmaticStreamSerializationAllowed = 1;
  cuda_api::LaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(blocks);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = StreamOf(out);
  config.attrs = attrs;
  config.numAttrs = 2;
  void* p = out.data_ptr();
  void* args[] = {&p};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(kernel.LaunchEx(args, config));
}

// A cudaLaunchConfig_t, as code written for apache-tvm-ffi's runtime-API mode builds it
// (FlashInfer's alphamoe_fused_router.cu): a cluster along x.
void ClusterInfoRuntimeConfig(TensorView out, int64_t blocks, int64_t cluster) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(compat, "cluster_info");
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t launch{};
  launch.gridDim = {static_cast<unsigned>(blocks), 1, 1};
  launch.blockDim = {32, 1, 1};
  launch.stream = StreamOf(out);
  launch.attrs = &attribute;
  launch.numAttrs = 1;
  void* p = out.data_ptr();
  void* args[] = {&p};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(kernel.LaunchEx(args, launch));
}

// The PDL pair, the dependent launched with a hand-built config: clusters of 2 + PSS.
void PdlPairHandBuilt(TensorView x, TensorView tmp, TensorView y) {
  static auto primary = TVM_FFI_EMBED_CUBIN_GET_KERNEL(compat, "pdl_primary");
  static auto secondary = TVM_FFI_EMBED_CUBIN_GET_KERNEL(compat, "pdl_secondary");
  int64_t n = x.size(0);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256 + 1) / 2 * 2;
  void* xp = x.data_ptr();
  void* tp = tmp.data_ptr();
  void* yp = y.data_ptr();
  void* first[] = {&xp, &tp, &n};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      primary.Launch(first, ffi::dim3(blocks), ffi::dim3(256), StreamOf(x)));
  cuda_api::LaunchAttrType attrs[2];
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[0].value.programmaticStreamSerializationAllowed = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[1].value.clusterDim.x = 2;
  attrs[1].value.clusterDim.y = 1;
  attrs[1].value.clusterDim.z = 1;
  cuda_api::LaunchConfig config{};
  config.gridDimX = blocks;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = StreamOf(x);
  config.attrs = attrs;
  config.numAttrs = 2;
  void* second[] = {&tp, &yp, &n};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(secondary.LaunchEx(second, config));
}

// cuda_api::ConstructLaunchConfig, launched both through the kernel and through cuda_api.
void ClusterInfoConstructed(TensorView out, int64_t blocks, int64_t cluster, bool raw) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(compat, "cluster_info");
  cuda_api::LaunchConfig config;
  cuda_api::LaunchAttrType attr;
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(cuda_api::ConstructLaunchConfig(
      kernel.GetHandle(), StreamOf(out), 0, ffi::dim3(static_cast<unsigned>(blocks)),
      ffi::dim3(32), static_cast<int>(cluster), config, attr));
  void* p = out.data_ptr();
  void* args[] = {&p};
  if (raw) {
    TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
        cuda_api::LaunchKernelEx(kernel.GetHandle(), args, config));
  } else {
    TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(kernel.LaunchEx(args, config));
  }
}

// apache-tvm-ffi's GetKernelWithMaxDynamicSharedMemory: the second argument is dynamic bytes;
// limit -2 calls it without one (the default, -1).
void SmemReverse(TensorView x, TensorView y, int64_t limit, int64_t launch_bytes) {
  ffi::CubinKernel kernel =
      limit == -2 ? TVM_FFI_EMBED_CUBIN_GET_MODULE(compat).GetKernelWithMaxDynamicSharedMemory(
                        "smem_reverse")
                  : TVM_FFI_EMBED_CUBIN_GET_MODULE(compat).GetKernelWithMaxDynamicSharedMemory(
                        "smem_reverse", limit);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  int n = static_cast<int>(launch_bytes / 4);
  void* args[] = {&xp, &yp, &n};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(kernel.Launch(args, ffi::dim3(1), ffi::dim3(1024),
                                                        StreamOf(x),
                                                        static_cast<uint32_t>(launch_bytes)));
}

// The current device as the runtime sees it, inside and after guards.
static int64_t RuntimeDevice() {
  int device = -1;
  TVM_FFI_CHECK_CUDA_ERROR(cudaGetDevice(&device));
  return device;
}

std::vector<int64_t> GuardedDevices(int64_t outer, int64_t inner) {
  std::vector<int64_t> seen;
  {
    ffi::CUDADeviceGuard a(static_cast<int>(outer));
    seen.push_back(RuntimeDevice());
    {
      ffi::CUDADeviceGuard b(static_cast<int>(inner));
      seen.push_back(RuntimeDevice());
    }
    seen.push_back(RuntimeDevice());
  }
  seen.push_back(RuntimeDevice());
  return seen;
}

void GuardThenThrow(int64_t device) {
  ffi::CUDADeviceGuard guard(static_cast<int>(device));
  TVM_FFI_THROW(ValueError) << "thrown on device " << RuntimeDevice();
}

int64_t CurrentDevice() { return RuntimeDevice(); }

// The call makes x0's device current (its first tensor); the guard moves the second launch,
// on the legacy default stream (stream 0 runs on the current device), to x1's device.
static void AddOneDefaultStream(TensorView x, TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(compat, "add_one");
  ffi::CUDADeviceGuard guard(x.device().device_id);
  int64_t n = x.size(0);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp, &n};
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      kernel.Launch(args, ffi::dim3((n + 255) / 256), ffi::dim3(256), nullptr));
}

void AddOneBothDefaultStreams(TensorView x0, TensorView y0, TensorView x1, TensorView y1) {
  AddOneDefaultStream(x0, y0);
  AddOneDefaultStream(x1, y1);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(cluster_info_hand_built, ClusterInfoHandBuilt);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cluster_info_runtime_config, ClusterInfoRuntimeConfig);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pdl_pair_hand_built, PdlPairHandBuilt);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cluster_info_constructed, ClusterInfoConstructed);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(smem_reverse, SmemReverse);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(guarded_devices, GuardedDevices);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(guard_then_throw, GuardThenThrow);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(current_device, CurrentDevice);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_both_default_streams, AddOneBothDefaultStreams);
"""

# A wrapper around arrays that bin2c writes (prepended to it): the image as const unsigned
# char[] and as unsigned long long[] (bin2c --type longlong, padded to 8 bytes).
BIN2C_WRAPPER = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

TVM_FFI_EMBED_CUBIN_FROM_BYTES(from_bytes, kernel_image);
TVM_FFI_EMBED_CUBIN_FROM_BYTES(from_words, kernel_words);

static void AddOne(const tvm::ffi::CubinKernel& kernel, tvm::ffi::TensorView x,
                   tvm::ffi::TensorView y) {
  int64_t n = x.size(0);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp, &n};
  CUstream stream =
      static_cast<CUstream>(TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  TVM_FFI_CHECK_CUBIN_LAUNCHER_CUDA_ERROR(
      kernel.Launch(args, tvm::ffi::dim3((n + 255) / 256), tvm::ffi::dim3(256), stream));
}

void AddOneBytes(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = EmbedCubinModule_from_bytes::Global()->mod.GetKernel("add_one");
  AddOne(kernel, x, y);
}

void AddOneWords(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(from_words, "add_one");
  AddOne(kernel, x, y);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_bytes, AddOneBytes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_words, AddOneWords);
"""


@pytest.fixture(scope="module")
def cubin_path(tmp_path_factory):
    return gpu.KernelImages(KERNELS_CU, tmp_path_factory.mktemp("compat")).path(gpu.device_arch())


@pytest.fixture(scope="module")
def module(cubin_path):
    from tvm_ffi import cpp

    return cpp.load_inline(
        "cuda_compat_gpu", cuda_sources=WRAPPER, embed_cubin={"compat": cubin_path.read_bytes()}
    )


@pytest.fixture(scope="module")
def bin2c_module(cubin_path):
    from tvm_ffi import cpp
    from tvm_ffi.cpp._toolchain import find_cuda_tool

    bin2c = str(find_cuda_tool("bin2c"))
    arrays = [
        subprocess.run(
            [bin2c, *flags, str(cubin_path)], capture_output=True, text=True, check=True
        ).stdout
        for flags in (["-c", "-n", "kernel_image"], ["-n", "kernel_words", "--type", "longlong"])
    ]
    return cpp.load_inline("cuda_compat_bin2c", cuda_sources="\n".join(arrays) + BIN2C_WRAPPER)


def _cluster_rows(out):
    return [tuple(row) for row in out.cpu().tolist()]


@pytest.mark.parametrize("cluster", [2, 4])
def test_launch_ex_hand_built_config(module, cluster):
    gpu.needs_hopper("clusters, PDL")
    blocks = 16
    out = torch.full((blocks, 2), 0xDEAD, dtype=torch.int32, device="cuda")
    module.cluster_info_hand_built(out, blocks, cluster)
    torch.cuda.synchronize()
    rows = _cluster_rows(out)
    assert all(size == cluster for _, size in rows), rows
    assert sorted(rank for rank, _ in rows) == sorted(list(range(cluster)) * (blocks // cluster))


@pytest.mark.parametrize("cluster", [2, 4])
def test_launch_ex_runtime_api_config(module, cluster):
    gpu.needs_hopper("clusters")
    blocks = 16
    out = torch.full((blocks, 2), 0xDEAD, dtype=torch.int32, device="cuda")
    module.cluster_info_runtime_config(out, blocks, cluster)
    torch.cuda.synchronize()
    rows = _cluster_rows(out)
    assert all(size == cluster for _, size in rows), rows
    assert sorted(rank for rank, _ in rows) == sorted(list(range(cluster)) * (blocks // cluster))


def test_launch_ex_hand_built_config_pdl(module):
    gpu.needs_hopper("clusters, PDL")
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    tmp = torch.full_like(x, float("nan"))
    y = torch.full_like(x, float("nan"))
    for _ in range(3):
        module.pdl_pair_hand_built(x, tmp, y)
    torch.cuda.synchronize()
    assert torch.equal(y, 3 * x + 1)


@pytest.mark.parametrize("raw", [False, True], ids=["kernel.LaunchEx", "cuda_api.LaunchKernelEx"])
@pytest.mark.parametrize("cluster", [1, 2, 8])
def test_construct_launch_config(module, cluster, raw):
    if cluster > 1:
        gpu.needs_hopper("clusters, PDL")
    blocks = 16
    out = torch.full((blocks, 2), 0xDEAD, dtype=torch.int32, device="cuda")
    module.cluster_info_constructed(out, blocks, cluster, raw)
    torch.cuda.synchronize()
    rows = _cluster_rows(out)
    assert all(size == cluster for _, size in rows), rows
    assert sorted(rank for rank, _ in rows) == sorted(list(range(cluster)) * (blocks // cluster))


def test_construct_launch_config_refuses_cluster_zero(module):
    out = torch.zeros((16, 2), dtype=torch.int32, device="cuda")
    with pytest.raises(RuntimeError, match=r"^CUDA_ERROR_INVALID_VALUE \(1\): invalid argument\n"):
        module.cluster_info_constructed(out, 16, 0, False)


def test_launch_ex_error_names_kernel(module):
    gpu.needs_hopper("clusters, PDL")
    out = torch.zeros((3, 2), dtype=torch.int32, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=re.escape('[cuLaunchKernelEx of kernel "cluster_info" in embedded module "compat"]'),
    ):
        module.cluster_info_hand_built(out, 3, 2)  # 3 blocks are no whole number of clusters


@pytest.mark.parametrize("function", ["add_one_bytes", "add_one_words"])
def test_bin2c_array_from_bytes(bin2c_module, function):
    x = torch.randn(100_003, device="cuda")
    y = torch.full_like(x, float("nan"))
    getattr(bin2c_module, function)(x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


STATIC_SMEM = 4096  # smem_reverse's __shared__ float fixed[1024]


def _optin() -> int:
    return torch.cuda.get_device_properties(0).shared_memory_per_block_optin


def _reverse(module, limit: int, launch_bytes: int) -> None:
    x = torch.randn(launch_bytes // 4, device="cuda")
    y = torch.full_like(x, float("nan"))
    module.smem_reverse(x, y, limit, launch_bytes)
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x.flip(0))


def test_max_dynamic_shared_memory_100k(module):
    if _optin() < 100 * 1024 + STATIC_SMEM:
        pytest.skip(f"the GPU allows {_optin()} bytes of shared memory per block")
    _reverse(module, 100 * 1024, 100 * 1024)


def test_max_dynamic_shared_memory_default_subtracts_static(module):
    # -1 (the default): the device's opt-in maximum less the kernel's own 4 KiB.
    _reverse(module, -2, _optin() - STATIC_SMEM)  # -2: the wrapper's one-argument call
    x = torch.randn((_optin() - STATIC_SMEM) // 4 + 1, device="cuda")
    with pytest.raises(RuntimeError, match=r"^CUDA_ERROR_INVALID_VALUE \(1\)"):
        module.smem_reverse(x, torch.empty_like(x), -2, x.numel() * 4)


def test_max_dynamic_shared_memory_too_large(module):
    optin = _optin()
    x = torch.randn(16, device="cuda")
    with pytest.raises(
        ValueError,
        match=rf'^kernel "smem_reverse" in embedded module "compat": {STATIC_SMEM} bytes of '
        rf"static and {optin} bytes of dynamic shared memory exceed device 0's limit of "
        rf"{optin} bytes per block(\n|$)",
    ):
        module.smem_reverse(x, torch.empty_like(x), optin, 64)


def test_device_guard_same_device(module):
    assert module.guarded_devices(0, 0) == [0, 0, 0, 0]
    assert module.current_device() == 0


def test_device_guard_unknown_device(module):
    count = torch.cuda.device_count()
    noun = "device" if count == 1 else "devices"
    with pytest.raises(
        RuntimeError,
        match=rf"^CUDADeviceGuard\(99\): cuDeviceGet for CUDA device 99: "
        rf"CUDA_ERROR_INVALID_DEVICE \(101\): invalid device ordinal \({count} CUDA {noun} "
        rf"visible\)(\n|$)",
    ):
        module.guarded_devices(99, 0)
    assert module.current_device() == 0


def test_device_guard_switches_and_restores(module):
    gpu.needs_two_gpus()
    torch.cuda.set_device(0)
    assert module.guarded_devices(1, 0) == [1, 0, 1, 0]
    assert module.guarded_devices(1, 1) == [1, 1, 1, 0]
    assert torch.cuda.current_device() == 0
    torch.cuda.set_device(1)
    try:
        assert module.guarded_devices(0, 1) == [0, 1, 0, 1]
        assert torch.cuda.current_device() == 1
    finally:
        torch.cuda.set_device(0)


def test_device_guard_restores_when_unwinding(module):
    gpu.needs_two_gpus()
    torch.cuda.set_device(0)
    with pytest.raises(ValueError, match=r"^thrown on device 1\n"):
        module.guard_then_throw(1)
    assert module.current_device() == 0
    assert torch.cuda.current_device() == 0


def test_device_guard_moves_default_stream_launches(module):
    gpu.needs_two_gpus()
    xs = [torch.randn(70_000, device=f"cuda:{d}") for d in (0, 1)]
    ys = [torch.full_like(x, float("nan")) for x in xs]
    module.add_one_both_default_streams(xs[0], ys[0], xs[1], ys[1])
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    assert torch.equal(ys[0], xs[0] + 1)
    assert torch.equal(ys[1], xs[1] + 1)
    assert torch.cuda.current_device() == 0
