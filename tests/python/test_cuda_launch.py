"""tvm_ffi.cuda on a GPU: real kernels launched from Python (add, a 2-D grid, scalar
parameters, dynamic shared memory over 48 KiB, clusters, PDL, cooperative grid sync), inputs
from torch, CuPy and JAX, streams, a second GPU, CUDA graph capture, threads, and the exact
errors for bad launches.

Kernels are compiled here with nvcc for the GPU's own architecture; inputs are random and
outputs are poisoned (NaN) first, so a kernel that did not run cannot pass.
"""

from __future__ import annotations

import ctypes
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from helpers import gpu

pytestmark = pytest.mark.gpu


KERNELS_CU = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void grid2d(float* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) out[y * width + x] = y * 1000.0f + x;
}

extern "C" __global__ void scalars(double* out, float f, long long q, double d, int i,
                                   unsigned char c) {
  out[0] = f;
  out[1] = (double)q;
  out[2] = d;
  out[3] = i;
  out[4] = c;
}

// Reverses n floats through dynamic shared memory.
extern "C" __global__ void reverse_smem(const float* in, float* out, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}

extern "C" __global__ void fill(float* x, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

#if __CUDA_ARCH__ >= 900
extern "C" __global__ void cluster_rank(int* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = (int)cg::this_cluster().block_rank();
}

// PDL: the secondary kernel may start early; it waits for the primary's results.
extern "C" __global__ void pdl_primary(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * i;
  cudaTriggerProgrammaticLaunchCompletion();
}
extern "C" __global__ void pdl_secondary(const float* x, float* y, int n) {
  cudaGridDependencySynchronize();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
#endif

// Every block writes its part, the grid syncs, then block 0 sums all parts.
extern "C" __global__ void coop_sum(float* parts, float* total) {
  if (threadIdx.x == 0) parts[blockIdx.x] = blockIdx.x + 1.0f;
  cg::this_grid().sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    float s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += parts[b];
    *total = s;
  }
}

__global__ void mangled_add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
"""

KERNEL_NAMES = {
    "add",
    "grid2d",
    "scalars",
    "reverse_smem",
    "fill",
    "coop_sum",
    "_Z15mangled_add_onePfi",
}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(arch, kind="cubin") -> image bytes of KERNELS_CU, compiled with nvcc."""
    return gpu.KernelImages(KERNELS_CU, tmp_path_factory.mktemp("cuda_launch"))


@pytest.fixture(scope="module")
def image(build):
    return build(gpu.device_arch())


@pytest.fixture(scope="module")
def mod(image):
    from tvm_ffi.cuda import CubinModule

    return CubinModule(image)


def _label(image: bytes) -> str:
    return re.escape(f"module <{len(image)}-byte image>")


def _inputs(n: int = 5000, device: str = "cuda"):
    a = torch.randn(n, device=device)
    b = torch.randn(n, device=device)
    out = torch.full_like(a, float("nan"))
    return a, b, out


# ---- results ------------------------------------------------------------------------------


def test_add_short_form(mod):
    a, b, out = _inputs()
    n = a.numel()
    mod["add"][(n + 255) // 256, 256](a, b, out, n)
    torch.testing.assert_close(out, a + b)


def test_add_launch_form(mod):
    a, b, out = _inputs()
    n = a.numel()
    mod.get_kernel("add").launch((n + 127) // 128, (128,), [a, b, out, n])
    torch.testing.assert_close(out, a + b)


def test_layout_read_from_image(mod):
    assert mod["add"].param_layout == [(0, 8), (8, 8), (16, 8), (24, 4)]
    assert mod["scalars"].param_layout == [(0, 8), (8, 4), (16, 8), (24, 8), (32, 4), (36, 1)]


def test_2d_grid(mod):
    width, height = 100, 37
    out = torch.full((height, width), float("nan"), device="cuda")
    mod["grid2d"][((width + 15) // 16, (height + 15) // 16), (16, 16)](out, width, height)
    ys, xs = torch.meshgrid(
        torch.arange(height, device="cuda"), torch.arange(width, device="cuda"), indexing="ij"
    )
    torch.testing.assert_close(out, (ys * 1000 + xs).float())


def test_scalar_parameters(mod):
    out = torch.full((5,), float("nan"), device="cuda", dtype=torch.float64)
    mod["scalars"][1, 1](out, 1.5, -(2**40) - 3, 0.1, -7, 200)
    assert out.tolist() == [1.5, float(-(2**40) - 3), 0.1, -7.0, 200.0]


def test_numpy_and_ctypes_scalars(mod):
    import numpy

    out = torch.full((5,), float("nan"), device="cuda", dtype=torch.float64)
    args = (out, numpy.float32(2.5), numpy.int64(9), ctypes.c_double(0.25), ctypes.c_int(3))
    mod["scalars"][1, 1](*args, numpy.uint8(5))
    assert out.tolist() == [2.5, 9.0, 0.25, 3.0, 5.0]


def test_mangled_name(mod):
    x = torch.randn(300, device="cuda")
    want = x + 1
    mod["_Z15mangled_add_onePfi"][2, 256](x, 300)
    torch.testing.assert_close(x, want)


def test_kernel_names(mod):
    names = set(mod.kernel_names)
    assert names >= KERNEL_NAMES


def test_dynamic_shared_memory_over_48k(image):
    from tvm_ffi.cuda import CubinModule

    kernel = CubinModule(image)["reverse_smem"]
    n = 16 * 1024  # 64 KiB of floats
    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    with pytest.raises(
        ValueError,
        match=rf'^kernel "reverse_smem" in {_label(image)}: shared_mem=65536 exceeds the '
        r"kernel's limit of \d+ bytes on device 0; raise it with "
        r"kernel\.set_max_dynamic_shared_memory\(\)$",
    ):
        kernel[1, 256, None, 4 * n](x, out, n)
    kernel.set_max_dynamic_shared_memory(4 * n)
    kernel.launch(1, 256, (x, out, n), shared_mem=4 * n)
    torch.testing.assert_close(out, x.flip(0))


def test_path_and_arch_mapping(build, image, tmp_path):
    from tvm_ffi.cuda import CubinModule

    path = tmp_path / "k.cubin"
    path.write_bytes(image)
    other = "sm_80" if not gpu.device_arch().startswith("sm_8") else "sm_90"
    for source in (path, str(path), {gpu.device_arch(): image, other: build(other)}):
        a, b, out = _inputs(1000)
        CubinModule(source)["add"][4, 256](a, b, out, 1000)
        torch.testing.assert_close(out, a + b)
    assert repr(CubinModule(path)) == f'<tvm_ffi.cuda.CubinModule module "{path}">'


def test_ptx_and_fatbin(build):
    from tvm_ffi.cuda import CubinModule

    for kind in ("ptx", "fatbin"):
        kernel = CubinModule(build(gpu.device_arch(), kind))["add"]
        a, b, out = _inputs(1000)
        kernel[4, 256](a, b, out, 1000)
        torch.testing.assert_close(out, a + b)


def test_with_signature_and_raw_pointers(mod):
    a, b, out = _inputs(1000)
    kernel = mod["add"].with_signature("const float* a, const float* b, float* out, int n")
    stream = torch.cuda.current_stream().cuda_stream
    kernel[4, 256, stream](a.data_ptr(), b.data_ptr(), out.data_ptr(), 1000)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b)


# ---- launch attributes --------------------------------------------------------------------


needs_sm90 = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability(0) < (9, 0),
    reason="needs sm_90 or newer",
)


@needs_sm90
def test_cluster_rank(mod):
    from tvm_ffi.cuda import LaunchConfig

    out = torch.full((8,), -1, device="cuda", dtype=torch.int32)
    mod["cluster_rank"].launch(8, 32, [out], config=LaunchConfig(cluster=(2, 1, 1)))
    assert out.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    cfg = LaunchConfig(cluster=4, cluster_scheduling="spread")
    mod["cluster_rank"].launch(8, 32, [out], config=cfg)
    assert out.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


@needs_sm90
def test_pdl(mod):
    from tvm_ffi.cuda import LaunchConfig

    n = 4096
    x = torch.full((n,), float("nan"), device="cuda")
    y = torch.full_like(x, float("nan"))
    mod["pdl_primary"][n // 256, 256](x, n)
    mod["pdl_secondary"].launch(n // 256, 256, (x, y, n), config=LaunchConfig(pdl=True))
    torch.testing.assert_close(y, torch.arange(n, device="cuda", dtype=torch.float32) * 2 + 1)


def test_cooperative_grid_sync(mod):
    from tvm_ffi.cuda import LaunchConfig

    blocks = 8
    parts = torch.full((blocks,), float("nan"), device="cuda")
    total = torch.full((1,), float("nan"), device="cuda")
    mod["coop_sum"].launch(blocks, 32, (parts, total), config=LaunchConfig(cooperative=True))
    assert total.item() == blocks * (blocks + 1) / 2


# ---- frameworks, streams, devices, graphs, threads ----------------------------------------


def test_torch_current_stream_and_explicit_streams(mod):
    s = torch.cuda.Stream()
    a, b, out = _inputs()
    n = a.numel()
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        mod["add"][(n + 255) // 256, 256](a, b, out, n)
    s.synchronize()
    torch.testing.assert_close(out, a + b)

    class StreamLike:
        def __cuda_stream__(self):
            return (0, s.cuda_stream)

    for stream in (s, s.cuda_stream, StreamLike()):
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        mod["add"].launch((n + 255) // 256, 256, (a, b, out, n), stream=stream)
        s.synchronize()
        torch.testing.assert_close(out, a + b)


def test_graph_capture(mod):
    a, b, out = _inputs()
    n = a.numel()
    kernel = mod["add"]
    kernel[(n + 255) // 256, 256](a, b, out, n)  # warm-up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel[(n + 255) // 256, 256](a, b, out, n)
    out.fill_(float("nan"))
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b)


def test_threads(mod):
    kernel = mod["fill"]

    def work(i: int) -> bool:
        x = torch.full((1000,), float("nan"), device="cuda")
        for _ in range(50):
            kernel[4, 256](x, float(i), 1000)
        torch.cuda.current_stream().synchronize()
        return bool((x == i).all())

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(16)))


def test_cupy_inputs(mod):
    cupy = pytest.importorskip("cupy")
    a = cupy.random.randn(1000).astype(cupy.float32)
    b = cupy.random.randn(1000).astype(cupy.float32)
    out = cupy.full(1000, cupy.nan, dtype=cupy.float32)
    stream = cupy.cuda.Stream()
    mod["add"].launch(4, 256, (a, b, out, 1000), stream=stream)
    stream.synchronize()
    assert bool(cupy.allclose(out, a + b))


def test_jax_inputs(mod):
    jax = pytest.importorskip("jax")
    if jax.devices()[0].platform != "gpu":
        pytest.skip("needs JAX with a GPU backend")
    a = jax.numpy.arange(1000, dtype=jax.numpy.float32)
    b = jax.numpy.ones(1000, dtype=jax.numpy.float32)
    a.block_until_ready()
    b.block_until_ready()
    out = torch.full((1000,), float("nan"), device="cuda")
    mod["add"][4, 256](a, b, out, 1000)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.arange(1000, device="cuda", dtype=torch.float32) + 1)


def test_launch_from_another_context_enters_the_tensors_and_restores(mod):
    # One GPU's stand-in for the second-GPU case below: a context that is not the device's
    # primary one is current (as the other device's would be); the launch must run in the
    # tensors' primary context and leave the caller's context current afterwards.
    a, b, out = _inputs(1000)
    with gpu.foreign_context() as ctx:
        mod["add"][4, 256](a, b, out, 1000)
        mod["add"].launch(4, 256, (a, b, out, 1000), stream=0)
        assert ctx.current() == ctx.other
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b)


def test_second_gpu(build, image):
    gpu.needs_two_gpus()
    from tvm_ffi.cuda import CubinModule

    if gpu.device_arch(1) != gpu.device_arch(0):
        pytest.skip("the two GPUs differ in architecture")
    kernel = CubinModule(image)["add"]
    a, b, out = _inputs(1000, "cuda:1")
    torch.cuda.set_device(0)
    kernel[4, 256](a, b, out, 1000)
    torch.cuda.synchronize(1)
    torch.testing.assert_close(out, a + b)
    assert torch.cuda.current_device() == 0
    a0 = a.to("cuda:0")
    with pytest.raises(
        ValueError,
        match=rf'^kernel "add" in {_label(image)}: argument 2: the tensor is on cuda:1 but '
        r"argument 1 is on cuda:0$",
    ):
        kernel[4, 256](a0, b, out, 1000)


# ---- errors -------------------------------------------------------------------------------


def test_missing_kernel_lists_kernels(mod, image):
    with pytest.raises(KeyError) as info:
        mod["nope"]
    message = info.value.args[0]
    assert message.startswith(
        f'cuLibraryGetKernel("nope") in module <{len(image)}-byte image>: CUDA_ERROR_NOT_FOUND '
        "(500): named symbol not found; kernels in this module: "
    )
    assert set(message.split(": ")[-1].split(", ")) >= KERNEL_NAMES


def test_argument_errors(mod, image):
    who = rf'kernel "add" in {_label(image)}'
    a, b, out = _inputs(1000)
    kernel = mod["add"]
    with pytest.raises(TypeError, match=rf"^{who} takes 4 arguments \(got 3\)$"):
        kernel[4, 256](a, b, out)
    with pytest.raises(TypeError, match=rf"^{who}: argument 4: a float cannot be passed as int32$"):
        kernel.with_signature("float*, float*, float*, int")[4, 256](a, b, out, 1.5)
    with pytest.raises(
        ValueError,
        match=rf"^{who}: argument 4: 4294967296 is out of range for the 4-byte parameter "
        r"\(-2147483648 to 4294967295\)$",
    ):
        kernel[4, 256](a, b, out, 2**32)
    with pytest.raises(
        ValueError,
        match=rf"^{who}: argument 2: the tensor is on cpu:0; a kernel takes tensors on a CUDA "
        r"device$",
    ):
        kernel[4, 256](a, b.cpu(), out, 1000)
    with pytest.raises(
        ValueError,
        match=rf"^{who}: the signature 'float\*, int' gives 2 parameters \(sizes 8, 4\) but the "
        r"kernel takes 4 parameters \(sizes 8, 8, 8, 4\)$",
    ):
        kernel.with_signature("float*, int")


def test_grid_and_block_errors(mod, image):
    who = rf'kernel "add" in {_label(image)}'
    a, b, out = _inputs(1000)
    kernel = mod["add"]
    with pytest.raises(
        ValueError, match=r"^grid must be 1 to 3 ints from 1 to 4294967295 \(got \(0, 1\)\)$"
    ):
        kernel[(0, 1), 256](a, b, out, 1000)
    with pytest.raises(
        ValueError, match=r"^block must be 1 to 3 ints from 1 to 4294967295 \(got 0\)$"
    ):
        kernel.launch(1, 0, (a, b, out, 1000))
    with pytest.raises(
        ValueError,
        match=rf"^{who}: block \(2048, 1, 1\) has 2048 threads; device 0 allows at most 1024 "
        r"per block$",
    ):
        kernel[1, 2048](a, b, out, 1000)
    with pytest.raises(
        ValueError,
        match=rf"^{who}: block \(1, 1, 128\) exceeds device 0's limit of \(1024, 1024, 64\)$",
    ):
        kernel[1, (1, 1, 128)](a, b, out, 1000)
    with pytest.raises(TypeError, match=r"^kernel\[\.\.\.\] takes grid, block and optionally"):
        kernel[1](a, b, out, 1000)
    with pytest.raises(TypeError, match=r"^stream must be an int handle, an object with "):
        kernel[1, 1, "s"](a, b, out, 1000)


def test_cuda_error_names_kernel_and_module(mod, image):
    from tvm_ffi.cuda import LaunchConfig

    parts = torch.zeros(1 << 20, device="cuda")
    total = torch.zeros(1, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=rf"^CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE \(720\): .* \[cuLaunchKernelEx of kernel "
        rf'"coop_sum" in {_label(image)}\]$',
    ):
        mod["coop_sum"].launch(1 << 20, 1024, (parts, total), config=LaunchConfig(cooperative=True))
