"""Load the library that CMakeLists.txt builds and check add_one on a CUDA tensor.

python run.py [path/to/libadd_one.so]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

import tvm_ffi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent / "build" / "libadd_one.so"
    parser.add_argument("library", nargs="?", default=str(default))
    args = parser.parse_args()

    mod = tvm_ffi.load_module(args.library)
    n = 1_000_003  # not a multiple of the block size: the last block is partial
    x = torch.rand(n, device="cuda") * 100 - 50
    y = torch.full_like(x, float("nan"))  # poisoned: an unwritten element shows up
    mod.add_one(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
    print(f"embedded_cubin: OK ({n} elements)")


if __name__ == "__main__":
    main()
