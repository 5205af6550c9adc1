#!/usr/bin/env bash
# Installs nvidia-cutlass-dsl 4.8.1 (cu13) from the carried wheels, then compiles and runs a
# CuTe-DSL kernel with --enable-tvm-ffi, this package being tvm_ffi (cute_dsl_kernel.py).
# Needs: .client-wheels/abi and .client-wheels/cute/part1 (staged by an earlier call of
# this script or of jax_tvm_ffi_load.sh) and .client-wheels/cute/part2 (README.md).
export EVID_NAME="cute-dsl"
# shellcheck source=/dev/null  # common.sh, checked on its own
source "$(dirname "$0")/common.sh"
stage_wheels
cu13=nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
join_parts "$cu13" .client-wheels/cute
dsl=$(need_wheel 'nvidia_cutlass_dsl-4.8.1-py3-none-any.whl' .client-wheels/abi) || exit 1
base=$(need_wheel 'nvidia_cutlass_dsl_libs_base-4.8.1-cp312-*.whl' .client-wheels/abi) || exit 1
core=$(need_wheel 'nvidia_cutlass_dsl_libs_core-4.8.1-*.whl' .client-wheels/abi) || exit 1
target=$EVID_ROOT/cutlass-dsl
if [ ! -f "$target/.complete" ]; then
  rm -rf "$target.partial"
  "$PY" -m pip install -q --no-deps --target "$target.partial" "$dsl" "$base" "$core" "$WHEELS/$cu13" \
    >"$EVID_ROOT/install-cutlass-dsl.log" 2>&1 || { tail -20 "$EVID_ROOT/install-cutlass-dsl.log"; die "pip install of nvidia-cutlass-dsl failed"; }
  touch "$target.partial/.complete" && mv "$target.partial" "$target"
fi
install_ours
# dsl_packages: what the wheel's .pth adds to sys.path in a site folder (not read from PYTHONPATH).
PYTHONPATH="$OURS:$target:$target/nvidia_cutlass_dsl/dsl_packages" \
  CUTE_DSL_CACHE_DIR="$EVID_ROOT/cute-dsl-cache" \
  "$PY" "$EVID_DIR/cute_dsl_kernel.py" "$EVID_ROOT/cute-work"
