"""Launch the kernels of a CUBIN, PTX or fatbin image from Python: no C++ to write, no build.

``CubinModule(image)`` loads an image (bytes, a path, or ``{arch: bytes}``); ``mod["name"]``
gives a :class:`CubinKernel`; ``kernel[grid, block](*args)`` or ``kernel.launch(grid, block,
args, stream=..., shared_mem=..., config=LaunchConfig(...))`` launches it. Loading and
launching go through ``cubin_launcher.h``, the same code C++ wrappers use; the argument
packing, the stream lookup and the launch run in the compiled core with no Python frame.

Nothing is imported here at import time: not the compiled core, not torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Union

if TYPE_CHECKING:
    from ._core import CubinKernel

__all__ = ["CubinKernel", "CubinModule", "LaunchConfig"]

Image = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", Mapping[Any, bytes]]

# CUclusterSchedulingPolicy values.
_SCHEDULING = {"default": 0, "spread": 1, "load_balancing": 2}
# LaunchConfig._packed's value for "no priority" (priorities may be negative).
_NO_PRIORITY = -(2**63)


def _core() -> Any:
    from . import _core

    return _core


def __getattr__(name: str) -> Any:
    if name == "CubinKernel":
        return _core().CubinKernel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class LaunchConfig:
    """Launch attributes, as the C++ ``LaunchConfig`` sets them: ``cluster=(x, y, z)`` (sm_90+),
    ``cluster_scheduling`` ("default", "spread", "load_balancing"), ``pdl`` (programmatic
    dependent launch), ``cooperative`` (grid-wide sync) and ``priority``. Immutable."""

    __slots__ = ("_packed", "cluster", "cluster_scheduling", "cooperative", "pdl", "priority")

    def __init__(
        self,
        *,
        cluster: int | tuple[int, ...] | None = None,
        cluster_scheduling: Literal["default", "spread", "load_balancing"] | None = None,
        pdl: bool = False,
        cooperative: bool = False,
        priority: int | None = None,
    ) -> None:
        dims = (0, 0, 0)
        if cluster is not None:
            dims = _positive_dims(cluster, "cluster")
        if cluster_scheduling is not None and cluster_scheduling not in _SCHEDULING:
            raise ValueError(
                f"cluster_scheduling must be one of {', '.join(map(repr, _SCHEDULING))} "
                f"(got {cluster_scheduling!r})"
            )
        if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
            raise TypeError(f"priority must be an int (got {type(priority).__name__})")
        for name, value in (
            ("cluster", cluster),
            ("cluster_scheduling", cluster_scheduling),
            ("pdl", bool(pdl)),
            ("cooperative", bool(cooperative)),
            ("priority", priority),
        ):
            object.__setattr__(self, name, value)
        packed = (
            *dims,
            -1 if cluster_scheduling is None else _SCHEDULING[cluster_scheduling],
            int(bool(pdl)),
            int(bool(cooperative)),
            _NO_PRIORITY if priority is None else priority,
        )
        object.__setattr__(self, "_packed", packed)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("LaunchConfig is immutable; make a new one")

    def __repr__(self) -> str:
        parts = [
            f"{name}={getattr(self, name)!r}"
            for name in ("cluster", "cluster_scheduling", "pdl", "cooperative", "priority")
            if getattr(self, name) not in (None, False)
        ]
        return f"LaunchConfig({', '.join(parts)})"


def _positive_dims(value: Any, label: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) and not isinstance(value, bool) else value
    if (
        not isinstance(dims, tuple)
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)
    ):
        raise ValueError(f"{label} must be an int or 1 to 3 positive ints (got {value!r})")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


def _select_arch(keys: list[Any], capability: tuple[int, int]) -> Any:
    """The key of ``{arch: image}`` to load on a device of ``capability`` (major, minor).

    Keys are spellings of the package's grammar (``"sm_90"``, ``"9.0a"``, ``"compute_90"``
    for PTX, ``"9.0+PTX"``, ``"native"`` for this device), or ``90`` or ``(9, 0)``. SASS for
    the exact arch wins, then SASS of the same major version and a lower minor, then the
    newest PTX the device can compile. ValueError when none fits."""
    from ._arch_grammar import GRAMMAR, ArchSpellingError, parse_arch

    capability = (capability[0], capability[1])
    best: tuple[int, tuple[int, int]] | None = None
    choice = None
    for key in keys:
        try:
            arch = parse_arch(key, source="CubinModule", native=lambda: [capability])
        except ArchSpellingError:
            raise ValueError(
                f"CubinModule: {key!r} is not an architecture (expected {GRAMMAR}; or 90, "
                "or (9, 0))"
            ) from None
        target = (arch.major, arch.minor)
        if arch.suffix and target != capability:  # "a"/"f" code runs only on its own arch here
            continue
        ranks = [(0, target)] if arch.ptx and target <= capability else []
        if arch.sass and target == capability:
            ranks.append((3 if arch.suffix else 2, target))
        elif arch.sass and arch.major == capability[0] and arch.minor < capability[1]:
            ranks.append((1, target))
        rank = max(ranks, default=None)
        if rank is not None and (best is None or rank > best):
            best, choice = rank, key
    if best is None:
        device = f"{capability[0]}{capability[1]}"
        raise ValueError(
            f"CubinModule: none of the images ({', '.join(map(str, keys))}) runs on a device "
            f"of compute capability {capability[0]}.{capability[1]} (sm_{device})"
        )
    return choice


class CubinModule:
    """A loaded CUBIN, PTX or fatbin image: ``bytes``, a path, or ``{arch: bytes}`` (the entry
    for ``device``'s architecture is loaded; default device 0). ``mod["name"]`` and
    ``mod.get_kernel(name)`` give a :class:`CubinKernel`; KeyError lists the kernels."""

    def __init__(self, image: Image, *, device: int = 0) -> None:
        core = _core()
        if isinstance(image, Mapping):
            if not image:
                raise ValueError("CubinModule: the {arch: image} mapping is empty")
            image = image[_select_arch(list(image), core._cuda_device_capability(device))]
        if isinstance(image, (bytes, bytearray, memoryview)):
            self._module = core._CubinModule.from_bytes(bytes(image))
        elif isinstance(image, (str, os.PathLike)):
            self._module = core._CubinModule.from_file(os.fspath(image))
        else:
            raise TypeError(
                "CubinModule takes bytes (CUBIN, PTX or fatbin), a path or {arch: bytes} "
                f"(got {type(image).__name__})"
            )
        self._kernels: dict[str, CubinKernel] = {}

    def get_kernel(self, name: str) -> CubinKernel:
        """The kernel ``name`` (extern "C" or mangled); KeyError lists the module's kernels."""
        kernel = self._kernels.get(name)
        if kernel is None:
            if not isinstance(name, str):
                raise TypeError(f"kernel names are str, not {type(name).__name__}")
            kernel = self._kernels[name] = self._module.get_kernel(name)
        return kernel

    __getitem__ = get_kernel

    @property
    def kernel_names(self) -> list[str]:
        """Names of the module's kernels (needs a CUDA 12.4 or newer driver)."""
        return list(self._module.kernel_names)

    @property
    def handle(self) -> int:
        """The CUlibrary handle, as an int."""
        return int(self._module.handle)

    def __repr__(self) -> str:
        return f"<tvm_ffi.cuda.CubinModule {self._module.label}>"
