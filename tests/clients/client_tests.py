"""The two tests every client module gets; test_flashinfer.py and test_sglang.py
instantiate them for their client's cases."""

from __future__ import annotations

import client_cases
import client_env
import pytest


def _tail(output: str, lines: int = 60) -> str:
    return "\n".join(output.splitlines()[-lines:])


def _marks(case: client_cases.ClientModule, build: bool) -> list:
    return [] if case.ci or not build else [pytest.mark.clients_full]


def build_params(client: str) -> list:
    return [
        pytest.param(case.name, id=case.name, marks=_marks(case, build=True))
        for case in client_cases.CASES
        if case.client == client
    ]


def run_params(client: str) -> list:
    return [
        pytest.param(case.name, id=case.name, marks=_marks(case, build=False))
        for case in client_cases.CASES
        if case.client == client
    ]


def check_builds_and_loads(name: str, env: dict[str, str]) -> None:
    result = client_env.run_case(name, "build", env)
    assert result.ok, f"{name} did not build and load: {result.error}\n{_tail(result.output)}"


def check_matches_torch(name: str, env: dict[str, str]) -> None:
    result = client_env.run_case(name, "run", env)
    assert result.ok, f"{name}: {result.error}\n{_tail(result.output)}"
    if result.skipped:  # built and loaded; its kernels need another architecture
        pytest.skip(result.skipped)
