#!/usr/bin/env bash
# FlashInfer's own JIT builds its norm and page modules with apache-tvm-ffi 0.1.15.post2 as
# tvm_ffi (its headers, its libtvm_ffi.so), calls them against torch (the baseline) and
# copies each .so to FlashInfer's prebuilt folder for flashinfer_load_here.sh (README.md).
# Needs: .client-wheels/fi (FlashInfer) carried now, apache-tvm-ffi staged (.client-wheels/abi).
export EVID_NAME="flashinfer apache build"
# shellcheck source=/dev/null  # common.sh, checked on its own
source "$(dirname "$0")/common.sh"
stage_wheels
pytag=$("$PY" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
fi_whl=$(need_wheel 'flashinfer_python-0.7.2.post1-*.whl' .client-wheels/fi) || exit 1
ap_whl=$(need_wheel "apache_tvm_ffi-0.1.15.post2-$pytag-*.whl" .client-wheels/abi) || exit 1
install_into "$fi_whl" "$EVID_ROOT/flashinfer"
install_into "$ap_whl" "$EVID_ROOT/apache"
mkdir -p "$EVID_ROOT/env" && eval "$("$PY" "$EVID_DIR/flashinfer_evidence.py" env "$EVID_ROOT/env")"
rm -rf "$EVID_ROOT/ws-apache" "$EVID_ROOT/flashinfer-manifest.json"
# FLASHINFER_USE_CUDA_NORM: norm's CUDA JIT module rather than its CuTe DSL kernels. CC is
# nvcc's host compiler (-ccbin) and the C compiler Triton builds its helper with (page's module
# imports Triton), so a C driver: g++ would compile that helper's .c as C++ and fail.
PYTHONPATH="$REPO/tests/clients/site:$EVID_ROOT/apache:$EVID_ROOT/flashinfer" \
  FLASHINFER_WORKSPACE_BASE="$EVID_ROOT/ws-apache" FLASHINFER_USE_CUDA_NORM=1 \
  FLASHINFER_CUDA_ARCH_LIST="${FLASHINFER_CUDA_ARCH_LIST:-9.0a}" CC="${EVID_CC:-/usr/bin/gcc}" \
  "$PY" "$EVID_DIR/flashinfer_evidence.py" build "$EVID_ROOT/flashinfer-manifest.json"
rc=$?
for so in "$EVID_ROOT"/flashinfer/flashinfer/data/aot/*/*.so; do
  [ -e "$so" ] || continue
  echo "$(basename "$so") imports from libtvm_ffi (C ABI): $(nm -D --undefined-only "$so" | awk '/TVMFFI/ {printf "%s ", $2}')"
done
exit $rc
