"""``python -m tvm_ffi.cache``: prebuild, pull, list, prune and count the JIT's modules
(see docs/guides/jit.md, "A fleet's cache", and docs/dev/remote_cache.md).

    prebuild RECORD   build each module of a TVM_FFI_RECORD file here and publish it
                      (TVM_FFI_REMOTE_CACHE, TVM_FFI_REMOTE_CACHE_MODE=write)
    pull RECORD       fetch each module of a TVM_FFI_RECORD file into the local cache
    list              the local cache's entries (and the remote's, where it can list)
    prune [--older-than AGE] [--max-size SIZE]
                      remove local entries last used longer ago than AGE (7d, 12h, 30m),
                      then the least recently used until the rest fits in SIZE (2G, 500M)
    stats             local hits, remote hits and builds of the processes that used the cache

Exit status: 0 when every module was handled, 1 when one failed or the input is bad, 2 for
a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator

from ..cpp import _cache, _hit_index, _record, _remote
from . import _local

__all__ = ["main"]


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError  # unreachable


def _age(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{int(seconds // span)}{unit}"
    return f"{max(0, int(seconds))}s"


class _Failed(Exception):
    """A failure of the whole command: its message, exit status 1."""


def _tier(command: str, write: bool) -> _remote.Tier:
    tier = _remote.configured()
    if tier is None:
        raise _Failed(
            f"{command}: no remote cache: set {_remote.ENV} (and {_remote.MODE_ENV}=write to "
            "publish) and a key to sign or verify entries with"
        )
    if write and not tier.write:
        raise _Failed(f"{command}: publishing needs {_remote.MODE_ENV}=write")
    return tier


@contextlib.contextmanager
def _arch_list(value: str | None) -> Iterator[None]:
    """The recording host's own choice of architectures, for the build of one record."""
    name = "TVM_FFI_CUDA_ARCH_LIST"
    saved = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if value is not None:
            if saved is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = saved


def _foreign(record: _record.Record) -> bool:
    machine = os.uname().machine
    if record.machine == machine:
        return False
    print(f"{record.where}: {record.entry}: recorded on {record.machine}, this machine is "
          f"{machine}: skipped", file=sys.stderr)  # fmt: skip
    return True


def _prebuild(args: argparse.Namespace) -> int:
    import tempfile

    from ..cpp import _cached_build

    records = _record.read(args.record)
    tier = _tier("prebuild", write=True)
    root = str(_cache.cache_root())
    failed = 0
    for record in records:
        if _foreign(record):
            failed += 1
            continue
        before = list(_hit_index._events.get(root, (0, 0, 0)))
        published = _remote.stats["published"]
        try:
            with tempfile.TemporaryDirectory() as work, _arch_list(record.inputs["arch_list"]):
                path = _cached_build.build_library(record.spec(work), None, False)
        except Exception as err:  # one module's failure: said, and the others go on
            first = str(err).split("\n", 1)[0]
            print(f"{record.where}: {record.name!r}: {type(err).__name__}: {first}",
                  file=sys.stderr)  # fmt: skip
            failed += 1
            continue
        after = _hit_index._events.get(root, [0, 0, 0])
        how = ["found in the local cache", "already on the remote", "built"][
            max(range(3), key=lambda event: after[event] - before[event])
        ]
        if how != "already on the remote" and _remote.stats["published"] == published:
            tier.publish(path.parent.name, path.name, path.read_bytes())
        down = tier.down()
        if _remote.stats["published"] > published:
            how += ", published"
        elif down:
            how += f", not published: {', '.join(down)} failed (see the warning)"
            failed += 1
        elif how != "already on the remote":
            how += ", already on the remote"
        print(f"{path.parent.name}: {how}")
        if path.parent.name != record.entry:
            print(f"{record.where}: {record.name!r} was recorded as {record.entry} but builds "
                  f"here as {path.parent.name}: this host's compiler, CUDA toolkit or package "
                  "differs from the recording host's (or a source file's path, which the key "
                  "names); hosts like the recording one will not find it",
                  file=sys.stderr)  # fmt: skip
            failed += 1
    return 1 if failed else 0


def _pull(args: argparse.Namespace) -> int:
    records = _record.read(args.record)
    tier = _tier("pull", write=False)
    timeout = _cache.lock_timeout()
    root, root_fd = _cache.open_cache_root()
    failed = 0
    try:
        for record in records:
            if _foreign(record):
                failed += 1
                continue
            relpath = f"{record.entry}/{record.library}"
            if _hit_index.library_problem(root_fd, relpath) is None:
                print(f"{record.entry}: in the local cache")
            else:
                found = tier.fetch(record.entry, record.library)
                if found is None or not _remote.install(
                    found[0], found[1], root, root_fd, record.entry, record.library, timeout
                ):
                    print(f"{record.where}: {record.entry}: on no remote", file=sys.stderr)
                    failed += 1
                    continue
                print(f"{record.entry}: fetched from {found[0]}")
            failed += not _indexed(record)
    finally:
        os.close(root_fd)
    return 1 if failed else 0


def _indexed(record: _record.Record) -> bool:
    """Look ``record``'s module up the full way (never building it), which records it in
    the hit index: the workload's first load is then a hit index hit. False (said) when
    this host keys it otherwise than the recording host did."""
    import tempfile

    from ..cpp import _cached_build

    token = _cached_build.lookup_only.set(True)
    try:
        with tempfile.TemporaryDirectory() as work, _arch_list(record.inputs["arch_list"]):
            _cached_build.build_library(record.spec(work), None, False)
    except LookupError:
        print(f"{record.where}: {record.entry}: this host keys {record.name!r} otherwise (its "
              "compiler, CUDA toolkit or package differs from the recording host's): its "
              "loads will not find the pulled entry", file=sys.stderr)  # fmt: skip
        return False
    except Exception as err:  # no blobs beside the record, a tool missing here: said
        first = str(err).split("\n", 1)[0]
        print(f"{record.where}: {record.entry}: pulled but not indexed "
              f"({type(err).__name__}: {first})", file=sys.stderr)  # fmt: skip
    finally:
        _cached_build.lookup_only.reset(token)
    return True


def _list(args: argparse.Namespace) -> int:
    root = str(_cache.cache_root())
    listed = _local.entries(root)
    now = time.time()
    total = sum(entry.size for entry in listed)
    print(f"local cache {root}: {len(listed)} entries, {_size(total)}")
    for entry in listed:
        age = _age(now - entry.used) if entry.library else "unpublished"
        print(f"  {entry.name:<24} {entry.key:<32} {_size(entry.size):>10} {age:>6}")
    tier = _remote.configured()
    if tier is None:
        return 0
    status = 0
    for url, found in tier.listing():
        if found is None:
            print(f"remote {url}: cannot list")
            status = 1
            continue
        print(f"remote {url}: {len(found)} entries, {_size(sum(size for _, size in found))}")
        for name, size in found:
            stem, _, key = name.rpartition("_")
            print(f"  {stem:<24} {key:<32} {_size(size):>10}")
    return status


def _prune(args: argparse.Namespace) -> int:
    older = None if args.older_than is None else _local.parse_age(args.older_than)
    size = None if args.max_size is None else _local.parse_size(args.max_size)
    if older is None and size is None:
        raise _Failed("prune: give --older-than, --max-size or both")
    root, root_fd = _cache.open_cache_root_str()
    try:
        removed, kept = _local.prune(root, root_fd, older, size)
    finally:
        os.close(root_fd)
    for entry in removed:
        print(f"removed {entry.dirname} ({_size(entry.size)})")
    for entry, why in kept:
        print(f"kept {entry.dirname}: {why}")
    print(f"pruned {len(removed)} entries, {_size(sum(e.size for e in removed))}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    root = str(_cache.cache_root())
    (local, remote, built), processes = _local.stats(root)
    print(f"cache {root}: {processes} processes")
    print(f"  local hits   {local}")
    print(f"  remote hits  {remote}")
    print(f"  builds       {built}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tvm_ffi.cache",
        description="Prebuild, pull, list, prune and count the JIT's cached modules.",
        epilog=__doc__.split("\n\n", 1)[1].split("\n\nExit status", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, run, text in (
        ("prebuild", _prebuild, "build each module of a record file and publish it"),
        ("pull", _pull, "fetch each module of a record file into the local cache"),
    ):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("record", help="a file that TVM_FFI_RECORD wrote")
        command.set_defaults(run=run)
    command = commands.add_parser("list", help="the local (and remote) cache's entries")
    command.set_defaults(run=_list)
    command = commands.add_parser("prune", help="remove old local entries, or the oldest")
    command.add_argument("--older-than", help="last used longer ago than this (7d, 12h, 30m)")
    command.add_argument("--max-size", help="remove the least recently used above (2G, 500M)")
    command.set_defaults(run=_prune)
    command = commands.add_parser("stats", help="local hits, remote hits and builds")
    command.set_defaults(run=_stats)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (_Failed, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
