"""Build many inline modules at once: kernel libraries make one module per kernel variant
at start-up, and one ``load_inline`` after the other leaves all cores but one idle."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import _build, _cached_build, _env, _jobs, _spec
from ._inline import _attach_docs, build_inline, load_inline

__all__ = ["ManyBuildError", "build_inline_many", "load_inline_many"]

_API = "load_inline_many"


class ManyBuildError(RuntimeError):
    """Some modules of :func:`load_inline_many` failed.

    ``errors``: position in the list -> the exception that module raised (a
    :class:`BuildError`, ValueError, ...); ``results``: the module (or path) of each
    position, None where it failed. The message has one line per failed module.
    """

    def __init__(self, errors: dict[int, BaseException], results: list, names: list) -> None:
        lines = [f"{len(errors)} of {len(results)} modules failed to build:"]
        for index, err in sorted(errors.items()):
            first = (str(err).splitlines() or [type(err).__name__])[0]
            lines.append(f"  [{index}] {names[index]!r}: {type(err).__name__}: {first}")
        super().__init__("\n".join(lines))
        self.errors = errors
        self.results = results


def _checked(api: str, modules: object) -> list[dict[str, Any]]:
    if not isinstance(modules, Sequence) or isinstance(modules, (str, bytes)):
        raise TypeError(f"{api}: modules must be a list of dicts of load_inline arguments")
    out = []
    for index, item in enumerate(modules):
        if not isinstance(item, Mapping) or "name" not in item:
            raise TypeError(
                f"{api}: modules[{index}] must be a dict of load_inline arguments with a "
                f"'name' (got {item!r:.80})"
            )
        out.append(dict(item))
    return out


# Descriptors one build holds at its peak: the cache root, entry and lock, the pipes and
# error pipe of each process it starts (ninja, a compiler's --version), with room to spare.
_FDS_PER_BUILD = 12


def _fd_room() -> int:
    """Descriptors this process may still open (RLIMIT_NOFILE less those open): builds at
    once beyond what they allow would fail with EMFILE instead of waiting their turn."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        used = 0
    return soft - used


def _build_all(
    api: str, modules: list[dict[str, Any]], jobs: int | None, load: bool = False
) -> tuple:
    # Any CUDA source is taken for device code (the larger memory estimate): a wrapper
    # without any is found out only later, by its build.
    device = any(kwargs.get("cuda_sources") for kwargs in modules)
    total = _jobs.job_count(device=device, limit=jobs)
    workers = max(1, min(len(modules), total, _fd_room() // _FDS_PER_BUILD))
    # Each module's ninja gets a share of the jobs; a module has one or two sources.
    per_build = max(1, total // workers)

    stop = threading.Event()

    def build(kwargs: dict[str, Any]) -> Any:
        _cached_build._ninja_jobs.set(per_build)  # a fresh context in each pool thread
        _build.stop_event.set(stop)
        if load and kwargs.get("build_directory") is not None:
            # A build_directory stays locked until its library is loaded, as in
            # load_inline: loaded after the pool, another process could relink it first.
            return load_inline(**kwargs)
        return build_inline(**kwargs)

    results: list = [None] * len(modules)
    errors: dict[int, BaseException] = {}
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tvm_ffi_build")
    try:
        futures = [pool.submit(build, kwargs) for kwargs in modules]
        for index, future in enumerate(futures):
            try:
                results[index] = future.result()
            except Exception as err:  # reported per module below
                errors[index] = err
    except BaseException:
        # Ctrl-C (or another error) here: builds not started never start, running ones
        # are stopped now rather than waited for.
        pool.shutdown(wait=False, cancel_futures=True)
        _build.stop_builds(stop)
        pool.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)
    return results, errors


def build_inline_many(
    modules: Sequence[Mapping[str, Any]], *, max_jobs: int | None = None
) -> list[str]:
    """Build several modules in parallel; return their library paths, in order.

    ``modules``: one dict of :func:`build_inline` keyword arguments per module (``name``
    included). Each module has its own cache entry and lock, as with one call each.
    ``max_jobs``: compiler processes at once (default ``MAX_JOBS``, else the cores and
    the memory allow: see docs/guides/jit.md).

    Raises
    ------
    ManyBuildError
        After every module was tried, when any failed: ``errors`` maps each failed position
        to its exception; the others' paths are in ``results``.
    """
    api = "build_inline_many"
    checked = _checked(api, modules)
    results, errors = _build_all(api, checked, _max_jobs(api, max_jobs))
    if errors:
        raise ManyBuildError(errors, results, [m["name"] for m in checked])
    return results


def load_inline_many(
    modules: Sequence[Mapping[str, Any]], *, max_jobs: int | None = None
) -> list[Any]:
    """Like :func:`build_inline_many`, then load each module (in order, in this thread):
    the list of modules, as :func:`load_inline` returns them. A module with a
    ``build_directory`` is loaded by the thread that built it, which holds the directory's
    lock until then (as :func:`load_inline` does). ``keep_module_alive`` in a dict is
    checked and, as for :func:`load_inline`, changes nothing."""
    checked = _checked(_API, modules)
    for kwargs in checked:
        if "keep_module_alive" in kwargs:
            _spec.check_flag(_API, "keep_module_alive", kwargs.pop("keep_module_alive"))
    results, errors = _build_all(_API, checked, _max_jobs(_API, max_jobs), load=True)
    loaded: list = [None] * len(checked)
    for index, path in enumerate(results):
        if index in errors:
            continue
        if not isinstance(path, str):  # loaded by its builder (a build_directory)
            loaded[index] = path
            continue
        try:
            docs = _spec.function_docs(_API, checked[index].get("functions"))
            loaded[index] = _attach_docs(_cached_build.load_library(path), docs)
        except Exception as err:
            errors[index] = err
    if errors:
        raise ManyBuildError(errors, loaded, [m["name"] for m in checked])
    return loaded


def _max_jobs(api: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{api}: max_jobs must be an int >= 1 (got {value!r})")
    if value > _env.MOST_JOBS:
        raise ValueError(
            f"{api}: max_jobs is too large (got {value!r}; ninja takes at most {_env.MOST_JOBS})"
        )
    return value
