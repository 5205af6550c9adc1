"""``TVM_FFI_RECORD`` and ``python -m tvm_ffi.cache``, for real: a workload records on host A,
a builder with its own cache prebuilds and publishes to a redis-server on 127.0.0.1, host
B (another copy of the package, another cache) pulls and then loads without compiling.
The hosts' compiler logs every call but --version, so a test sees what was compiled."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import servers, tools

REPO = Path(__file__).resolve().parents[3]
KEY = "operator-secret-0123456789"

# The workload: the guide's first example and the launcher wrapper with an embedded image.
WORKLOAD = textwrap.dedent(
    """
    import json, sys
    from tvm_ffi import cpp
    from helpers.launcher_cases import PTX, WRAPPER
    plain = cpp.load_inline("rec_plain", cpp_sources="int add_one(int x) { return x + 1; }",
                            functions="add_one")
    wrapper = cpp.load_inline("rec_wrapper", cpp_sources=WRAPPER, embed_cubin={"kernels": PTX})
    assert plain.add_one(41) == 42
    print(json.dumps([str(plain.path), str(wrapper.path)]))
    print("full lookup" if "tvm_ffi.cpp._cached_build" in sys.modules else "hit index")
    """
)


def run(tmp_path, cache: str, cxx: Path, code: str, *args: str, install=None, **env: str):
    """Run ``code`` (Python) as a process of cache ``cache``: (exit status, stdout, stderr,
    the compiler calls it made)."""
    log = tmp_path / f"{cache}.cxx.{time.monotonic_ns()}.log"
    full = {k: v for k, v in os.environ.items() if not k.startswith(_OURS)}
    full.update(TVM_FFI_CACHE_DIR=str(tmp_path / cache), CXX=str(cxx), CXX_LOG=str(log),
                PYTHONPATH=str(REPO / "tests"), **env)  # fmt: skip
    if install is not None:  # that copy first, whatever the editable install adds
        code = f"import sys; sys.path.insert(0, {str(install)!r})\n{code}"
    proc = subprocess.run([sys.executable, "-c", code, *args], env=full, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, proc.stdout, proc.stderr, calls


_OURS = ("TVM_FFI_REMOTE", "TVM_FFI_RECORD")
CLI = "import sys; from tvm_ffi.cache._cli import main; sys.exit(main(sys.argv[1:]))"


def entries(paths: list[str]) -> list[str]:
    return [Path(path).parent.name for path in paths]


def test_recorded_modules_prebuilt_pulled_and_loaded_without_a_compiler(
    tmp_path, cxx, install_b, redis_url
):
    record = tmp_path / "workload.jsonl"
    rc, out, err, built = run(tmp_path, "a", cxx, WORKLOAD, TVM_FFI_RECORD=str(record))
    assert rc == 0 and built, err
    names = entries(json.loads(out.splitlines()[0]))
    # A second process finds both through the hit index: its records are the same.
    rc, out, err, calls = run(tmp_path, "a", cxx, WORKLOAD, TVM_FFI_RECORD=str(record))
    assert (rc, calls) == (0, []), err
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["entry"] for line in lines] == names * 2
    assert sorted(p.name for p in (tmp_path / "workload.jsonl.blobs").iterdir()) == sorted(
        {lines[0]["inputs"]["inline_cpp"], lines[1]["inputs"]["inline_cpp"],
         lines[1]["inputs"]["embeds"]["kernels"]}
    )  # fmt: skip

    remote = {"TVM_FFI_REMOTE_CACHE": redis_url, "TVM_FFI_REMOTE_CACHE_KEY": KEY}
    rc, out, err, built = run(tmp_path, "builder", cxx, CLI, "prebuild", str(record),
                              TVM_FFI_REMOTE_CACHE_MODE="write", **remote)  # fmt: skip
    assert (rc, out) == (0, "".join(f"{name}: built, published\n" for name in names)), err
    assert built

    rc, out, err, calls = run(tmp_path, "b", cxx, CLI, "pull", str(record), install=install_b,
                              **remote)  # fmt: skip
    assert (rc, out, calls) == (0, "".join(f"{n}: fetched from {redis_url}\n" for n in names), [])
    rc, out, err, calls = run(tmp_path, "b", cxx, WORKLOAD, install=install_b, **remote)
    # The pull recorded the hit index: the first load on B is a hit index hit.
    assert (rc, entries(json.loads(out.splitlines()[0])), out.splitlines()[1], calls) == (
        0, names, "hit index", []), err  # fmt: skip
    rc, out, err, _ = run(tmp_path, "b", cxx, CLI, "pull", str(record), **remote)
    assert out == "".join(f"{name}: in the local cache\n" for name in names)

    # A host with another compiler keys the modules otherwise: the pulled entries would
    # never be found, and the pull says so.
    other = tmp_path / "other-g++"
    other.write_text(tools.LOGGING_CXX + "# another compiler\n")
    other.chmod(0o755)
    rc, out, err, _ = run(tmp_path, "c", other, CLI, "pull", str(record), **remote)
    assert (rc, out) == (1, "".join(f"{n}: fetched from {redis_url}\n" for n in names))
    assert err == "".join(
        f"{record}:{line}: {n}: this host keys {n.rsplit('_', 1)[0]!r} otherwise (its compiler, "
        "CUDA toolkit or package differs from the recording host's): its loads will not find "
        "the pulled entry\n"
        for line, n in zip((1, 2), names)
    )

    rc, out, err, _ = run(tmp_path, "b", cxx, CLI, "stats")
    assert out == (f"cache {tmp_path / 'b'}: 1 processes\n  local hits   2\n  remote hits  0\n"
                   "  builds       0\n")  # fmt: skip
    rc, out, err, _ = run(tmp_path, "a", cxx, CLI, "stats")
    assert out == (f"cache {tmp_path / 'a'}: 2 processes\n  local hits   2\n  remote hits  0\n"
                   "  builds       2\n")  # fmt: skip
    # Prebuilding again publishes nothing twice.
    rc, out, err, calls = run(tmp_path, "builder", cxx, CLI, "prebuild", str(record),
                              TVM_FFI_REMOTE_CACHE_MODE="write", **remote)  # fmt: skip
    assert (rc, calls) == (0, []), err
    assert out == "".join(f"{name}: found in the local cache, already on the remote\n"
                          for name in names)  # fmt: skip


@pytest.fixture(scope="module")
def registry_url(tmp_path_factory):
    if servers.REGISTRY is None:
        pytest.skip("needs docker-registry (Debian: apt-get install docker-registry)")
    with servers.registry(tmp_path_factory.mktemp("registry")) as url:
        yield url


@pytest.mark.parametrize("kind", ["redis", "registry"])
def test_list_names_local_and_remote_entries(tmp_path, cxx, request, kind):
    from tvm_ffi.cpp import _remote_oci, _remote_resp

    if kind == "redis":
        url, backend = request.getfixturevalue("redis_url").replace("/0", "/1"), _remote_resp
    else:
        url, backend = request.getfixturevalue("registry_url") + "-list", _remote_oci
    remote = {"TVM_FFI_REMOTE_CACHE": url, "TVM_FFI_REMOTE_CACHE_KEY": KEY,
              "TVM_FFI_REMOTE_CACHE_MODE": "write"}  # fmt: skip
    rc, out, err, _ = run(tmp_path, "a", cxx, WORKLOAD, **remote)
    assert rc == 0, err
    names = entries(json.loads(out.splitlines()[0]))
    root = tmp_path / "a"
    listed = sorted(p for p in root.iterdir() if p.name.startswith(("rec_", "objects_")))
    week = time.time() - 7 * 86400 - 30
    sizes = {}
    for entry in listed:
        for file in entry.iterdir():
            if file.suffix in (".so", ".o"):
                os.utime(file, (week, week))
        sizes[entry.name] = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
    rc, out, err, _ = run(tmp_path, "a", cxx, CLI, "list", **remote)
    total = sum(sizes.values())

    def size(n: int) -> str:
        return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"

    stored = {name: len(backend.Backend(url, 5.0).get(name)) for name in names}
    assert (rc, out) == (0, "".join([
        f"local cache {root}: {len(listed)} entries, {size(total)}\n",
        *(f"  {e.name.rsplit('_', 1)[0]:<24} {e.name.rsplit('_', 1)[1]:<32} "
          f"{size(sizes[e.name]):>10} {'7d':>6}\n" for e in listed),
        f"remote {url}: 2 entries, {size(sum(stored.values()))}\n",
        *(f"  {n.rsplit('_', 1)[0]:<24} {n.rsplit('_', 1)[1]:<32} {size(stored[n]):>10}\n"
          for n in sorted(names)),
    ])), err  # fmt: skip


def _build(name: str, text: str) -> Path:
    from tvm_ffi import cpp

    return Path(cpp.build_inline(name, cpp_sources=f"int {text}(int x) {{ return x; }}",
                                 functions=text))  # fmt: skip


def test_prune_keeps_entries_in_use_or_locked(tmp_path, monkeypatch):
    from tvm_ffi.cache import _cli

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "c"))
    old, locked, loaded, fresh = (_build(f"prune_{n}", n) for n in ("old", "locked", "loaded",
                                                                        "fresh"))  # fmt: skip
    import tvm_ffi

    module = tvm_ffi.load_module(loaded)  # mapped by this process: in use
    month = time.time() - 30 * 86400
    for library in (old, locked, loaded):  # a load marks a library used: set after it
        os.utime(library, (month, month))
    size = _bytes(old.parent)
    lock = os.open(locked.parent / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)  # as a build holds it
    hits = tmp_path / "c" / "hits"
    assert any(f.read_text().startswith(f"{old.parent.name}/") for f in hits.iterdir())
    try:
        out = _run_main(_cli, ["prune", "--older-than", "7d"])
    finally:
        os.close(lock)
    assert out == (0, "".join([
        f"removed {old.parent.name} ({size / 1024:.1f} KiB)\n",
        f"kept {loaded.parent.name}: in use by process {os.getpid()}\n",
        f"kept {locked.parent.name}: locked by a build\n",
        f"pruned 1 entries, {size / 1024:.1f} KiB\n",
    ]))  # fmt: skip
    assert not old.parent.exists() and locked.exists() and loaded.exists() and fresh.exists()
    assert not any(f.read_text().startswith(f"{old.parent.name}/") for f in hits.iterdir())
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.startswith(".pruned")]
    del module


def test_prune_to_a_size_removes_the_least_recently_used(tmp_path, monkeypatch):
    from tvm_ffi.cache import _cli

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "c"))
    libraries = [_build(f"lru_{n}", n) for n in ("c", "a", "b")]
    for age, library in enumerate(libraries):  # c used last, then a, then b
        os.utime(library, (time.time() - 3600 * (1 + age),) * 2)
    c, a, b = libraries
    expected = "".join([
        f"removed {b.parent.name} ({_kib(b.parent)})\n",
        f"removed {a.parent.name} ({_kib(a.parent)})\n",
        f"pruned 2 entries, {(_bytes(a.parent) + _bytes(b.parent)) / 1024:.1f} KiB\n",
    ])  # fmt: skip
    assert _run_main(_cli, ["prune", "--max-size", f"{_bytes(c.parent) + 1}B"]) == (0, expected)
    assert c.exists()


def _bytes(entry: Path) -> int:
    return sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())


def _kib(entry: Path) -> str:
    return f"{_bytes(entry) / 1024:.1f} KiB"


def _run_main(cli, argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(argv)
    return status, out.getvalue()


BAD_INPUT = {
    "missing file": (["pull", "{dir}/none.jsonl"],
                     "error: record file {dir}/none.jsonl: no such file"),
    "not JSON": (["pull", "{dir}/bad.jsonl"], "error: {dir}/bad.jsonl:2: not a tvm_ffi record "
                 "(not JSON: Expecting value: line 1 column 1 (char 0))"),
    "bad entry": (["prebuild", "{dir}/escape.jsonl"], "error: {dir}/escape.jsonl:1: not a tvm_ffi "
                  "record (entry '../x' is not a cache entry name)"),
    "embed name": (["pull", "{dir}/embed.jsonl"], "error: {dir}/embed.jsonl:1: not a tvm_ffi "
                   "record (load_inline: embed name must be a C identifier (got 'a;b'))"),
    "flag": (["pull", "{dir}/flag.jsonl"], "error: {dir}/flag.jsonl:1: not a tvm_ffi record "
             "(load_inline: cflags[0] holds a newline (got '-DX\\nsystem(1)'); a compiler flag "
             "never does)"),
    "bad size": (["prune", "--max-size", "lots"],
                 "error: --max-size must be a size like 2G, 500M or 1024 (got 'lots')"),
    "bad age": (["prune", "--older-than", "7"],
                "error: --older-than must be a duration like 7d, 12h or 30m (got '7')"),
    "no limit": (["prune"], "error: prune: give --older-than, --max-size or both"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_an_error_naming_it(tmp_path, monkeypatch, capsys, case):
    from tvm_ffi.cache import _cli

    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("TVM_FFI_REMOTE_CACHE", raising=False)
    inputs = {"inline_cpp": "0" * 64, "inline_cuda": None, "files": [], "cflags": [],
              "cuda_cflags": [], "ldflags": [], "include_paths": [], "embeds": {},
              "arch": None, "arch_list": None}  # fmt: skip
    good = {"tvm_ffi_record": 1, "api": "load_inline", "name": "m", "entry": "m_0",
            "library": "m.so", "machine": os.uname().machine, "inputs": inputs}  # fmt: skip
    (tmp_path / "bad.jsonl").write_text(json.dumps(good) + "\noops\n")
    (tmp_path / "escape.jsonl").write_text(json.dumps({**good, "entry": "../x"}) + "\n")
    embeds = {**inputs, "embeds": {"a;b": "0" * 64}}
    (tmp_path / "embed.jsonl").write_text(json.dumps({**good, "inputs": embeds}) + "\n")
    flags = {**inputs, "cflags": ["-DX\nsystem(1)"]}
    (tmp_path / "flag.jsonl").write_text(json.dumps({**good, "inputs": flags}) + "\n")
    argv, message = BAD_INPUT[case]
    status = _cli.main([arg.format(dir=tmp_path) for arg in argv])
    assert (status, capsys.readouterr().err) == (1, message.format(dir=tmp_path) + "\n")


def test_unknown_command_and_no_remote(tmp_path, cxx):
    rc, _, err, _ = run(tmp_path, "c", cxx, CLI, "rebuild")
    assert rc == 2 and err.endswith(
        "error: argument command: invalid choice: 'rebuild' (choose from 'prebuild', 'pull', "
        "'list', 'prune', 'stats')\n"
    )
    (tmp_path / "empty.jsonl").write_text("")
    rc, _, err, _ = run(tmp_path, "c", cxx, CLI, "prebuild", str(tmp_path / "empty.jsonl"))
    assert (rc, err) == (1, "error: prebuild: no remote cache: set TVM_FFI_REMOTE_CACHE (and "
                         "TVM_FFI_REMOTE_CACHE_MODE=write to publish) and a key to sign or "
                         "verify entries with\n")  # fmt: skip


def test_concurrent_processes_append_whole_records(tmp_path, cxx):
    record = tmp_path / "r.jsonl"
    code = WORKLOAD.replace("print(", "(")
    rc, *_ = run(tmp_path, "warm", cxx, code)  # built once: the eight below only load
    assert rc == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OURS)}
    env.update(TVM_FFI_CACHE_DIR=str(tmp_path / "warm"), TVM_FFI_RECORD=str(record),
               PYTHONPATH=str(REPO / "tests"), CXX=str(cxx),
               CXX_LOG=str(tmp_path / "log"))  # fmt: skip
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env) for _ in range(8)]
    assert [p.wait(timeout=600) for p in procs] == [0] * 8
    lines = record.read_text().splitlines()
    assert len(lines) == 16 and all(json.loads(line)["tvm_ffi_record"] == 1 for line in lines)
    from tvm_ffi.cpp import _record

    assert [r.name for r in _record.read(str(record))] == ["rec_plain", "rec_wrapper"]


def test_an_unwritable_record_file_warns_once_and_loads(tmp_path, cxx):
    code = "import warnings; warnings.simplefilter('always')\n" + WORKLOAD
    (tmp_path / "file").write_text("")  # a file where the record's folder should be
    target = tmp_path / "file" / "r"
    rc, _, err, _ = run(tmp_path, "c", cxx, code, TVM_FFI_RECORD=str(target))
    assert rc == 0, err
    warned = [line for line in err.splitlines() if "cannot record" in line]
    assert len(warned) == 1 and warned[0].endswith(
        f"tvm_ffi.cpp: cannot record 'rec_plain' in TVM_FFI_RECORD={target}: "
        f"[Errno 20] Not a directory: '{target}.blobs'"
    ), err


CUDA_WORKLOAD = """
import json
from tvm_ffi import cpp
source = '''
__global__ void add_one_kernel(float* x) { x[threadIdx.x] += 1.0f; }
void add_one(tvm::ffi::TensorView x) {
  add_one_kernel<<<1, 32>>>(static_cast<float*>(x.data_ptr()));
}
'''
print(json.dumps([cpp.build_inline("rec_cuda", cuda_sources=source, functions="add_one")]))
"""


@pytest.mark.skipif(not tools.has_nvcc(), reason="needs nvcc (the CUDA toolkit)")
def test_a_builder_builds_for_the_architectures_the_recording_host_chose(tmp_path, cxx, redis_url):
    # Host A's own choice (the variable here; its GPUs or the default list elsewhere) is in
    # the record: a builder that would choose otherwise still builds A's module, A's key.
    record = tmp_path / "cuda.jsonl"
    rc, out, err, _ = run(tmp_path, "a", cxx, CUDA_WORKLOAD, TVM_FFI_RECORD=str(record),
                          TVM_FFI_CUDA_ARCH_LIST="8.0")  # fmt: skip
    assert rc == 0, err
    (name,) = entries(json.loads(out))
    assert json.loads(record.read_text())["inputs"]["arch_list"] == "8.0"
    url = redis_url.replace("/0", "/2")
    remote = {"TVM_FFI_REMOTE_CACHE": url, "TVM_FFI_REMOTE_CACHE_KEY": KEY,
              "TVM_FFI_REMOTE_CACHE_MODE": "write"}  # fmt: skip
    rc, out, err, _ = run(tmp_path, "builder", cxx, CLI, "prebuild", str(record),
                          TVM_FFI_CUDA_ARCH_LIST="9.0", **remote)  # fmt: skip
    assert (rc, out) == (0, f"{name}: built, published\n"), err
