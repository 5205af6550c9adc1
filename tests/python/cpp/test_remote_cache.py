"""The remote module cache, for real: "hosts" are child processes with their own cache
directory (and, where it matters, their own copy of the package at another path) sharing a
redis-server or Debian's docker-registry on 127.0.0.1. A host that must not compile gets a
compiler that logs every call but --version, so the test sees that nothing was compiled."""

from __future__ import annotations

import base64
import contextlib
import http.client
import http.server
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import servers

REPO = Path(__file__).resolve().parents[3]
KEY = "operator-secret-0123456789"
needs_redis = pytest.mark.skipif(
    servers.REDIS is None, reason="needs redis-server (Debian: apt-get install redis-server)"
)
needs_registry = pytest.mark.skipif(
    servers.REGISTRY is None,
    reason="needs docker-registry (Debian: apt-get install docker-registry)",
)

# One module per kind: the plain C++ of the guide's first example, and the launcher wrapper
# with an embedded image (two cache entries: objects, then embed and link).
HOST = textwrap.dedent(
    """
    import json, sys, time, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        start = time.perf_counter()
        from tvm_ffi import cpp
        if sys.argv[1] == "plain":
            source = "int add_one(int x) { return x + 1; }"
            mod = cpp.load_inline("remote_plain", cpp_sources=source, functions="add_one")
            value = mod.add_one(41)
        else:
            from helpers.launcher_cases import PTX, WRAPPER
            images = {"kernels": PTX}
            mod = cpp.load_inline("remote_wrapper", cpp_sources=WRAPPER, embed_cubin=images)
            value = 42
        seconds = time.perf_counter() - start
    from tvm_ffi.cpp import _remote
    import tvm_ffi
    print(json.dumps({"value": value, "seconds": seconds, "stats": _remote.stats,
                      "warnings": [str(w.message) for w in caught], "path": str(mod.path),
                      "package": tvm_ffi.__file__}))
    """
)


@pytest.fixture(scope="module")
def registry_url(tmp_path_factory):
    if servers.REGISTRY is None:
        pytest.skip("needs docker-registry (Debian: apt-get install docker-registry)")
    with servers.registry(tmp_path_factory.mktemp("registry")) as url:
        yield url


def host(
    tmp_path: Path,
    name: str,
    cxx: Path,
    kind: str = "plain",
    install: Path | None = None,
    **env: str,
) -> tuple[dict, list[str]]:
    """Run a host: (its report, the compiler calls it made)."""
    log = tmp_path / f"{name}.cxx.log"
    full = {k: v for k, v in os.environ.items() if not k.startswith("TVM_FFI_REMOTE")}
    paths = [str(REPO / "tests")] + ([str(install)] if install else [])
    full.update(TVM_FFI_CACHE_DIR=str(tmp_path / name), CXX=str(cxx), CXX_LOG=str(log),
                TVM_FFI_REMOTE_CACHE_KEY=KEY, PYTHONPATH=os.pathsep.join(paths))  # fmt: skip
    full.update(env)
    if install is not None:  # the copy first, whatever the editable install adds
        argv = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(install)!r}); "
                f"exec({HOST!r})", kind]  # fmt: skip
    else:
        argv = [sys.executable, "-c", HOST, kind]
    proc = subprocess.run(argv, env=full, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    return json.loads(proc.stdout.splitlines()[-1]), calls


def test_key_does_not_depend_on_install_or_cache_path(tmp_path, cxx, install_b):
    a, _ = host(tmp_path, "a", cxx)
    b, _ = host(tmp_path, "b", cxx, install=install_b)
    assert b["package"].startswith(str(install_b))
    assert Path(a["path"]).parent.name == Path(b["path"]).parent.name
    assert Path(a["path"]).parent.parent != Path(b["path"]).parent.parent


def _remote_hosts(tmp_path, cxx, install_b, url, kind):
    a, built = host(tmp_path, "a", cxx, kind, TVM_FFI_REMOTE_CACHE=url,
                    TVM_FFI_REMOTE_CACHE_MODE="write")  # fmt: skip
    assert built and a["stats"]["published"] == 1, a
    b, calls = host(tmp_path, "b", cxx, kind, install_b, TVM_FFI_REMOTE_CACHE=url)
    assert (b["value"], calls, b["warnings"], b["stats"]["fetched"]) == (42, [], [], 1)
    assert Path(b["path"]).parent.name == Path(a["path"]).parent.name
    # The fetched module was published locally: the next process takes the hit index.
    again, calls = host(tmp_path, "b", cxx, kind, install_b, TVM_FFI_REMOTE_CACHE=url)
    assert (again["stats"]["fetched"], calls) == (0, [])


@needs_redis
@pytest.mark.parametrize("kind", ["plain", "wrapper"])
def test_host_b_loads_what_host_a_built_through_redis(tmp_path, cxx, install_b, redis_url, kind):
    _remote_hosts(
        tmp_path, cxx, install_b, redis_url.replace("/0", f"/{int(kind == 'plain')}"), kind
    )


@needs_registry
@pytest.mark.parametrize("kind", ["plain", "wrapper"])
def test_host_b_loads_what_host_a_built_through_a_registry(
    tmp_path, cxx, install_b, registry_url, kind
):
    _remote_hosts(tmp_path, cxx, install_b, f"{registry_url}-{kind}-{tmp_path.name}", kind)


def _refused(tmp_path, cxx, url, alter, reason: str, **env: str) -> None:
    import redis

    a, _ = host(tmp_path, "a", cxx, TVM_FFI_REMOTE_CACHE=url, TVM_FFI_REMOTE_CACHE_MODE="write")
    name = Path(a["path"]).parent.name
    client = redis.Redis.from_url(url)
    stored = f"tvm-ffi:entry:{name}"
    client.set(stored, alter(client.get(stored), name))
    b, calls = host(tmp_path, "b", cxx, TVM_FFI_REMOTE_CACHE=url, **env)
    assert b["value"] == 42 and calls, b  # built locally
    assert b["warnings"] == [
        f"tvm_ffi.cpp: refused remote cache entry {name} from {url}: {reason}; building it locally"
    ]


def _repacked(**changes):
    """A blob re-signed with the operator's key after ``changes`` to its header/payload."""
    from tvm_ffi.cpp import _remote, _sign

    def alter(blob: bytes, name: str) -> bytes:
        magic, header, payload = blob.split(b"\n", 2)
        fields = json.loads(header)
        payload = changes.get("payload", lambda p: p)(payload)
        signed = _remote.pack(name, fields["library"], payload, _sign.HmacSigner(KEY.encode()))
        if "machine" in changes or "abi" in changes:
            fields = json.loads(signed.split(b"\n", 2)[1])
            fields["machine"] = changes.get("machine", fields["machine"])
            fields["abi"] = changes.get("abi", fields["abi"])
            if fields["abi"] is None:  # stored before the header named one
                del fields["abi"]
            fields["signature"] = _sign.HmacSigner(KEY.encode()).sign(
                _remote._signed_text(
                    name,
                    fields["library"],
                    fields["machine"],
                    fields["size"],
                    fields["sha256"],
                    fields.get("abi", ""),
                )
            )
            signed = magic + b"\n" + json.dumps(fields).encode() + b"\n" + payload
        return signed

    return alter


REFUSALS = {
    "tampered": (lambda blob, name: blob[:-100] + bytes(100), {},
                 "content digest mismatch (altered bytes)"),
    "truncated": (lambda blob, name: blob[:-100], {}, "truncated"),
    "wrong key": (lambda blob, name: blob, {"TVM_FFI_REMOTE_CACHE_KEY": "another-key-0123456789"},
                  "bad signature (another key, or an altered header)"),
    "unsigned": (lambda blob, name: blob.replace(b'"scheme": "hmac-sha256"', b'"scheme": ""'),
                 {}, None),
    "wrong arch": (_repacked(machine="aarch64"), {},
                   f"built for 'aarch64', this machine is '{os.uname().machine}'"),
    "not ELF": (_repacked(payload=lambda p: b"#!/bin/sh\n" + p[10:]), {}, None),
    # Stored by a release whose modules called ABI version 3: its header names no ABI.
    "ABI version 3": (_repacked(abi=None), {},
                      "built for the C ABI 'ABI version 3', this package's is 'tvm-ffi-c-abi-0.1'"),
    "another ABI": (_repacked(abi="tvm-ffi-c-abi-0.2"), {},
                    "built for the C ABI 'tvm-ffi-c-abi-0.2', this package's is "
                    "'tvm-ffi-c-abi-0.1'"),
}  # fmt: skip


@needs_redis
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_bad_entries_are_refused_and_built_locally(tmp_path, cxx, redis_url, case):
    alter, env, reason = REFUSALS[case]
    url = redis_url.replace("/0", f"/{2 + sorted(REFUSALS).index(case)}")
    if reason is None or reason == "truncated":
        # The message depends on the library's size or the ELF check's wording: probe it.
        a, _ = host(tmp_path / "probe", "a", cxx, TVM_FFI_REMOTE_CACHE=url + "9",
                    TVM_FFI_REMOTE_CACHE_MODE="write")  # fmt: skip
        size = os.path.getsize(a["path"])
        reason = {
            "truncated": f"truncated ({size - 100} of {size} bytes)",
            "unsigned": "signed with '', this host verifies 'hmac-sha256'",
            "not ELF": "not an ELF file",
        }[case]
    if case == "not ELF":
        from tvm_ffi._elf import library_problem

        probe = tmp_path / "probe.so"
        probe.write_bytes(b"#!/bin/sh\n" + bytes(100))
        with open(probe, "rb") as f:
            reason = library_problem(f.fileno(), os.fstat(f.fileno()))
    _refused(tmp_path, cxx, url, alter, reason, **env)


@needs_redis
def test_unsigned_entries_are_refused_unless_allowed(tmp_path, cxx, redis_url):
    url = redis_url.replace("/0", "/10")
    a, _ = host(tmp_path, "a", cxx, TVM_FFI_REMOTE_CACHE=url, TVM_FFI_REMOTE_CACHE_MODE="write",
                TVM_FFI_REMOTE_CACHE_UNSIGNED="allow", TVM_FFI_REMOTE_CACHE_KEY="")  # fmt: skip
    name = Path(a["path"]).parent.name
    b, calls = host(tmp_path, "b", cxx, TVM_FFI_REMOTE_CACHE=url)
    assert calls and b["warnings"] == [
        f"tvm_ffi.cpp: refused remote cache entry {name} from {url}: unsigned (set "
        "TVM_FFI_REMOTE_CACHE_UNSIGNED=allow to accept unsigned entries); building it locally"
    ]
    c, calls = host(tmp_path, "c", cxx, TVM_FFI_REMOTE_CACHE=url,
                    TVM_FFI_REMOTE_CACHE_UNSIGNED="allow")  # fmt: skip
    assert (c["stats"]["fetched"], calls) == (1, [])


def test_remote_down_warns_once_and_builds_locally(tmp_path, cxx):
    url = f"redis://127.0.0.1:{servers.free_port()}/0"  # nothing listens there
    start = time.monotonic()
    b, calls = host(tmp_path, "b", cxx, TVM_FFI_REMOTE_CACHE=url)
    assert b["value"] == 42 and calls
    assert len(b["warnings"]) == 1
    assert b["warnings"][0].startswith(f"tvm_ffi.cpp: remote cache {url} failed (ConnectionError")
    assert b["warnings"][0].endswith(
        "modules it lacks are built locally, and it is not tried again in this process"
    )
    assert time.monotonic() - start < 60


@needs_redis
def test_ten_hosts_missing_one_key_build_it_once(tmp_path, cxx, redis_url):
    url = redis_url.replace("/0", "/11")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TVM_FFI_REMOTE")}
    procs = []
    for index in range(10):
        env.update(TVM_FFI_CACHE_DIR=str(tmp_path / f"h{index}"), CXX=str(cxx),
                   CXX_LOG=str(tmp_path / "cxx.log"), TVM_FFI_REMOTE_CACHE_KEY=KEY,
                   TVM_FFI_REMOTE_CACHE=url, TVM_FFI_REMOTE_CACHE_MODE="write",
                   # Ten processes on a small machine: a slow answer must not count as a
                   # remote that is down (which would build locally and link twice).
                   TVM_FFI_REMOTE_CACHE_TIMEOUT="30",
                   PYTHONPATH=str(REPO / "tests"))  # fmt: skip
        procs.append(subprocess.Popen([sys.executable, "-c", HOST, "plain"], env=dict(env),
                                      stdout=subprocess.PIPE, text=True))  # fmt: skip
    reports = [json.loads(p.communicate(timeout=600)[0].splitlines()[-1]) for p in procs]
    links = [line for line in (tmp_path / "cxx.log").read_text().splitlines() if "-shared" in line]
    assert {r["value"] for r in reports} == {42}
    total = {key: sum(r["stats"][key] for r in reports) for key in ("published", "fetched")}
    assert (len(links), total) == (1, {"published": 1, "fetched": 9})


def test_no_remote_setting_imports_no_client(tmp_path, cxx):
    clients = "sorted(m for m in sys.modules if 'redis' in m or m == 'http.client')"
    code = f"{HOST}\nimport sys; print(json.dumps({clients}))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TVM_FFI_REMOTE")}
    env.update(TVM_FFI_CACHE_DIR=str(tmp_path / "c"), PYTHONPATH=str(REPO / "tests"))
    out = subprocess.run([sys.executable, "-c", code, "plain"], env=env, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert json.loads(out.splitlines()[-1]) == []


@needs_redis
def test_a_reader_authenticates_and_reads_over_tcp_and_a_unix_socket(tmp_path):
    # A serving host reads without the redis client (_remote_resp); a builder writes with it.
    from tvm_ffi.cpp import _remote_redis, _remote_resp

    socket_path = tmp_path / "redis.sock"
    options = ("--requirepass", "s3cret", "--unixsocket", str(socket_path))
    with servers.redis_server(tmp_path, *options) as url:
        tcp = url.replace("redis://", "redis://:s3cret@").replace("/0", "/3")
        writer = _remote_redis.Backend(tcp, 5.0)
        assert writer.put("m_0123", b"entry bytes") and not writer.put("m_0123", b"other")
        unix = f"unix://{socket_path}?db=3&password=s3cret"
        for reader in (_remote_resp.Backend(tcp, 5.0), _remote_resp.Backend(unix, 5.0)):
            assert (reader.get("m_0123"), reader.get("m_4567")) == (b"entry bytes", None)
            assert (reader.has("m_0123"), reader.locked("m_0123")) == (True, False)
            assert reader.entries() == [("m_0123", 11)]
        token = writer.lock("m_0123")
        assert _remote_resp.Backend(unix, 5.0).locked("m_0123")
        writer.unlock("m_0123", token)
        wrong = _remote_resp.Backend(url.replace("redis://", "redis://:wrong@"), 5.0)
        with pytest.raises(RuntimeError, match=r"^Redis: WRONGPASS"):
            wrong.get("m_0123")


# Registry authentication: Debian's docker-registry asking for htpasswd users (Basic), and a
# loopback token server in front of an open one (Bearer).
USER, PASSWORD = "alice", "pa55-w0rd"
IDENTITY_TOKEN = "refresh-0123456789"  # an identitytoken of Docker's config.json


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory):
    if servers.REGISTRY is None or servers.HTPASSWD is None:
        pytest.skip("needs docker-registry and htpasswd (Debian: docker-registry apache2-utils)")
    workdir = tmp_path_factory.mktemp("auth_registry")
    users = workdir / "htpasswd"
    users.write_bytes(subprocess.run([servers.HTPASSWD, "-Bbn", USER, PASSWORD],
                                     capture_output=True, check=True).stdout)  # fmt: skip
    with servers.registry(workdir, users) as url:
        yield url


def _secret_file(path: Path, text: str, mode: int) -> str:
    path.write_text(text + "\n")
    path.chmod(mode)
    return str(path)


def _docker_config(folder: Path, netloc: str, entry: dict) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"auths": {netloc: entry}}))
    return str(folder)


@pytest.mark.parametrize("source", ["env", "password file", "docker config"])
def test_hosts_authenticate_to_a_registry(tmp_path, cxx, install_b, auth_registry, source):
    url = f"{auth_registry}-{source.replace(' ', '-')}"
    netloc = url.split("/")[2]
    env = {
        "env": {"TVM_FFI_REMOTE_CACHE_OCI_USER": USER,
                "TVM_FFI_REMOTE_CACHE_OCI_PASSWORD": PASSWORD},
        "password file": {"TVM_FFI_REMOTE_CACHE_OCI_USER": USER,
                          "TVM_FFI_REMOTE_CACHE_OCI_PASSWORD_FILE":
                          _secret_file(tmp_path / "password", PASSWORD, 0o600)},
        "docker config": {"DOCKER_CONFIG": _docker_config(tmp_path / "docker", netloc, {
            "auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})},
    }[source]  # fmt: skip
    a, built = host(tmp_path, "a", cxx, TVM_FFI_REMOTE_CACHE=url,
                    TVM_FFI_REMOTE_CACHE_MODE="write", **env)  # fmt: skip
    assert built and (a["stats"]["published"], a["warnings"]) == (1, []), a
    b, calls = host(tmp_path, "b", cxx, "plain", install_b, TVM_FFI_REMOTE_CACHE=url, **env)
    assert (b["value"], calls, b["warnings"], b["stats"]["fetched"]) == (42, [], [], 1)


def test_a_wrong_password_warns_once_and_builds_locally(tmp_path, cxx, auth_registry):
    netloc = auth_registry.split("/")[2]
    b, calls = host(tmp_path, "b", cxx, TVM_FFI_REMOTE_CACHE=auth_registry,
                    TVM_FFI_REMOTE_CACHE_OCI_USER=USER,
                    TVM_FFI_REMOTE_CACHE_OCI_PASSWORD="not-the-password")  # fmt: skip
    assert b["value"] == 42 and calls
    assert b["warnings"] == [
        f"tvm_ffi.cpp: remote cache {auth_registry} failed (PermissionError: authentication "
        f"failed for {netloc} (HTTP 401) with TVM_FFI_REMOTE_CACHE_OCI_USER and "
        "TVM_FFI_REMOTE_CACHE_OCI_PASSWORD); modules it lacks are built locally, and it is not "
        "tried again in this process"
    ]


def test_a_credential_helper_is_not_run_but_named(tmp_path, monkeypatch, auth_registry):
    from tvm_ffi.cpp import _remote_oci

    netloc = auth_registry.split("/")[2]
    folder = tmp_path / "docker"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"credHelpers": {netloc: "ecr-login"}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(folder))
    for name in ("USER", "PASSWORD", "PASSWORD_FILE"):
        monkeypatch.delenv(f"TVM_FFI_REMOTE_CACHE_OCI_{name}", raising=False)
    with pytest.warns(RuntimeWarning) as caught:
        backend = _remote_oci.Backend(auth_registry, 5.0)
    assert [str(w.message) for w in caught] == [
        f"tvm_ffi.cpp: {folder / 'config.json'} names the credential helper "
        f"docker-credential-ecr-login for {netloc}; tvm_ffi runs no credential helper: export "
        "TVM_FFI_REMOTE_CACHE_OCI_USER and TVM_FFI_REMOTE_CACHE_OCI_PASSWORD (or "
        f"TVM_FFI_REMOTE_CACHE_OCI_PASSWORD_FILE) instead; trying {netloc} anonymously"
    ]
    with pytest.raises(PermissionError, match=rf"^authentication failed for {netloc} \(HTTP "
                       r"401\) with no credentials \(anonymous\)$"):  # fmt: skip
        backend.has("m_0123")


def test_a_password_file_others_can_read_is_refused(tmp_path, monkeypatch):
    from tvm_ffi.cpp import _remote_oci

    path = _secret_file(tmp_path / "password", PASSWORD, 0o640)
    monkeypatch.setenv("TVM_FFI_REMOTE_CACHE_OCI_USER", USER)
    monkeypatch.delenv("TVM_FFI_REMOTE_CACHE_OCI_PASSWORD", raising=False)
    monkeypatch.setenv("TVM_FFI_REMOTE_CACHE_OCI_PASSWORD_FILE", path)
    message = (f"TVM_FFI_REMOTE_CACHE_OCI_PASSWORD_FILE={path!r}: the password file is readable "
               f"by group or others (mode 640); run: chmod 600 {path}")  # fmt: skip
    with pytest.raises(PermissionError, match=f"^{re.escape(message)}$"):
        _remote_oci.Backend("oci://registry.example:5000/modules", 5.0)


def test_credentials_in_the_url_are_refused():
    from tvm_ffi.cpp import _remote_oci

    with pytest.raises(ValueError) as caught:
        _remote_oci.Backend(f"oci://{USER}:{PASSWORD}@registry.example:5000/modules", 5.0)
    assert str(caught.value) == (
        "oci://registry.example:5000/modules: credentials in the URL are refused; set "
        "TVM_FFI_REMOTE_CACHE_OCI_USER and TVM_FFI_REMOTE_CACHE_OCI_PASSWORD (or "
        "TVM_FFI_REMOTE_CACHE_OCI_PASSWORD_FILE)"
    )


@contextlib.contextmanager
def _token_gate(upstream: str) -> Iterator[tuple[str, list[str]]]:
    """A registry that asks for Bearer tokens: a loopback server that hands out a token per
    scope to alice (Basic) at /token and forwards requests bearing the right one to the open
    registry ``upstream``; its URL and the scopes asked for."""
    scopes: list[str] = []

    class Gate(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, status, headers, body=b""):
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _handle(self):
            parts = urllib.parse.urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if parts.path == "/token":  # Basic on a GET, or Docker's refresh token (a POST)
                form = urllib.parse.parse_qs(body.decode() if body else parts.query)
                basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
                if self.headers.get("Authorization") == f"Basic {basic}":
                    field = "token"
                elif form.get("refresh_token") == [IDENTITY_TOKEN]:
                    field = "access_token"
                else:
                    return self._reply(401, {})
                scopes.append(form["scope"][0])
                token = json.dumps({field: f"t:{form['scope'][0]}", "expires_in": 300}).encode()
                return self._reply(200, {"Content-Type": "application/json"}, token)
            repo = parts.path.split("/")[2:4]
            actions = "pull" if self.command in ("GET", "HEAD") else "pull,push"
            if (
                self.headers.get("Authorization")
                != f"Bearer t:repository:{'/'.join(repo)}:{actions}"
            ):
                realm = f"http://127.0.0.1:{self.server.server_port}/token"
                challenge = (f'Bearer realm="{realm}",service="gate",'
                             f'scope="repository:{"/".join(repo)}:{actions}"')  # fmt: skip
                return self._reply(401, {"WWW-Authenticate": challenge})
            conn = http.client.HTTPConnection(upstream, timeout=10)
            headers = {k: v for k, v in self.headers.items() if k != "Authorization"}
            conn.request(self.command, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            keep = ("Location", "Content-Type", "Docker-Content-Digest")
            self._reply(response.status, {k: response.getheader(k) for k in keep
                                          if response.getheader(k)}, data)  # fmt: skip
            conn.close()

        do_GET = do_HEAD = do_POST = do_PUT = _handle

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_port}", scopes
    finally:
        server.shutdown()
        server.server_close()


def test_a_bearer_token_is_asked_per_scope_and_kept(monkeypatch, registry_url):
    from tvm_ffi.cpp import _remote_oci, _remote_oci_auth

    monkeypatch.setenv("TVM_FFI_REMOTE_CACHE_OCI_USER", USER)
    monkeypatch.setenv("TVM_FFI_REMOTE_CACHE_OCI_PASSWORD", PASSWORD)
    with _token_gate(registry_url.split("/")[2]) as (netloc, scopes):
        url = f"oci://{netloc}/tvm-ffi/bearer"
        writer = _remote_oci.Backend(url, 5.0)
        assert writer.put("m_0123", b"entry bytes") and not writer.put("m_0123", b"other")
        reader = _remote_oci.Backend(url, 5.0)
        assert (reader.get("m_0123"), reader.get("m_4567")) == (b"entry bytes", None)
        # One token per scope for the process: later requests and backends reuse it.
        assert scopes == ["repository:tvm-ffi/bearer:pull", "repository:tvm-ffi/bearer:pull,push"]
        monkeypatch.setattr(_remote_oci_auth, "_tokens", {})
        monkeypatch.setenv("TVM_FFI_REMOTE_CACHE_OCI_PASSWORD", "not-the-password")
        with pytest.raises(PermissionError, match=rf"^authentication failed for {netloc} "
                           r"\(HTTP 401\) with TVM_FFI_REMOTE_CACHE_OCI_USER and "
                           r"TVM_FFI_REMOTE_CACHE_OCI_PASSWORD$"):  # fmt: skip
            _remote_oci.Backend(url, 5.0).has("m_0123")


def test_a_token_realm_over_plain_http_is_refused():
    from tvm_ffi.cpp import _remote_oci_auth

    session = _remote_oci_auth.Session("registry.example", "registry.example", 5.0)
    challenge = 'Bearer realm="http://auth.example/token",service="registry"'
    with pytest.raises(OSError, match=r"^registry.example: refusing the token realm "
                       r"'http://auth.example/token' \(not https://\)$"):  # fmt: skip
        session.answer(challenge, "repository:modules:pull")


def test_a_docker_identity_token_is_sent_as_a_refresh_token(tmp_path, monkeypatch, registry_url):
    from tvm_ffi.cpp import _remote_oci, _remote_oci_auth

    for name in ("USER", "PASSWORD", "PASSWORD_FILE"):
        monkeypatch.delenv(f"TVM_FFI_REMOTE_CACHE_OCI_{name}", raising=False)
    monkeypatch.setattr(_remote_oci_auth, "_tokens", {})
    with _token_gate(registry_url.split("/")[2]) as (netloc, scopes):
        entry = {"auth": "", "identitytoken": IDENTITY_TOKEN}
        monkeypatch.setenv("DOCKER_CONFIG", _docker_config(tmp_path / "docker", netloc, entry))
        backend = _remote_oci.Backend(f"oci://{netloc}/tvm-ffi/identity", 5.0)
        assert backend.put("m_0123", b"entry bytes") and backend.get("m_0123") == b"entry bytes"
        assert scopes == [
            "repository:tvm-ffi/identity:pull",
            "repository:tvm-ffi/identity:pull,push",
        ]


def test_a_builder_refused_the_lock_fetches_even_when_that_build_already_ended():
    # The race behind a second build: host A holds the lock when B asks for it, and has
    # published and unlocked by the time B checks whether it is still held.
    from tvm_ffi.cpp import _remote

    class Finished:
        locks = True

        def lock(self, name):
            return None  # A holds it

        def locked(self, name):
            return False  # ... and is done

        def has(self, name):
            return True

    tier = _remote.Tier(["redis://a/0"], True, None, True, 1.0)
    tier._backends["redis://a/0"] = Finished()
    with tier.claim("entry", 5.0) as waited:
        assert waited is True  # the caller fetches A's entry instead of building it again
