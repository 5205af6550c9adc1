"""Launch a Triton kernel's CUBIN from C++ through an embedded module.

Triton compiles on the first launch and returns the compiled kernel; its ``.kernel``
attribute is the CUBIN. The C++ side then needs what Triton's own launcher knows:

* the parameters: the non-constexpr arguments in order, then (Triton >= 3.5) two hidden
  pointers, the global and the profile scratch buffers; NULL is right for both when
  the kernel asked for no scratch (checked below);
* the block size: ``num_warps * 32`` threads;
* the dynamic shared memory: ``metadata.shared`` bytes.

Needs a CUDA GPU, torch with CUDA, Triton 3.5 or newer and nvcc.

    python examples/cubin_launcher/example_triton_cubin.py
"""

import torch
import triton
import triton.language as tl

from tvm_ffi import cpp


@triton.jit
def scaled_square(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, scale * x * x, mask=mask)


BLOCK = 1024

WRAPPER_TEMPLATE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

#include <cstdint>

TVM_FFI_EMBED_CUBIN(triton_image);

// Filled in from the compiled kernel's metadata (see the Python side).
constexpr unsigned kElementsPerProgram = @BLOCK@;
constexpr unsigned kThreads = @THREADS@;
constexpr uint32_t kDynamicSmem = @SMEM@;

void ScaledSquare(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double scale) {
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA && y.device().device_type == kDLCUDA, ValueError)
      << "x and y must be CUDA tensors";
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(triton_image, "@NAME@");

  void* x_ptr = x.data_ptr();
  void* y_ptr = y.data_ptr();
  int32_t n = static_cast<int32_t>(x.numel());  // Triton passes a small int as i32
  float scale32 = static_cast<float>(scale);    // and a Python float as fp32
  void* global_scratch = nullptr;
  void* profile_scratch = nullptr;
  void* args[] = {&x_ptr, &y_ptr, &n, &scale32, &global_scratch, &profile_scratch};

  tvm::ffi::dim3 grid((static_cast<unsigned>(n) + kElementsPerProgram - 1) / kElementsPerProgram);
  tvm::ffi::dim3 block(kThreads);
  DLDevice device = x.device();
  CUstream stream = static_cast<CUstream>(TVMFFIEnvGetStream(device.device_type, device.device_id));
  CUresult result = kernel.Launch(args, grid, block, stream, kDynamicSmem);
  TVM_FFI_CHECK_CUDA_DRIVER_ERROR(result);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(scaled_square, ScaledSquare);
"""


def main() -> None:
    version = tuple(int(part) for part in triton.__version__.split(".")[:2])
    assert version >= (3, 5), f"this example needs Triton >= 3.5 (found {triton.__version__})"

    torch.manual_seed(0)
    # Triton specialises integer arguments: n == 1 becomes a constant (and leaves the
    # parameter list), and n % 16 == 0 is compiled in as an alignment promise. An n that
    # is neither gives a kernel that is valid for every n we pass later.
    n = 50_001
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)

    # Launching once compiles; the launch returns the compiled kernel.
    grid = (triton.cdiv(n, BLOCK),)
    compiled_kernel = scaled_square[grid](x, y, n, 0.5, BLOCK=BLOCK)
    torch.testing.assert_close(y, 0.5 * x * x)

    meta = compiled_kernel.metadata
    for scratch in ("global_scratch_size", "profile_scratch_size"):
        assert getattr(meta, scratch, 0) == 0, f"{scratch} > 0: the kernel needs a scratch buffer"
    # Above 48 KiB a kernel must opt in first (GetKernelWithMaxDynamicSharedMemory).
    assert meta.shared <= 48 * 1024, f"kernel uses {meta.shared} bytes of shared memory"
    source = (
        WRAPPER_TEMPLATE.replace("@NAME@", compiled_kernel.name)
        .replace("@BLOCK@", str(BLOCK))
        .replace("@THREADS@", str(meta.num_warps * 32))
        .replace("@SMEM@", str(meta.shared))
    )
    mod = cpp.load_inline(
        "example_triton_scaled_square",
        cuda_sources=source,
        embed_cubin={"triton_image": compiled_kernel.kernel},
    )

    for size in (n, 4099, 3):
        x = torch.randn(size, device="cuda")
        y = torch.full_like(x, float("nan"))
        mod.scaled_square(x, y, 0.5)
        torch.testing.assert_close(y, 0.5 * x * x)

    print("example_triton_cubin: OK")


if __name__ == "__main__":
    main()
