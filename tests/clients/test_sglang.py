"""sglang's jit_kernel modules built, loaded and (on a GPU) called through its own code."""

from __future__ import annotations

import pytest
from client_tests import build_params, check_builds_and_loads, check_matches_torch, run_params

pytestmark = pytest.mark.clients


@pytest.mark.parametrize("name", build_params("sglang"))
def test_builds_and_loads(name: str, client_child_env: dict[str, str]) -> None:
    check_builds_and_loads(name, client_child_env)


@pytest.mark.gpu
@pytest.mark.parametrize("name", run_params("sglang"))
def test_matches_torch(name: str, client_child_env: dict[str, str]) -> None:
    check_matches_torch(name, client_child_env)
