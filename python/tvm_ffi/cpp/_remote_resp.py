"""Reading a Redis remote cache (``redis://host:port/db``, ``rediss://``, ``unix://path?db=N``)
with the standard library: GET, EXISTS, SCAN and STRLEN over RESP2 on one socket.

A serving host only reads, and importing the ``redis`` client costs 50 to 80 ms (it
imports asyncio and its cluster and metrics support): more than the whole budget of a
first use that fetches (docs/dev/remote_cache.md). Builders, which write and lock, use the
``redis`` client for that (:mod:`._remote_redis`, built on this reader).
"""

from __future__ import annotations

import socket
import threading

__all__ = ["ENTRY", "LOCK", "Backend"]

ENTRY = "tvm-ffi:entry:"
LOCK = "tvm-ffi:lock:"


class Backend:
    locks = True  # a builder's lock can be seen (and waited for) here

    def __init__(self, url: str, timeout: float) -> None:
        from urllib.parse import parse_qs, unquote, urlsplit

        parts = urlsplit(url)
        self._timeout = timeout
        self._unix = parts.path if parts.scheme == "unix" else None
        self._host, self._port = parts.hostname or "localhost", parts.port or 6379
        self._tls = parts.scheme == "rediss"
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        db = query.get("db", "0") if self._unix else parts.path.strip("/")
        if not (db or "0").isdigit():
            raise ValueError(f"{url!r}: the database must be a number (got {db!r})")
        self._db = int(db or 0)
        # As the redis client reads a URL: user and password before the host, or (a unix
        # socket's) in the query.
        password = unquote(parts.password or "") or query.get("password", "")
        self._auth = [unquote(parts.username or ""), password]
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()  # builds of several threads share the connection

    def _connect(self) -> None:
        where = self._unix or f"{self._host}:{self._port}"
        try:
            if self._unix:
                sock = socket.socket(socket.AF_UNIX)
                sock.settimeout(self._timeout)
                sock.connect(self._unix)
            else:
                sock = socket.create_connection((self._host, self._port), self._timeout)
            if self._tls:
                import ssl

                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._host)
        except OSError as err:
            raise ConnectionError(f"Error connecting to {where}: {err.strerror or err}") from None
        self._sock, self._file = sock, sock.makefile("rb")
        if self._auth[1]:
            self._send("AUTH", *self._auth) if self._auth[0] else self._send("AUTH", self._auth[1])
        if self._db:
            self._send("SELECT", str(self._db))

    def command(self, *args: str | bytes):
        """The reply to one command: bytes, int, None or a list of those. ConnectionError
        when the server cannot be reached, RuntimeError for its error reply."""
        with self._lock:
            if self._sock is None:
                self._connect()
            try:
                return self._send(*args)
            except OSError:  # a broken connection is not reused
                self._sock.close()
                self._sock = None
                raise

    def _send(self, *args: str | bytes):
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg.encode() if isinstance(arg, str) else arg
            parts += [b"$%d\r\n" % len(data), data, b"\r\n"]
        self._sock.sendall(b"".join(parts))
        return self._reply()

    def _reply(self):
        line = self._file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("the Redis server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError(f"Redis: {rest.decode(errors='replace')}")
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self._file.read(size + 2)
            if len(data) != size + 2:
                raise ConnectionError("the Redis server closed the connection")
            return data[:-2]
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise ConnectionError(f"not a Redis reply: {line[:40]!r}")

    def get(self, name: str) -> bytes | None:
        return self.command("GET", ENTRY + name)

    def has(self, name: str) -> bool:
        return bool(self.command("EXISTS", ENTRY + name))

    def locked(self, name: str) -> bool:
        return bool(self.command("EXISTS", LOCK + name))

    def entries(self) -> list[tuple[str, int]]:
        """(name, stored size) of every entry, by name."""
        names, cursor = [], b"0"
        while True:
            cursor, keys = self.command("SCAN", cursor, "MATCH", ENTRY + "*", "COUNT", "1000")
            names += [key[len(ENTRY) :].decode() for key in keys]
            if cursor == b"0":
                break
        return sorted((name, self.command("STRLEN", ENTRY + name)) for name in set(names))
