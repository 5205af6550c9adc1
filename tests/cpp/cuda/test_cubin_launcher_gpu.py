"""cubin_launcher.h on a GPU: embedding through load_inline, both Launch spellings, every way
of loading an image, and the error messages for wrong names, bad images and wrong archs.

Kernels are compiled here with nvcc for the GPU's own architecture; inputs are random and
outputs are poisoned (NaN) first, so a kernel that did not run cannot pass.
"""

from __future__ import annotations

import re

import pytest
import torch

from helpers import gpu

pytestmark = pytest.mark.gpu


KERNELS_CU = r"""
#ifndef DELTA
#define DELTA 1.0f
#endif
extern "C" __global__ void add_one(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + DELTA;
}
extern "C" __global__ void mul_two(float* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
"""

WRAPPER = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/extra/stl.h>  // std::vector results, as in apache-tvm-ffi
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <string>
#include <vector>

using tvm::ffi::CubinKernel;
using tvm::ffi::CubinModule;
using tvm::ffi::TensorView;

TVM_FFI_EMBED_CUBIN(my_cubin);

static CUstream StreamOf(TensorView t) {
  return static_cast<CUstream>(TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}

static void LaunchAddOne(const CubinKernel& kernel, TensorView x, TensorView y) {
  int64_t n = x.size(0);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp, &n};
  CUresult r = kernel.Launch(args, tvm::ffi::dim3((n + 255) / 256), tvm::ffi::dim3(256),
                             StreamOf(x));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(r);
}

// The guide's spelling: driver API types.
void AddOneDriver(TensorView x, TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_cubin, "add_one");
  LaunchAddOne(kernel, x, y);
}

// The review digest's spelling: runtime API types, same call.
void AddOneRuntime(TensorView x, TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_cubin, "add_one");
  int64_t n = x.size(0);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp, &n};
  cudaStream_t stream = static_cast<cudaStream_t>(StreamOf(x));
  cudaError_t r = kernel.Launch(args, tvm::ffi::dim3((n + 255) / 256), tvm::ffi::dim3(256), stream);
  TVM_FFI_CHECK_CUDA_ERROR(r);
}

// Typed launch through LaunchConfig (cuLaunchKernelEx), optionally checked.
void AddOneTyped(TensorView x, TensorView y, bool check) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_cubin, "add_one");
  int64_t n = x.size(0);
  tvm::ffi::LaunchConfig config(tvm::ffi::dim3((n + 255) / 256), tvm::ffi::dim3(256), StreamOf(x));
  config.SetCheckArgs(check);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchWithArgs(config, x.data_ptr(), y.data_ptr(), n));
}

// n passed as a 32-bit int: the kernel takes a 64-bit one.
void AddOneWrongArgs(TensorView x, TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_cubin, "add_one");
  int n = static_cast<int>(x.size(0));
  tvm::ffi::LaunchConfig config(tvm::ffi::dim3(1), tvm::ffi::dim3(256), StreamOf(x));
  config.SetCheckArgs(true);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(kernel.LaunchWithArgs(config, x.data_ptr(), y.data_ptr(), n));
}

void CheckTwoArgs() {
  TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_cubin, "add_one").CheckArgs({sizeof(void*), sizeof(void*)});
}

// A launch the driver refuses (1025 threads per block), to see the error name the kernel.
void AddOneBadLaunch(TensorView x, TensorView y) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(my_cubin, "add_one");
  int64_t n = x.size(0);
  void* xp = x.data_ptr();
  void* yp = y.data_ptr();
  void* args[] = {&xp, &yp, &n};
  CUresult r = kernel.Launch(args, tvm::ffi::dim3(1), tvm::ffi::dim3(1025), StreamOf(x));
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(r);
}

std::vector<std::string> EmbeddedKernelNames() {
  return TVM_FFI_EMBED_CUBIN_GET_MODULE(my_cubin).KernelNames();
}

// Loading at run time; mode: 0 Bytes, 1 pointer + size, 2 pointer alone (self-described).
void AddOneFromImage(tvm::ffi::Bytes image, int64_t mode, TensorView x, TensorView y) {
  if (mode == 0) {
    CubinModule module(image);
    LaunchAddOne(module["add_one"], x, y);
  } else if (mode == 1) {
    std::string copy(image.data(), image.size());
    CubinModule module(copy.data(), copy.size());
    copy.assign(copy.size(), '\0');  // the module must have kept its own copy
    LaunchAddOne(module.GetKernel("add_one"), x, y);
  } else {
    CubinModule module(image.data());
    LaunchAddOne(module.GetKernel("add_one"), x, y);
  }
}

void AddOneFromFile(std::string path, TensorView x, TensorView y) {
  LaunchAddOne(CubinModule::FromFile(path).GetKernel("add_one"), x, y);
}

// The kernel outlives its module object.
void AddOneKernelOutlivesModule(tvm::ffi::Bytes image, TensorView x, TensorView y) {
  CubinKernel kernel;
  {
    CubinModule module(image);
    kernel = module.GetKernel("add_one");
  }
  LaunchAddOne(kernel, x, y);
}

void GetKernelByName(tvm::ffi::Bytes image, std::string name) {
  CubinModule module(image);
  (void)module.GetKernel(name);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_driver, AddOneDriver);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_runtime, AddOneRuntime);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_typed, AddOneTyped);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_wrong_args, AddOneWrongArgs);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(check_two_args, CheckTwoArgs);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_bad_launch, AddOneBadLaunch);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(embedded_kernel_names, EmbeddedKernelNames);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_from_image, AddOneFromImage);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_from_file, AddOneFromFile);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_kernel_outlives_module, AddOneKernelOutlivesModule);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_kernel_by_name, GetKernelByName);
"""


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(arch, kind="cubin", defines=()) -> image bytes of KERNELS_CU, compiled with nvcc."""
    return gpu.KernelImages(KERNELS_CU, tmp_path_factory.mktemp("cubins"))


@pytest.fixture(scope="module")
def module(build):
    from tvm_ffi import cpp

    return cpp.load_inline(
        "cubin_launcher_gpu_test",
        cuda_sources=WRAPPER,
        embed_cubin={"my_cubin": build(gpu.device_arch())},
    )


def _inputs(n: int = 5000, device: str = "cuda"):
    x = torch.randn(n, device=device)
    y = torch.full_like(x, float("nan"))
    return x, y


@pytest.mark.parametrize("spelling", ["add_one_driver", "add_one_runtime"])
def test_embedded_both_spellings(module, spelling):
    x, y = _inputs()
    getattr(module, spelling)(x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


@pytest.mark.parametrize("check", [False, True])
def test_typed_launch(module, check):
    x, y = _inputs(777)
    module.add_one_typed(x, y, check)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_typed_launch_checks_sizes(module):
    x, y = _inputs(10)
    with pytest.raises(
        ValueError,
        match=re.escape(
            'kernel "add_one" in embedded module "my_cubin" takes 3 parameters (sizes 8, 8, 8); '
            "got 3 arguments (sizes 8, 8, 4)"
        ),
    ):
        module.add_one_wrong_args(x, y)
    assert torch.isnan(y).all()  # refused before launching


def test_check_args_count(module):
    with pytest.raises(
        ValueError,
        match=re.escape(
            'kernel "add_one" in embedded module "my_cubin" takes 3 parameters (sizes 8, 8, 8); '
            "got 2 arguments (sizes 8, 8)"
        ),
    ):
        module.check_two_args()


def test_failed_launch_names_kernel_and_module(module):
    x, y = _inputs(10)
    with pytest.raises(
        RuntimeError,
        match=r"^CUDA_ERROR_INVALID_VALUE \(1\): invalid argument "
        + re.escape('[cuLaunchKernel of kernel "add_one" in embedded module "my_cubin"]'),
    ):
        module.add_one_bad_launch(x, y)


def test_kernel_names(module):
    assert sorted(module.embedded_kernel_names()) == ["add_one", "mul_two"]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_load_from_memory(module, build, mode):
    x, y = _inputs()
    module.add_one_from_image(build(gpu.device_arch()), mode, x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_load_from_file(module, build, tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(build(gpu.device_arch()))
    x, y = _inputs()
    module.add_one_from_file(str(path), x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_kernel_outlives_module(module, build):
    x, y = _inputs()
    module.add_one_kernel_outlives_module(build(gpu.device_arch()), x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_ptx_image(module, build):
    x, y = _inputs()
    ptx = build(gpu.device_arch(), "ptx")
    module.add_one_from_image(ptx, 0, x, y)  # sized, maybe without NUL: copied and terminated
    module.add_one_from_image(ptx.rstrip(b"\0"), 1, x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_wrong_kernel_name_lists_kernels(module, build):
    image = build(gpu.device_arch())
    with pytest.raises(RuntimeError) as info:
        module.get_kernel_by_name(image, "add_one_v2")
    message = str(info.value)
    prefix = (
        f'cuLibraryGetKernel("add_one_v2") in module <{len(image)}-byte image>: '
        "CUDA_ERROR_NOT_FOUND (500): named symbol not found; kernels in this module: "
    )
    assert message.startswith(prefix), message
    assert sorted(message[len(prefix) :].split(", ")) == ["add_one", "mul_two"]


def test_corrupt_and_truncated_images(module, build):
    image = build(gpu.device_arch())
    with pytest.raises(
        ValueError, match=r"^cannot load module <1000-byte image>: truncated or corrupt CUBIN"
    ):
        module.get_kernel_by_name(image[:1000], "add_one")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "cannot load module <8-byte image>: not a CUBIN, PTX or fatbin image "
            "(first bytes: de ad be ef)"
        ),
    ):
        module.get_kernel_by_name(bytes.fromhex("deadbeef00000000"), "add_one")


def test_wrong_arch_says_both_archs(module, build):
    device_arch = gpu.device_arch()
    other = "sm_80" if not device_arch.startswith("sm_8") else "sm_90"
    x, y = _inputs(10)
    with pytest.raises(
        RuntimeError, match=rf"image holds {other} \(cubin\) but device 0 is {device_arch}"
    ):
        module.add_one_from_image(build(other), 0, x, y)
    assert torch.isnan(y).all()


def test_fatbin_embed(build):
    from tvm_ffi import cpp

    device_arch = gpu.device_arch()
    other = "sm_75" if device_arch != "sm_75" else "sm_80"
    mod = cpp.load_inline(
        "cubin_launcher_gpu_fatbin",
        cuda_sources=WRAPPER,
        embed_cubin={"my_cubin": {other: build(other), device_arch: build(device_arch)}},
    )
    x, y = _inputs()
    mod.add_one_driver(x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_ptx_embed(build):
    from tvm_ffi import cpp

    mod = cpp.load_inline(
        "cubin_launcher_gpu_ptx",
        cuda_sources=WRAPPER,
        embed_cubin={"my_cubin": build(gpu.device_arch(), "ptx")},
    )
    x, y = _inputs()
    mod.add_one_runtime(x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_two_modules_embed_the_same_name(build):
    """Both libraries declare my_cubin; each must launch its own image."""
    from tvm_ffi import cpp

    arch = gpu.device_arch()
    plus_one = cpp.load_inline(
        "cubin_same_name_a", cuda_sources=WRAPPER, embed_cubin={"my_cubin": build(arch)}
    )
    plus_ten = cpp.load_inline(
        "cubin_same_name_b",
        cuda_sources=WRAPPER,
        embed_cubin={"my_cubin": build(arch, defines=("DELTA=10.0f",))},
    )
    x, y1 = _inputs()
    _, y10 = _inputs()
    plus_ten.add_one_driver(x, y10)
    plus_one.add_one_driver(x, y1)
    torch.cuda.synchronize()
    assert torch.equal(y1, x + 1)
    assert torch.equal(y10, x + 10)


def test_non_default_stream(module):
    x, y = _inputs()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        module.add_one_driver(x, y)
    stream.synchronize()
    assert torch.equal(y, x + 1)


def test_launch_is_captured_by_a_torch_cuda_graph(module):
    # During capture torch's current stream is the capture stream: a launch on any other
    # stream would fail the capture or run eagerly, so replays prove it used the right one.
    x, y = _inputs()
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        module.add_one_driver(x, y)  # warm-up outside capture, as torch recommends
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        module.add_one_driver(x, y)
    for _ in range(2):
        y.fill_(float("nan"))
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, x + 1)
