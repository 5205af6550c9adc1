"""Fixtures of the staging tests: apache-tvm-ffi's wheel (the reference they compare with), and
the runtime the Python core's tests (test_pycore_*.py) run on: apache's and ours."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import apache_wheel
from helpers.next_pycore import RUNTIMES


@pytest.fixture(params=RUNTIMES)
def core_runtime(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def wheel() -> Path:
    return apache_wheel.require_wheel()
