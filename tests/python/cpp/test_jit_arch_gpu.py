"""Kernels built for the spellings of the GPU's own architecture run on it: machine code
(9.0, sm_90), PTX the driver compiles (compute_90), a user's -arch flag, and on Hopper
the architecture-specific sm_90a with a wgmma instruction."""

from __future__ import annotations

import pytest
import torch

from tvm_ffi import cpp

pytestmark = pytest.mark.gpu


SCALE = """
__global__ void scale_kernel(const float* x, float* y, float k, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = k * x[i];
}

void scale(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double k) {
  int64_t n = x.numel();
  auto stream = static_cast<cudaStream_t>(
      TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(
      static_cast<const float*>(x.data_ptr()), static_cast<float*>(y.data_ptr()),
      static_cast<float>(k), n);
}
"""


def _capability() -> tuple[int, int]:
    return torch.cuda.get_device_capability()


def _check(mod) -> None:
    x = torch.randn(1000, device="cuda")
    y = torch.full_like(x, float("nan"))
    mod.scale(x, y, 2.5)
    torch.testing.assert_close(y, 2.5 * x)


@pytest.mark.parametrize("form", ["dotted", "sm", "compute", "flag"])
def test_own_architecture_runs(form):
    major, minor = _capability()
    number = f"{major}{minor}"
    kwargs = {
        "dotted": {"arch": f"{major}.{minor}"},
        "sm": {"arch": f"sm_{number}"},
        "compute": {"arch": f"compute_{number}"},  # PTX only: the driver compiles it
        "flag": {"extra_cuda_cflags": f"-arch=sm_{number}"},
    }[form]
    _check(cpp.load_inline(f"arch_gpu_{form}", cuda_sources=SCALE, functions="scale", **kwargs))


def test_sm90a_kernel_runs_on_hopper():
    if _capability() != (9, 0):
        pytest.skip("sm_90a code runs on compute capability 9.0 only")
    source = SCALE.replace(
        "  if (i < n) y[i] = k * x[i];",
        '  asm volatile("wgmma.fence.sync.aligned;");\n  if (i < n) y[i] = k * x[i];',
    )
    _check(cpp.load_inline("arch_gpu_90a", cuda_sources=source, functions="scale", arch="9.0a"))
