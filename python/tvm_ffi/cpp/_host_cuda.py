"""Which compiler builds an inline ``cuda_sources`` text: the host C++ compiler or nvcc.

A wrapper that only launches embedded or NVRTC images holds no device code, yet nvcc
spends seconds on it (a device pass, cudafe, then the host compiler anyway). Such a text is
compiled by ``$CXX`` with what nvcc would add for host code (``cuda_runtime.h`` first, the
CUDA include directory), and falls back to nvcc inside the same build step when the host
compiler refuses it. The guess is made in two steps:

1. :func:`host_flags` scans the text for device code (``__global__``, ``<<<``, ...) and
   the flags for anything the host compiler cannot take; either sends it to nvcc at once.
2. The host compile includes :data:`HOST_HEADER` first, which poisons the keywords that
   declare kernels and device variables. Device code the scan missed (in an included
   header, behind a macro) is then a compile error, and the step runs nvcc instead: a
   wrong guess costs time, never a kernel silently compiled as a host function.
"""

from __future__ import annotations

import re

__all__ = ["HOST_HEADER", "HOST_HEADER_NAME", "host_flags"]

#: The header the host compile of ``cuda.cu`` includes first (written into the build dir).
HOST_HEADER_NAME = "cuda_host.h"

HOST_HEADER = """\
// Written by tvm_ffi.cpp: cuda.cu is compiled by the host C++ compiler, with the header
// nvcc includes first. Declaring a kernel or a device variable is an error here, so that
// the build falls back to nvcc instead of compiling device code as host code.
#pragma GCC system_header
#include <cuda_runtime.h>
#pragma GCC poison __global__ __shared__ __constant__ __managed__
"""

# Device code in the text itself: kernels, launches, device variables and functions,
# device-only built-ins, and CUDA headers (.cuh) that may hold any of them.
_DEVICE_CODE = re.compile(
    r"__global__|__device__|__shared__|__constant__|__managed__|__launch_bounds__|<<<"
    r"|\b(?:threadIdx|blockIdx|blockDim|gridDim|warpSize)\b|__syncthreads|__CUDA_ARCH__"
    r"|\.cuh\b"
)

# nvcc flags that mean the same to the host compiler, taken as they are.
_SAME_FLAG = re.compile(r"-[DUI].+|-O[0-3s]?|-std=c\+\+\d\w*|-g|-w|-W[a-z][\w=+-]*")
# Flags followed by a separate value that passes through unchanged.
_SAME_WITH_VALUE = ("-include", "-D", "-U", "-I", "-isystem")


def host_flags(source: str, cuda_cflags: list[str]) -> list[str] | None:
    """The host compiler's flags for ``source`` given nvcc's ``cuda_cflags``, or None
    when the text shows device code or a flag has no safe host equivalent (nvcc then)."""
    if _DEVICE_CODE.search(source):
        return None
    out: list[str] = []
    flags = iter(cuda_cflags)
    for flag in flags:
        if flag in _SAME_WITH_VALUE or flag in ("-Xcompiler", "--compiler-options"):
            value = next(flags, None)
            if value is None:
                return None
            # -Xcompiler a,b passes a and b to the host compiler, as nvcc would.
            out += (
                value.split(",") if flag in ("-Xcompiler", "--compiler-options") else [flag, value]
            )
        elif flag.startswith(("-Xcompiler=", "--compiler-options=")):
            out += flag.split("=", 1)[1].split(",")
        elif _SAME_FLAG.fullmatch(flag):
            out.append(flag)
        else:
            return None  # a device or nvcc-only flag: let nvcc read it
    return out
