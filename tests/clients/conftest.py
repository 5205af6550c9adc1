"""Set-up of the client suite (README.md): the clients installed once per session, and the
``clients_full`` builds skipped unless TVM_FFI_CLIENTS_FULL=1 (CPU CI builds the small ones).
"""

from __future__ import annotations

import os

import client_env
import pytest

FULL_ENV = "TVM_FFI_CLIENTS_FULL"


@pytest.fixture(scope="session")
def client_child_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of the child processes that build and call the clients' modules."""
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    if not os.path.isfile(nvcc):
        pytest.skip(f"the clients' JIT builds need nvcc (not at {nvcc}; set CUDA_HOME)")
    packages = client_env.install_clients()
    return client_env.child_env(packages, tmp_path_factory.mktemp("clients"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(FULL_ENV) == "1":
        return
    skip = pytest.mark.skip(
        reason=f"a larger client build: set {FULL_ENV}=1 (the GPU suite builds it)"
    )
    for item in items:
        if item.get_closest_marker("clients_full") is not None:
            item.add_marker(skip)
