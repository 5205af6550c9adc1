"""Set-up of the client suite (README.md): the clients installed once per session, and the
``clients_full`` builds skipped unless TVM_FFI_CLIENTS_FULL=1 (CPU CI builds the small ones).
"""

from __future__ import annotations

import concurrent.futures
import os

import client_env
import pytest

FULL_ENV = "TVM_FFI_CLIENTS_FULL"
#: Cases built at once before the tests run (the GPU suite sets it); each test then finds its
#: module in the session's caches. 1: every test builds its own, one after another.
JOBS_ENV = "TVM_FFI_CLIENTS_JOBS"


@pytest.fixture(scope="session")
def client_child_env(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, str]:
    """Environment of the child processes that build and call the clients' modules."""
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    if not os.path.isfile(nvcc):
        pytest.skip(f"the clients' JIT builds need nvcc (not at {nvcc}; set CUDA_HOME)")
    packages = client_env.install_clients()
    env = client_env.child_env(packages, tmp_path_factory.mktemp("clients"))
    _prebuild(request.session.items, env, int(os.environ.get(JOBS_ENV, "1")))
    return env


def _prebuild(items: list[pytest.Item], env: dict[str, str], jobs: int) -> None:
    """Builds the modules of the selected, unskipped cases `jobs` at a time. A failure here is
    not reported: the case's own test builds it again and fails with the whole output."""
    if jobs <= 1:
        return
    names = sorted(
        {
            item.callspec.params["name"]
            for item in items
            if "client_child_env" in getattr(item, "fixturenames", ())
            and hasattr(item, "callspec")
            and item.get_closest_marker("skip") is None
        }
    )
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda name: client_env.run_case(name, "build", env), names))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(FULL_ENV) == "1":
        return
    skip = pytest.mark.skip(
        reason=f"a larger client build: set {FULL_ENV}=1 (the GPU suite builds it)"
    )
    for item in items:
        if item.get_closest_marker("clients_full") is not None:
            item.add_marker(skip)
