#!/usr/bin/env bash
# Installs the package without network and runs everything that needs a GPU:
# the gpu-marked tests (examples and consumer projects included), then the launcher
# tests and examples again under compute-sanitizer memcheck. Prints a summary last.
# Usage: bash tools/gpu_suite.sh [extra pytest args]
# SKIP_PYTEST=1 runs the memcheck pass alone, SKIP_MEMCHECK=1 the tests alone.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
PY=${PYTHON:-python3}
LOG=${OUT:-/tmp/gpu_suite}
mkdir -p "$LOG"
export TVM_FFI_CACHE_DIR=${TVM_FFI_CACHE_DIR:-$(mktemp -d /tmp/tvm-ffi-cache.XXXX)}
export PYTHONUNBUFFERED=1
# The client suite (tests/clients) installs FlashInfer and sglang from wheels on a machine
# without network: .client-wheels/{fi,sg} (tests/clients/README.md), or /tmp/client-wheels/*
# where an earlier call left them (each folder travels in a call of its own: 64 MiB a call).
if [ -z "${TVM_FFI_CLIENT_WHEELS:-}" ]; then
  # shellcheck disable=SC2012  # names of folders this project makes, then joined by ':'
  TVM_FFI_CLIENT_WHEELS=$(ls -d "$PWD"/.client-wheels/* /tmp/client-wheels/* 2>/dev/null | paste -sd:)
  export TVM_FFI_CLIENT_WHEELS
fi
export TVM_FFI_CLIENTS_JOBS=${TVM_FFI_CLIENTS_JOBS:-6}  # their modules built 6 at a time

$PY -m pip install -q --no-build-isolation --no-deps --no-index . >"$LOG/install.log" 2>&1
install_rc=$?
if [ $install_rc -ne 0 ]; then cat "$LOG/install.log"; echo "GPU suite: install failed"; exit 1; fi

if [ -z "${SKIP_PYTEST:-}" ]; then
  $PY -m pytest tests -m gpu -q -rfEs -p no:cacheprovider "$@" 2>&1 | tee "$LOG/pytest_gpu.log"
  gpu_rc=${PIPESTATUS[0]}
else
  echo "pytest skipped (SKIP_PYTEST set)" | tee "$LOG/pytest_gpu.log"; gpu_rc=0
fi

# memcheck: the launcher tests and the examples, each process under the sanitizer.
memcheck_rc=0
: >"$LOG/memcheck.log"
[ -n "${SKIP_MEMCHECK:-}" ] && echo "memcheck skipped (SKIP_MEMCHECK set)" >"$LOG/memcheck.log"
for target in tests/cpp/cuda/test_cubin_launcher_gpu.py examples/cubin_launcher/example_*.py; do
  [ -e "$target" ] && [ -z "${SKIP_MEMCHECK:-}" ] || continue
  # The launcher tests provoke CUDA API errors on purpose (missing kernel, wrong arch,
  # oversized block, parameter-count probing): count only memory errors there.
  # shellcheck disable=SC2206  # $PY splits as on the other lines: PYTHON may carry options
  if [[ $target == tests/* ]]; then
    cmd=($PY -m pytest "$target" -q -p no:cacheprovider); api=(--report-api-errors no)
  else
    cmd=($PY "$target"); api=()
  fi
  compute-sanitizer --tool memcheck "${api[@]}" --error-exitcode 99 --target-processes all \
    "${cmd[@]}" >>"$LOG/memcheck.log" 2>&1
  rc=$?
  echo "memcheck $target: rc=$rc" | tee -a "$LOG/memcheck.log"
  [ $rc -ne 0 ] && memcheck_rc=$rc
done

echo "================ summary ================"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2
echo "pytest -m gpu: $(grep -E '^[0-9]+ (passed|failed)|(passed|failed|error).* in [0-9.]+s' "$LOG/pytest_gpu.log" | tail -1) (rc=$gpu_rc)"
grep -E "ERROR SUMMARY" "$LOG/memcheck.log" | sort | uniq -c | sed 's/^/memcheck: /'
grep -E "^memcheck " "$LOG/memcheck.log"
[ "$gpu_rc" -eq 0 ] && [ "$memcheck_rc" -eq 0 ]
