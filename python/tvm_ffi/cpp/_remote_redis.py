"""A Redis server as a builder's remote module cache (``redis://host:port/db``): it reads as
every host does (:mod:`._remote_resp`) and writes through the ``redis`` client (the
``remote-redis`` extra). Entries are plain values under ``tvm-ffi:entry:<name>``,
written once (SET NX: a second builder's upload changes nothing). The build lock is
``tvm-ffi:lock:<name>``, SET NX PX with a random token, kept alive by its holder while the
build runs and removed only by it; a builder that dies loses it within ``_LOCK_TTL``."""

from __future__ import annotations

import os
import threading

import redis

from . import _remote_resp
from ._remote_resp import ENTRY as _ENTRY
from ._remote_resp import LOCK as _LOCK

__all__ = ["Backend"]

_LOCK_TTL_MS = 30_000
# Compare and act: only the holder of the token may extend or remove its lock.
_EXTEND = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
)
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


class Backend(_remote_resp.Backend):
    def __init__(self, url: str, timeout: float) -> None:
        super().__init__(url, timeout)
        self._client = redis.Redis.from_url(
            url, socket_connect_timeout=timeout, socket_timeout=timeout, retry_on_timeout=False
        )
        self._alive: dict[str, threading.Event] = {}

    def put(self, name: str, blob: bytes) -> bool:
        return bool(self._client.set(_ENTRY + name, blob, nx=True))

    def lock(self, name: str) -> str | None:
        token = os.urandom(16).hex()
        if not self._client.set(_LOCK + name, token, nx=True, px=_LOCK_TTL_MS):
            return None
        stop = self._alive[token] = threading.Event()
        extend = self._client.register_script(_EXTEND)

        def keep_alive() -> None:  # a build longer than the TTL keeps its lock
            while not stop.wait(_LOCK_TTL_MS / 3000):
                try:
                    extend(keys=[_LOCK + name], args=[token, _LOCK_TTL_MS])
                except redis.RedisError:
                    return  # the lock lapses: at worst another host builds it too

        threading.Thread(target=keep_alive, daemon=True).start()
        return token

    def unlock(self, name: str, token: str) -> None:
        self._alive.pop(token).set()
        self._client.register_script(_RELEASE)(keys=[_LOCK + name], args=[token])
