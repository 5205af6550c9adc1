"""Real servers that tests start on 127.0.0.1: a memory-only redis-server and Debian's
docker-registry (the OCI distribution API v2) with a temporary storage directory."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

REDIS = shutil.which("redis-server")
REGISTRY = shutil.which("docker-registry")
HTPASSWD = shutil.which("htpasswd")  # bcrypt hashes for the registry (Debian: apache2-utils)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _serving(argv: list[str], port: int, what: str) -> Iterator[None]:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not start on port {port}") from None
                time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def redis_server(workdir: Path, *options: str) -> Iterator[str]:
    """A private, memory-only redis-server (with the further ``options``); its URL."""
    port = free_port()
    argv = [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
            "no", "--dir", str(workdir), *options]  # fmt: skip
    with _serving(argv, port, "redis-server"):
        yield f"redis://127.0.0.1:{port}/0"


@contextlib.contextmanager
def registry(workdir: Path, htpasswd: Path | None = None) -> Iterator[str]:
    """Debian's docker-registry serving ``workdir`` (asking for the users of ``htpasswd``,
    bcrypt hashes, when given); an ``oci://`` URL of a repository."""
    port = free_port()
    config = workdir / "config.yml"
    auth = f"auth:\n  htpasswd:\n    realm: tvm-ffi\n    path: {htpasswd}\n" if htpasswd else ""
    config.write_text(
        "version: 0.1\n"
        f"storage:\n  filesystem:\n    rootdirectory: {workdir / 'storage'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n{auth}"
    )
    with _serving([REGISTRY, "serve", str(config)], port, "docker-registry"):
        yield f"oci://127.0.0.1:{port}/tvm-ffi/modules"
