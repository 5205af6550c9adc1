"""What a link reads besides the module's own sources: cached object entries (the compiled
wrapper, the launcher runtime) are checked before a link takes them, and the package's
prebuilt files are part of what a cache hit checks. No GPU needed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.launcher_cases import PTX, WRAPPER, bad_image, entries, has_cuda_headers, raised
from tvm_ffi import _elf, config, cpp
from tvm_ffi.cpp import _prebuilt

needs_cuda_headers = pytest.mark.skipif(not has_cuda_headers(), reason="needs the CUDA headers")


@pytest.fixture(autouse=True)
def one_cuda_arch(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.delenv("CXX", raising=False)  # the compiler the package was built with


def _load_wrapper(image: bytes, flags: list[str]):
    return cpp.load_inline("jit_inputs", cpp_sources=WRAPPER, functions=["load_bytes"],
                           embed_cubin={"kernels": image}, extra_cflags=flags)  # fmt: skip


def _sound(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return _elf.object_problem(fd, os.fstat(fd)) is None
    finally:
        os.close(fd)


@needs_cuda_headers
@pytest.mark.parametrize(
    ("stem", "flags"),
    [("objects", []), ("cuda_launcher", ["-fno-strict-aliasing"])],
    ids=["objects", "launcher"],
)
def test_a_cut_object_entry_is_rebuilt_with_one_warning(cache_dir, stem, flags):
    """An object entry cut short was taken for whole (its size was above zero): every
    later link of that wrapper with a new image failed with gold's "internal error in
    find_view", and nothing rebuilt it."""
    _load_wrapper(PTX, flags)
    (entry,) = entries(cache_dir, stem)
    obj = entry / f"{stem}.o"
    size = obj.stat().st_size
    os.truncate(obj, size // 2)
    with pytest.warns(RuntimeWarning) as record:
        mod = _load_wrapper(PTX + b"// another image\n", flags)
    with pytest.raises(ValueError) as info:
        mod.load_bytes(b"\x12\x34\x56\x78")
    assert raised(info.value) == bad_image(mod.path)
    assert [str(warning.message) for warning in record] == [
        f"tvm_ffi.cpp: the cached object file {obj} is damaged (truncated: the file has "
        f"{size // 2} bytes but its headers and sections need {size} (a write or copy was "
        "cut short)); rebuilding it"
    ]
    assert _sound(obj)


HIT = textwrap.dedent(
    """
    import sys
    from tvm_ffi import cpp
    wrapper, image = sys.argv[1], sys.argv[2].encode()
    cpp.build_inline("jit_inputs", cpp_sources=wrapper, functions=["load_bytes"],
                     embed_cubin={"kernels": image})
    print("full way" if "tvm_ffi.cpp._cached_build" in sys.modules else "hit")
    """
)


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the installed package (its headers and CMake files beside it when they
    are not inside it, as in a checkout), for a test that replaces one of its files; the
    large files are links to the originals. Returns its ``tvm_ffi`` folder."""
    package = Path(cpp.__file__).parent.parent
    root = tmp_path / "copy"
    copy = root / "python" / "tvm_ffi"
    large = 1 << 20
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"),
                    copy_function=lambda src, dst: os.symlink(src, dst)
                    if os.path.getsize(src) > large else shutil.copy2(src, dst))  # fmt: skip
    for name, folder in (("include", config.get_include_dir()), ("cmake", config.get_cmake_dir())):
        if not (copy / name).exists():
            (root / name).symlink_to(folder)
    return copy


@needs_cuda_headers
@pytest.mark.parametrize("name", [_prebuilt.LAUNCHER_OBJECT, f"{_prebuilt.PCH_HEADER}.gch"])
def test_a_replaced_prebuilt_file_is_not_a_hit(cache_dir, package_copy, name):
    """The hit index checked the package headers, not the files built ahead from them: a
    replaced tvm_ffi/lib/jit/cuda_launcher.o (headers unchanged) kept the library linked
    with the old one loading in every fresh process."""
    prebuilt = package_copy.joinpath(*_prebuilt.FOLDER, name)
    if not prebuilt.exists():
        pytest.skip(f"this install has no {name}")
    env = {**os.environ, "PYTHONPATH": str(package_copy.parent)}

    def run() -> str:
        argv = [sys.executable, "-c", HIT, WRAPPER, PTX.decode()]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert run() == "full way"  # built, and recorded in the hit index
    assert run() == "hit"
    # A new file with the same bytes and time stamp (a reinstall, a copy): only the inode
    # tells it apart, and that is enough to look again.
    replacement = prebuilt.with_name(f"{name}.new")
    shutil.copy2(prebuilt, replacement)
    os.replace(replacement, prebuilt)
    assert run() == "full way"
    assert run() == "hit"
