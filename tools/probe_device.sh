#!/usr/bin/env bash
# One-off look at the GPU machine's software (versions the GPU suite relies on).
set -u
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
which python3; python3 --version; nvcc --version | tail -2; which compute-sanitizer cmake ninja fatbinary
python3 - <<'PY'
import importlib, sys
for m in ["torch", "triton", "cupy", "numpy", "pybind11", "setuptools", "ninja", "pytest", "cuda.bindings", "cuda.core", "jax", "wheel"]:
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "MISSING", type(e).__name__, e)
import torch
print("exchange api:", hasattr(torch.Tensor, "__dlpack_c_exchange_api__"), torch.cuda.device_count(), torch.cuda.get_device_capability())
try:
    from cuda.bindings import nvrtc
    print("nvrtc", nvrtc.nvrtcVersion())
except Exception as e:
    print("nvrtc missing", e)
PY
pip list 2>/dev/null | grep -iE "cuda|nvidia|pybind|setuptools|triton|cupy|pytest" 
