#!/usr/bin/env bash
# Stages the carried wheels, installs this package (pip --target) and runs
# jax_tvm_ffi_load.py with it as tvm_ffi (README.md). Needs .client-wheels/abi.
export EVID_NAME="jax-tvm-ffi load"
# shellcheck source=/dev/null  # common.sh, checked on its own
source "$(dirname "$0")/common.sh"
stage_wheels
whl=$(need_wheel 'jax_tvm_ffi-0.1.3-*.whl' .client-wheels/abi) || exit 1
install_ours
PYTHONPATH="$OURS" "$PY" "$EVID_DIR/jax_tvm_ffi_load.py" "$whl"
