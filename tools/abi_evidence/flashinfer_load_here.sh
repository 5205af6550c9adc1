#!/usr/bin/env bash
# Loads the modules flashinfer_apache_build.sh built against apache-tvm-ffi, with this
# package as tvm_ffi and apache's off sys.path, through FlashInfer's prebuilt (AOT) path,
# calls them against torch, and shows that nothing was rebuilt (README.md).
export EVID_NAME="flashinfer load here"
# shellcheck source=/dev/null  # common.sh, checked on its own
source "$(dirname "$0")/common.sh"
manifest=$EVID_ROOT/flashinfer-manifest.json
[ -f "$manifest" ] || die "no $manifest: run flashinfer_apache_build.sh first (same call, or the machine still warm)"
install_ours
# Every compiler, linker and ninja call of the process goes through a wrapper that logs it
# (then runs the real tool, so a build would show in the log rather than fail silently).
trap_dir=$EVID_ROOT/trap
trap_log=$EVID_ROOT/trap.log
rm -rf "$trap_dir" "$trap_log"
mkdir -p "$trap_dir"
for tool in nvcc c++ g++ gcc cc ld ninja; do
  if [ "$tool" = nvcc ]; then real=$CUDA_HOME/bin/nvcc; else real=$(command -v "$tool" || echo false); fi
  printf '#!/bin/sh\necho "%s $*" >>"%s"\nexec "%s" "$@"\n' "$tool" "$trap_log" "$real" >"$trap_dir/$tool"
  chmod +x "$trap_dir/$tool"
done
mkdir -p "$EVID_ROOT/env" && eval "$("$PY" "$EVID_DIR/flashinfer_evidence.py" env "$EVID_ROOT/env")"
rm -rf "$EVID_ROOT/ws-ours"
PYTHONPATH="$REPO/tests/clients/site:$OURS:$EVID_ROOT/flashinfer" \
  FLASHINFER_WORKSPACE_BASE="$EVID_ROOT/ws-ours" FLASHINFER_USE_CUDA_NORM=1 \
  FLASHINFER_DISABLE_JIT=1 FLASHINFER_CUDA_ARCH_LIST="${FLASHINFER_CUDA_ARCH_LIST:-9.0a}" \
  FLASHINFER_NVCC="$trap_dir/nvcc" CXX="$trap_dir/g++" CC="$trap_dir/gcc" PATH="$trap_dir:$PATH" \
  TVM_FFI_CACHE_DIR="$EVID_ROOT/tvm-ffi-cache" EVID_TRAP_LOG="$trap_log" \
  "$PY" "$EVID_DIR/flashinfer_evidence.py" load "$manifest"
