#!/usr/bin/env bash
# apache-tvm-ffi 0.1.15.post2's own Python tests, run against the tvm_ffi that $PYTHON imports
# (this package, installed or editable), CPU only. Needs the package registry once (pip
# downloads apache's source release and wheel into ~/.cache/tvm-ffi-tests). Prints
# `SUMMARY apache tests: N passed, M failed, K skipped (deselected: ...)` last; exits 1 when a
# test fails that apache_suite_expected.txt does not list. See README.md.
#   bash tools/abi_evidence/apache_suite.sh [--keep DIR] [-- pytest args]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PIP_DISABLE_PIP_VERSION_CHECK=1
exec "${PYTHON:-python3}" "$here/apache_suite.py" "$@"
