"""tools/abi_evidence/apache_suite.py reads pytest's report and its list of known failures as
it should (the run itself needs apache's source release: not part of this suite)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _tool():
    path = REPO / "tools" / "abi_evidence" / "apache_suite.py"
    spec = importlib.util.spec_from_file_location("apache_suite", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_outcomes_of_a_junit_report(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="python.test_a" name="test_ok"/>'
        '<testcase classname="python.test_a" name="test_bad[x-1]"><failure message="m"/></testcase>'
        '<testcase classname="python.utils.test_b" name="test_skip"><skipped/></testcase>'
        '<testcase classname="" name="python.test_c"><error message="collection"/></testcase>'
        "</testsuite></testsuites>"
    )
    assert _tool().outcomes(report) == {
        "python/test_a.py::test_ok": "passed",
        "python/test_a.py::test_bad[x-1]": "failed",
        "python/utils/test_b.py::test_skip": "skipped",
        "python/test_c.py": "failed",  # a file that fails to import
    }


def test_every_known_failure_has_a_class():
    known = _tool().expected_failures()
    assert known
    for test_id, why in known.items():
        assert re.fullmatch(r"python/[\w/]+\.py(::\S+)?", test_id), test_id
        assert re.match(r"(A\??, open|B|C)[ :+]", why), f"{test_id}: {why!r}"
