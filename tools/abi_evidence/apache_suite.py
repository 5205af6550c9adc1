"""Runs apache-tvm-ffi's own Python tests (tests/python of its source release) against the
`tvm_ffi` this Python imports, and compares the outcome with the classified list of tests
known to fail here (apache_suite_expected.txt). apache_suite.sh is the entry point; README.md
("apache-tvm-ffi's own tests") says what is deselected and why the listed tests fail.

Steps: the source release (sdist) and the wheel of APACHE_VERSION come from the package
registry through pip, once, into ~/.cache/tvm-ffi-tests (where tests/helpers/apache_wheel.py
keeps the wheel); tests/python is unpacked into a fresh folder with apache_suite_conftest.py
as its conftest.py (it loads apache's libtvm_ffi_testing.so, taken from the wheel, into this
package's runtime); pytest runs there, CPU only; the last line printed is

    SUMMARY apache tests: N passed, M failed, K skipped (deselected: ...)

Exit status 0 when every failure is listed in the expected file (and nothing listed passes
unnoticed: those are printed as NOW PASSING, a cue to shorten the list), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import NoReturn

APACHE_VERSION = "0.1.15.post2"
HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "apache_suite_expected.txt"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tvm-ffi-tests"

# Deselected, by path under tests/python, with the reason (README.md's table repeats them).
DESELECTED = {
    "test_current_work_stream_gpu.py": "GPU only",
    "test_cubin_launcher.py": "GPU only (launches CUBIN kernels)",
    "test_stubgen_rust.py": "builds apache's Rust crates (cargo, its source tree)",
    "test_rust_static_init.py": "builds apache's Rust crates (cargo, its source tree)",
}


def _stop(reason: str) -> NoReturn:
    """Ends the run without results: the reason on stderr, the SUMMARY line last on stdout."""
    print(f"apache_suite: {reason}", file=sys.stderr, flush=True)
    print(f"SUMMARY apache tests: not run ({reason})")
    sys.exit(1)


def _pip_download(args: list[str]) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--dest", str(CACHE)]
    try:
        subprocess.run([*cmd, *args, f"apache-tvm-ffi=={APACHE_VERSION}"], check=True, timeout=900)
    except (subprocess.SubprocessError, OSError) as err:
        _stop(f"pip download of apache-tvm-ffi=={APACHE_VERSION} failed ({err}); no network?")


def sdist() -> Path:
    """apache-tvm-ffi's source release (its tests/ are in it), downloaded once."""
    found = sorted(CACHE.glob(f"apache_tvm_ffi-{APACHE_VERSION}.tar.gz"))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        # Only this package from source: its build requirements come as wheels (pip prepares
        # the metadata of a source release, which needs them).
        _pip_download(["--no-binary", "apache-tvm-ffi"])
        found = sorted(CACHE.glob(f"apache_tvm_ffi-{APACHE_VERSION}.tar.gz"))
    if not found:
        _stop(f"pip left no apache_tvm_ffi-{APACHE_VERSION}.tar.gz in {CACHE}")
    return found[0]


def testing_library(into: Path) -> Path:
    """apache's libtvm_ffi_testing.so (a C++ library on the C ABI: the same file for every
    Python), out of its wheel for this interpreter."""
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    pattern = f"apache_tvm_ffi-{APACHE_VERSION}-{tag}-*.whl"
    found = sorted(CACHE.glob(pattern))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        _pip_download(["--only-binary=:all:"])
        found = sorted(CACHE.glob(pattern))
    if not found:
        _stop(f"pip left no {pattern} in {CACHE}")
    member = "tvm_ffi/lib/libtvm_ffi_testing.so"
    with zipfile.ZipFile(found[0]) as wheel:
        target = into / "libtvm_ffi_testing.so"
        target.write_bytes(wheel.read(member))
    return target


def unpack_tests(archive: Path, into: Path) -> Path:
    """tests/python of the source release, as <into>/python (no other file of it)."""
    top = f"apache_tvm_ffi-{APACHE_VERSION}/tests/python/"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(top) and m.isfile()]
        if not members:
            _stop(f"{archive.name} has no {top} (ask for the git tag instead)")
        for m in members:
            m.name = "python/" + m.name[len(top) :]
        tar.extractall(into, members=members, filter="data")
    return into / "python"


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | skipped; a module that failed to import is one failure,
    its id the module's path."""
    result: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        name = case.get("name", "")
        test_id = f"{module}.py::{name}" if module else f"{name.replace('.', '/')}.py"
        if case.find("failure") is not None or case.find("error") is not None:
            result[test_id] = "failed"
        elif case.find("skipped") is not None:
            result[test_id] = "skipped"
        else:
            result[test_id] = "passed"
    return result


def expected_failures() -> dict[str, str]:
    """test id -> its class (A/B/C and the reason) from apache_suite_expected.txt."""
    found = {}
    for line in EXPECTED.read_text().splitlines():
        test_id, _, why = line.partition("#")
        if test_id.strip():
            found[test_id.strip()] = why.strip()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and keep it (else a temp dir)")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (e.g. -k, -x)")
    args = parser.parse_args()

    import tvm_ffi

    if Path(tvm_ffi.__file__).with_name("_ffi_api.py").exists():
        _stop(f"{tvm_ffi.__file__} is apache-tvm-ffi's, not this package's")
    print(f"tvm_ffi under test: {tvm_ffi.__file__} ({tvm_ffi.__version__})", flush=True)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="apache-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "python", ignore_errors=True)
    tests = unpack_tests(sdist(), work)
    shutil.copy(HERE / "apache_suite_conftest.py", tests / "conftest.py")
    # An empty ini: apache's pyproject.toml asks for pytest-xdist (-n auto), not installed here.
    (work / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, APACHE_TESTING_LIB=str(testing_library(work)))
    junit = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "python", "-q", "-p", "no:cacheprovider", "-rfE"]
    cmd += ["--continue-on-collection-errors", f"--junitxml={junit}"]
    cmd += [f"--ignore=python/{path}" for path in DESELECTED]
    cmd += args.pytest_args
    subprocess.run(cmd, cwd=work, env=env)
    if not junit.exists():
        _stop("pytest wrote no report")

    results = outcomes(junit)
    expected = expected_failures()
    failed = sorted(t for t, r in results.items() if r == "failed")
    unexpected = [t for t in failed if t not in expected]
    fixed = sorted(t for t in expected if results.get(t) == "passed")
    for test_id in unexpected:
        print(f"UNEXPECTED FAILURE {test_id}")
    for test_id in fixed:
        print(f"NOW PASSING {test_id}  (listed: {expected[test_id]})")
    counts = {r: sum(1 for v in results.values() if v == r) for r in ("passed", "skipped")}
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"SUMMARY apache tests: {counts['passed']} passed, {len(failed)} failed, "
        f"{counts['skipped']} skipped (deselected: {', '.join(DESELECTED)}; "
        f"{len(failed) - len(unexpected)} failures listed in {EXPECTED.name}, "
        f"{len(unexpected)} not)"
    )
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
