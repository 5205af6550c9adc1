"""The remote tier behind the local cache: finished modules shared by a fleet through a
Redis server or an OCI registry (see docs/dev/remote_cache.md).

Off unless ``TVM_FFI_REMOTE_CACHE`` names one or more remotes; only a miss of the local
cache imports this module, and only a named remote imports its client. Every entry is
verified before a byte of it is written locally (signature, machine, size, digest; then
the local cache's library check, in _cached_build). A remote that fails or times out is
reported once and not tried again in the process: the module is built locally.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import time
from collections.abc import Iterator

from .. import _log
from . import _cache, _hit_index, _sign

__all__ = ["Refused", "Tier", "configured", "install", "pack", "stats", "unpack"]

ENV = "TVM_FFI_REMOTE_CACHE"
MODE_ENV = "TVM_FFI_REMOTE_CACHE_MODE"
UNSIGNED_ENV = "TVM_FFI_REMOTE_CACHE_UNSIGNED"
TIMEOUT_ENV = "TVM_FFI_REMOTE_CACHE_TIMEOUT"
_DEFAULT_TIMEOUT = 2.0
_MAGIC = b"tvm-ffi-remote-cache 1\n"
_MAX_HEADER = 4096
#: What this process did with its remotes (for tests and ``TVM_FFI_RECORD``-style reports).
stats: dict[str, int] = {"fetched": 0, "published": 0, "refused": 0, "waited": 0, "locked": 0}


class Refused(Exception):
    """An entry that must not be loaded; the message says why, in a few words."""


def _signed_text(name: str, library: str, machine: str, size: int, digest: str, abi: str) -> bytes:
    text = f"tvm-ffi-remote-cache 1\n{name}\n{library}\n{machine}\n{size}\n{digest}\n{abi}\n"
    return text.encode()


def pack(name: str, library: str, payload: bytes, signer: object | None) -> bytes:
    """The stored form of entry ``name``'s ``library``: a header line, then its bytes."""
    import hashlib

    machine, size, digest = os.uname().machine, len(payload), hashlib.sha256(payload).hexdigest()
    abi = _hit_index.ABI
    header = {"name": name, "library": library, "machine": machine, "size": size,
              "sha256": digest, "abi": abi, "scheme": "", "signature": ""}  # fmt: skip
    if signer is not None:
        header["scheme"] = signer.name
        header["signature"] = signer.sign(_signed_text(name, library, machine, size, digest, abi))
    return _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def unpack(
    blob: bytes, name: str, library: str, signer: object | None, allow_unsigned: bool
) -> bytes:
    """The library bytes of ``blob`` if it is entry ``name``'s ``library``, for this machine
    and C ABI, signed by ``signer`` (or unsigned, when allowed) and whole; else
    :class:`Refused`. An entry without an ABI was stored before the package took tvm-ffi's C
    ABI (its modules call ABI version 3): refused whatever its key."""
    import hashlib

    end = blob.find(b"\n", len(_MAGIC), len(_MAGIC) + _MAX_HEADER)
    if not blob.startswith(_MAGIC) or end < 0:
        raise Refused("not a tvm-ffi cache entry (no header)")
    try:
        header = json.loads(blob[len(_MAGIC) : end])
        fields = [header[k] for k in ("name", "library", "machine", "size", "sha256")]
        scheme, signature = header["scheme"], header["signature"]
        abi = header.get("abi", "ABI version 3")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Refused("malformed header") from None
    if fields[:2] != [name, library]:
        raise Refused(f"the entry is {fields[0]}/{fields[1]}, not this key")
    machine = os.uname().machine
    if fields[2] != machine:
        raise Refused(f"built for {fields[2]!r}, this machine is {machine!r}")
    if abi != _hit_index.ABI:
        raise Refused(f"built for the C ABI {abi!r}, this package's is {_hit_index.ABI!r}")
    if not signature:
        if not allow_unsigned:
            raise Refused(f"unsigned (set {UNSIGNED_ENV}=allow to accept unsigned entries)")
    elif signer is None:
        raise Refused(f"signed, but this host has no key to verify it (set {_sign.KEY_ENV})")
    elif scheme != signer.name:
        raise Refused(f"signed with {scheme!r}, this host verifies {signer.name!r}")
    elif not signer.verify(_signed_text(*fields, abi), signature):
        raise Refused("bad signature (another key, or an altered header)")
    payload = blob[end + 1 :]
    if len(payload) != fields[3]:
        raise Refused(f"truncated ({len(payload)} of {fields[3]} bytes)")
    if hashlib.sha256(payload).hexdigest() != fields[4]:
        raise Refused("content digest mismatch (altered bytes)")
    return payload


@dataclasses.dataclass
class Tier:
    """The configured remotes, tried in turn, and how this host uses them."""

    urls: list[str]
    write: bool  # a builder: publishes what it builds and takes build locks
    signer: object | None
    allow_unsigned: bool
    timeout: float
    _backends: dict = dataclasses.field(default_factory=dict)  # url -> backend, None: down

    def _backend(self, url: str):
        if url not in self._backends:
            try:
                if url.startswith(("redis://", "rediss://", "unix://")) and self.write:
                    from . import _remote_redis as impl
                elif url.startswith(("redis://", "rediss://", "unix://")):
                    from . import _remote_resp as impl  # reads without the redis client
                else:
                    from . import _remote_oci as impl
                self._backends[url] = impl.Backend(url, self.timeout)
            except Exception as err:  # a missing client, a bad URL: said once, then off
                self._down(url, err)
        return self._backends[url]

    def _down(self, url: str, err: BaseException) -> None:
        self._backends[url] = None
        _log.warn(
            f"tvm_ffi.cpp: remote cache {url} failed ({type(err).__name__}: {err}); modules "
            "it lacks are built locally, and it is not tried again in this process"
        )

    def down(self) -> list[str]:
        """The remotes that failed in this process (and are no longer tried)."""
        return [url for url in self.urls if url in self._backends and self._backends[url] is None]

    def _each(self) -> Iterator[tuple[str, object]]:
        for url in self.urls:
            backend = self._backend(url)
            if backend is not None:
                yield url, backend

    def _call(self, url: str, backend, op: str, *args):
        try:
            return getattr(backend, op)(*args)
        except Exception as err:  # down, slow, refused: the local build goes on
            self._down(url, err)
            return None

    def fetch(self, name: str, library: str) -> tuple[str, bytes] | None:
        """(remote, verified library of entry ``name``) from the first remote that has it."""
        for url, backend in self._each():
            blob = self._call(url, backend, "get", name)
            if blob is None:
                continue
            try:
                payload = unpack(blob, name, library, self.signer, self.allow_unsigned)
            except Refused as why:
                refuse(url, name, str(why))
                continue
            stats["fetched"] += 1
            return url, payload
        return None

    def publish(self, name: str, library: str, payload: bytes) -> None:
        """Store entry ``name`` on every remote (a builder's); one that has it keeps it."""
        if not self.write:
            return
        blob = pack(name, library, payload, self.signer)
        for url, backend in self._each():
            if self._call(url, backend, "put", name, blob):
                stats["published"] += 1

    def listing(self) -> Iterator[tuple[str, list[tuple[str, int]] | None]]:
        """(remote, its entries as (name, size), or None where it cannot list or failed)."""
        for url, backend in self._each():
            lister = getattr(backend, "entries", None)
            yield url, None if lister is None else self._call(url, backend, "entries")

    @contextlib.contextmanager
    def claim(self, name: str, wait: float) -> Iterator[bool]:
        """Around a build of entry ``name``: a builder takes the remote build lock where a
        remote has one (Redis); a host that finds it held waits for that build, up to
        ``wait`` seconds. Yields True when it waited (the caller then fetches again)."""
        for url, backend in self._each():
            if not getattr(backend, "locks", False):
                continue
            token = self._call(url, backend, "lock", name) if self.write else None
            if token:
                stats["locked"] += 1
                try:
                    yield False
                finally:
                    self._call(url, backend, "unlock", name, token)
                return
            # A builder whose lock was refused saw another host's build: wait for it (and then
            # fetch) even if that build already ended before the check below, which would
            # otherwise read "not locked" and build a second time.
            if self.write or self._call(url, backend, "locked", name):
                stats["waited"] += 1
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline and self._call(url, backend, "locked", name):
                    if self._call(url, backend, "has", name):
                        break
                    time.sleep(0.1)
                yield True
                return
        yield False


def refuse(url: str, name: str, why: str) -> None:
    """One line: which entry, from where, why it is not loaded, and what happens instead."""
    stats["refused"] += 1
    _log.warn(
        f"tvm_ffi.cpp: refused remote cache entry {name} from {url}: {why}; building it locally"
    )


_memo: dict[tuple, Tier | None] = {}


def configured() -> Tier | None:
    """The tier ``TVM_FFI_REMOTE_CACHE`` and its companions describe (once per setting),
    None when it is unset (or when no entry could be trusted: said once)."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    names = (MODE_ENV, UNSIGNED_ENV, TIMEOUT_ENV, _sign.KEY_ENV, _sign.KEY_FILE_ENV)
    settings = (value, *(os.environ.get(name, "") for name in names), id(_sign._installed[:1]))
    if settings not in _memo:
        _memo[settings] = _configure(value)
    return _memo[settings]


def _configure(value: str) -> Tier | None:
    urls = value.replace(",", " ").split()
    for url in urls:
        if not url.startswith(("redis://", "rediss://", "unix://", "oci://", "oci+http://")):
            raise ValueError(
                f"{ENV}: {url!r} is not a remote cache URL (redis://host:port/db, "
                "oci://host:port/repository, oci+http://... for a registry without TLS)"
            )
    mode = os.environ.get(MODE_ENV, "").strip().lower() or "read"
    if mode not in ("read", "write"):
        raise ValueError(f"{MODE_ENV} must be 'read' or 'write' (got {mode!r})")
    allow = os.environ.get(UNSIGNED_ENV, "").strip().lower()
    if allow not in ("", "allow", "refuse"):
        raise ValueError(f"{UNSIGNED_ENV} must be 'allow' or 'refuse' (got {allow!r})")
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        timeout = float(text) if text else _DEFAULT_TIMEOUT
    except ValueError:
        timeout = math.nan
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds > 0 (got {text!r})")
    signer = _sign.configured_signer()
    if signer is None and allow != "allow":
        _log.warn(
            f"tvm_ffi.cpp: {ENV} is set but no key to sign or verify entries is "
            f"({_sign.KEY_ENV} or {_sign.KEY_FILE_ENV}); the remote cache is not used "
            f"(set {UNSIGNED_ENV}=allow to use it unsigned)"
        )
        return None
    return Tier(urls, mode == "write", signer, allow == "allow", timeout)


def install(
    url_of: str, payload: bytes, root, root_fd: int, name: str, library: str, timeout: float
) -> bool:
    """Publish a verified ``payload`` as entry ``name``'s ``library`` in the local cache, the
    way a build publishes (under the entry's lock, a hard link of a whole, fsync()ed
    file that never replaces one there), once it passes the local cache's library check.
    False when the cache cannot take it (read-only) or the check refuses it (said)."""
    import errno

    entry_dir = root / name
    try:
        dir_fd = _cache.open_entry(root_fd, name, entry_dir, create=True)
    except OSError as err:
        if err.errno in _cache.READ_ONLY:
            return False
        raise
    staged = f"remote/{library}"
    try:
        with _cache.build_lock(dir_fd, entry_dir, timeout):
            if _hit_index.library_problem(dir_fd, library) is None:
                return True  # published meanwhile (built or fetched by another process)
            _cache.clean_entry(dir_fd)
            _cache.write_if_changed(dir_fd, entry_dir, staged, payload)
            problem = _hit_index.library_problem(dir_fd, staged)
            if problem:
                _cache.clean_entry(dir_fd)
                refuse(url_of, name, problem)
                return False
            _cache.publish(dir_fd, staged, library, replace=False)
            return True
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        with contextlib.suppress(OSError):
            _cache.clean_entry(dir_fd)
        return False
    finally:
        os.close(dir_fd)
