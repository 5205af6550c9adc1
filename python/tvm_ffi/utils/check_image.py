"""Check one CUDA code image before a build embeds it: the build-time check of the CMake
embedding functions (cmake/tvm_ffi_check_image.cmake runs it when it knows a Python that
imports tvm_ffi).

    python -m tvm_ffi.utils.check_image --function <fn> --name <name> <image file>

The image is judged as every embedder judges it (``tvm_ffi.utils._sources.recognise``,
over the C++ reader CubinModule runs at load time): an empty file or a truncated or corrupt
CUBIN or fatbin is an error (exit status 1); other bytes the loader refuses (no known format,
text that breaks the PTX rules) get a warning and exit status 0, as the embed tool without
``--strict`` does: any bytes may be embedded on purpose.
"""

from __future__ import annotations

import argparse
import os
import sys

from ._sources import recognise

__all__ = ["main"]


def _verdict(fn: str, name: str, image: str) -> tuple[int, str | None]:
    """(exit status, message) for the image file ``image`` embedded as ``name`` by ``fn``."""
    if ";" in image:
        # What $<TARGET_OBJECTS:...> of an object library with several sources gives.
        count = len(image.split(";"))
        return 1, f'{fn}: the image for "{name}" must be one file, got {count}: "{image}"'
    if not os.path.isfile(image):
        return 1, f'{fn}: the image for "{name}", {image}, does not exist'
    with open(image, "rb") as file:
        data = file.read()
    warnings: list[str] = []
    try:
        recognise(data, f'{image} ("{name}")', strict=False, warn=warnings.append)
    except ValueError as err:
        return 1, f"{fn}: {err}"
    return 0, f"{fn}: {warnings[0]}" if warnings else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tvm_ffi.utils.check_image",
        description="Check a CUBIN, PTX or fatbin image before it is embedded.",
    )
    parser.add_argument("--function", required=True, help="the CMake function, for messages")
    parser.add_argument("--name", required=True, help="the name the image is embedded as")
    parser.add_argument("image", help="the image file")
    args = parser.parse_args(argv)
    status, message = _verdict(args.function, args.name, args.image)
    if message is not None:
        print(("error: " if status else "warning: ") + message, file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
