"""Extended launches on Hopper or newer: 200 KiB of dynamic shared memory, thread block
clusters (3-D and a non-portable 16), programmatic dependent launch, cooperative grid sync,
launch priority; and multi-GPU launches of one embedded kernel.

Kernels are compiled here for the GPU's own architecture; inputs are random, outputs
poisoned first.
"""

from __future__ import annotations

import re

import pytest
import torch

from helpers import gpu

pytestmark = pytest.mark.gpu


KERNELS_CU = (
    gpu.ADD_ONE_CU
    + gpu.PDL_PAIR_CU
    + r"""
constexpr int kSmemFloats = 200 * 1024 / 4;

// Stages the input through 200 KiB of dynamic shared memory, reversed.
extern "C" __global__ void smem_reverse(const float* x, float* y) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < kSmemFloats; i += blockDim.x) buf[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < kSmemFloats; i += blockDim.x) {
    y[i] = 2.0f * buf[kSmemFloats - 1 - i];
  }
}

// Each block records: its rank in the cluster, the cluster's size, and the cluster shape.
extern "C" __global__ void cluster_info(unsigned* out) {
  unsigned rank, size, sx, sy, sz;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(sx));
  asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(sy));
  asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(sz));
  if (threadIdx.x == 0) {
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    out[5 * block + 0] = rank;
    out[5 * block + 1] = size;
    out[5 * block + 2] = sx;
    out[5 * block + 3] = sy;
    out[5 * block + 4] = sz;
  }
}

// Cooperative: every block writes, the whole grid meets at a barrier, then each block reads
// what the next block wrote. Only correct if all blocks are resident and the barrier holds.
extern "C" __global__ void grid_rotate(const float* x, float* tmp, float* y, unsigned* arrived) {
  unsigned n = gridDim.x * blockDim.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  tmp[i] = x[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(arrived, 1u);
    while (atomicAdd(arrived, 0u) < gridDim.x) {
    }
  }
  __syncthreads();
  y[i] = ((volatile float*)tmp)[(i + blockDim.x) % n];
}
"""
)

WRAPPER = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

using tvm::ffi::CubinModule;
// CUDA declares a global ::dim3 too; spell the launcher's out.
using Dim = tvm::ffi::dim3;
using tvm::ffi::LaunchConfig;
using tvm::ffi::TensorView;

TVM_FFI_EMBED_CUBIN(ext);

static CUstream StreamOf(TensorView t) {
  return static_cast<CUstream>(TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}

void SmemReverseImage(tvm::ffi::Bytes image, TensorView x, TensorView y, bool opt_in) {
  CubinModule module(image);
  const uint32_t smem = 200 * 1024;
  tvm::ffi::CubinKernel kernel = opt_in
      ? module.GetKernelWithMaxDynamicSharedMemoryForStatic("smem_reverse", 0, smem)
      : module.GetKernel("smem_reverse");
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp};
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.Launch(args, Dim(1), Dim(1024), StreamOf(x), smem));
}

void ClusterInfo(TensorView out, int64_t gx, int64_t gy, int64_t gz, int64_t cx, int64_t cy,
                 int64_t cz) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(ext, "cluster_info");
  LaunchConfig config(Dim(gx, gy, gz), Dim(32), StreamOf(out));
  config.SetCluster(Dim(cx, cy, cz))
      .SetClusterSchedulingPolicy(CU_CLUSTER_SCHEDULING_POLICY_SPREAD)
      .SetCheckArgs(true);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchWithArgs(config, out.data_ptr()));
}

// Seed 003's option B: a raw CUlaunchConfig with a cluster attribute.
void ClusterInfoRaw(TensorView out, int64_t blocks, int64_t cluster) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(ext, "cluster_info");
  CUlaunchAttribute attrs[1];
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = static_cast<unsigned>(cluster);
  attrs[0].value.clusterDim.y = 1;
  attrs[0].value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(blocks);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = StreamOf(out);
  config.attrs = attrs;
  config.numAttrs = 1;
  void* p = out.data_ptr();
  void* args[] = {&p};
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchEx(args, config));
}

void PdlPair(TensorView x, TensorView tmp, TensorView y) {
  static auto primary = TVM_FFI_EMBED_CUBIN_GET_KERNEL(ext, "pdl_primary");
  static auto secondary = TVM_FFI_EMBED_CUBIN_GET_KERNEL(ext, "pdl_secondary");
  int64_t n = x.size(0);
  Dim grid((n + 255) / 256);
  LaunchConfig first(grid, Dim(256), StreamOf(x));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(primary.LaunchWithArgs(first, x.data_ptr(), tmp.data_ptr(), n));
  LaunchConfig second(grid, Dim(256), StreamOf(x));
  second.SetProgrammaticStreamSerialization(true).SetPriority(0);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(
      secondary.LaunchWithArgs(second, tmp.data_ptr(), y.data_ptr(), n));
}

void GridRotate(TensorView x, TensorView tmp, TensorView y, TensorView arrived, int64_t blocks) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(ext, "grid_rotate");
  LaunchConfig config(Dim(blocks), Dim(128), StreamOf(x));
  config.SetCooperative(true);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchWithArgs(
      config, x.data_ptr(), tmp.data_ptr(), y.data_ptr(), arrived.data_ptr()));
}

void AddOne(TensorView x, TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(ext, "add_one");
  int64_t n = x.size(0);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp, &n};
  CUresult r = kernel.Launch(args, Dim((n + 255) / 256), Dim(256), StreamOf(x));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(r);
}

// Tensors of two devices in one call: each launch asks for its own device's stream, which
// also makes that device current, so default (NULL) streams land on the right GPU.
void AddOnePair(TensorView x0, TensorView y0, TensorView x1, TensorView y1) {
  AddOne(x0, y0);
  AddOne(x1, y1);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(smem_reverse, SmemReverseImage);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_pair, AddOnePair);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cluster_info, ClusterInfo);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(cluster_info_raw, ClusterInfoRaw);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pdl_pair, PdlPair);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(grid_rotate, GridRotate);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, AddOne);
"""


@pytest.fixture(scope="module")
def cubin(tmp_path_factory):
    gpu.needs_hopper("the test kernels use sm_90 instructions")
    return gpu.KernelImages(KERNELS_CU, tmp_path_factory.mktemp("ext"))(gpu.device_arch())


@pytest.fixture(scope="module")
def module(cubin):
    from tvm_ffi import cpp

    return cpp.load_inline(
        "cubin_launcher_gpu_ext", cuda_sources=WRAPPER, embed_cubin={"ext": cubin}
    )


def test_dynamic_shared_memory_200k(module, cubin):
    floats = 200 * 1024 // 4
    x = torch.randn(floats, device="cuda")
    y = torch.full_like(x, float("nan"))
    module.smem_reverse(cubin, x, y, True)
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x.flip(0))


def test_dynamic_shared_memory_needs_opt_in(module, cubin):
    x = torch.randn(200 * 1024 // 4, device="cuda")
    y = torch.full_like(x, float("nan"))
    with pytest.raises(
        RuntimeError,
        match=r"^CUDA_ERROR_INVALID_VALUE \(1\): .*\[cuLaunchKernel of kernel \"smem_reverse\" in "
        r"module <\d+-byte image>\]",
    ):
        module.smem_reverse(cubin, x, y, False)


@pytest.mark.parametrize(
    "grid,cluster", [((8, 2, 1), (2, 2, 1)), ((4, 2, 2), (2, 1, 2)), ((8, 1, 1), (8, 1, 1))]
)
def test_cluster_shape_and_rank(module, grid, cluster):
    blocks = grid[0] * grid[1] * grid[2]
    size = cluster[0] * cluster[1] * cluster[2]
    out = torch.full((blocks, 5), 0xDEAD, dtype=torch.int32, device="cuda")
    module.cluster_info(out, *grid, *cluster)
    torch.cuda.synchronize()
    rows = out.cpu().tolist()
    assert all(row[1:] == [size, *cluster] for row in rows), rows
    ranks = sorted(row[0] for row in rows)
    assert ranks == sorted(list(range(size)) * (blocks // size))


def test_non_portable_cluster_of_16(module):
    out = torch.full((32, 5), 0xDEAD, dtype=torch.int32, device="cuda")
    module.cluster_info(out, 32, 1, 1, 16, 1, 1)
    torch.cuda.synchronize()
    rows = out.cpu().tolist()
    assert all(row[1:] == [16, 16, 1, 1] for row in rows), rows
    assert sorted(row[0] for row in rows) == sorted(list(range(16)) * 2)


def test_raw_launch_config_cluster_of_16(module):
    out = torch.full((32, 5), 0xDEAD, dtype=torch.int32, device="cuda")
    module.cluster_info_raw(out, 32, 16)
    torch.cuda.synchronize()
    assert all(row[1:] == [16, 16, 1, 1] for row in out.cpu().tolist())


def test_programmatic_dependent_launch(module):
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    tmp = torch.full_like(x, float("nan"))
    y = torch.full_like(x, float("nan"))
    for _ in range(3):
        module.pdl_pair(x, tmp, y)
    torch.cuda.synchronize()
    assert torch.equal(y, 3 * x + 1)


def test_cooperative_grid_sync(module):
    blocks = torch.cuda.get_device_properties(0).multi_processor_count
    n = blocks * 128
    x = torch.randn(n, device="cuda")
    tmp = torch.full_like(x, float("nan"))
    y = torch.full_like(x, float("nan"))
    arrived = torch.zeros(1, dtype=torch.int32, device="cuda")
    module.grid_rotate(x, tmp, y, arrived, blocks)
    torch.cuda.synchronize()
    assert arrived.item() == blocks
    assert torch.equal(y, x.roll(-128))


def test_cluster_launch_error_names_kernel(module):
    out = torch.zeros((3, 5), dtype=torch.int32, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=re.escape('[cuLaunchKernelEx of kernel "cluster_info" in embedded module "ext"]'),
    ):
        module.cluster_info(out, 3, 1, 1, 2, 1, 1)  # grid not a multiple of the cluster


def test_two_gpus_same_embedded_kernel(module):
    gpu.needs_two_gpus()
    results = []
    for device in (0, 1):
        x = torch.randn(100_000, device=f"cuda:{device}")
        y = torch.full_like(x, float("nan"))
        # A stream of that device: the launch runs in the stream's context.
        stream = torch.cuda.Stream(device=device)
        with torch.cuda.stream(stream):
            module.add_one(x, y)
        stream.synchronize()
        results.append(torch.equal(y, x + 1))
    assert results == [True, True]


def test_two_gpus_default_stream(module):
    gpu.needs_two_gpus()
    for device in (1, 0, 1):
        with torch.cuda.device(device):
            x = torch.randn(50_000, device="cuda")
            y = torch.full_like(x, float("nan"))
            module.add_one(x, y)
            torch.cuda.synchronize()
            assert torch.equal(y, x + 1)


def test_two_gpus_in_one_call_default_streams(module):
    gpu.needs_two_gpus()
    xs = [torch.randn(70_000, device=f"cuda:{d}") for d in (0, 1)]
    ys = [torch.full_like(x, float("nan")) for x in xs]
    for first, second in ((0, 1), (1, 0)):
        for y in ys:
            y.fill_(float("nan"))
        module.add_one_pair(xs[first], ys[first], xs[second], ys[second])
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
        assert torch.equal(ys[0], xs[0] + 1)
        assert torch.equal(ys[1], xs[1] + 1)
    assert torch.cuda.current_device() == 0  # the caller's device is restored


def test_second_gpu_tensor_while_device_0_is_current(module):
    gpu.needs_two_gpus()
    x = torch.randn(30_000, device="cuda:1")
    y = torch.full_like(x, float("nan"))
    assert torch.cuda.current_device() == 0
    module.add_one(x, y)  # default stream: the call runs with device 1 current
    torch.cuda.synchronize(1)
    assert torch.equal(y, x + 1)
    assert torch.cuda.current_device() == 0
