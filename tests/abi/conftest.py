"""The Python core's tests (test_pycore_*.py) run on apache-tvm-ffi's runtime and on ours."""

from __future__ import annotations

import pytest

from helpers.next_pycore import RUNTIMES


@pytest.fixture(params=RUNTIMES)
def core_runtime(request: pytest.FixtureRequest) -> str:
    return request.param
