"""Check one CUDA code image before a build embeds it: the build-time check of the CMake
embedding functions (cmake/tvm_ffi_check_image.cmake runs it when it knows a Python that
imports tvm_ffi).

    python -m tvm_ffi.utils.check_image --function <fn> --name <name> <image file>

The image is read by the one image reader, the C++ one CubinModule runs at load time
(``tvm_ffi._core.inspect_image``). A truncated or corrupt CUBIN or fatbin, or an empty file,
is an error (exit status 1): the driver trusts the sizes inside an image and would read past
it. Bytes of no known format, and text that is not PTX, get a warning and exit status 0: any
bytes may be embedded on purpose, and the driver refuses them when they are loaded.
"""

from __future__ import annotations

import argparse
import os
import sys

from ._image import check_image, image_kind

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
    try:
        check_image(data)
    except ValueError as err:
        if not data or image_kind(data) in ("cubin", "fatbin"):
            return 1, f'{fn}: cannot embed {image} as "{name}": {err}'
        return 0, (
            f'{fn}: {image} (embedded as "{name}"): {err}; its bytes are embedded as they '
            "are, and the CUDA driver will refuse to load them"
        )
    return 0, None


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
