#!/usr/bin/env bash
# Puts the wheels the evidence scripts install into the (git-ignored) .client-wheels/ of this
# tree, one folder per carry (README.md): abi/ (apache-tvm-ffi, jax-tvm-ffi, the three small
# nvidia-cutlass-dsl wheels), cute/part1 and cute/part2 (the 92 MB libs_cu13 wheel, halved),
# fi/ (FlashInfer). Usage: bash tools/abi_evidence/prepare_wheels.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
wheels=$here/../../.client-wheels
src=${ABI_WHEELS:-/tmp/abi_wheels}
mkdir -p "$wheels/abi" "$wheels/fi"
cp -u "${APACHE_WHEEL:-/work/main/.client-wheels/sg/apache_tvm_ffi-0.1.15.post2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl}" \
  "$src"/jax_tvm_ffi-0.1.3-*.whl "$src"/nvidia_cutlass_dsl-4.8.1-py3-none-any.whl \
  "$src"/nvidia_cutlass_dsl_libs_base-4.8.1-cp312-*.whl "$src"/nvidia_cutlass_dsl_libs_core-4.8.1-*.whl "$wheels/abi/"
[ -e "$wheels/fi/flashinfer_python-0.7.2.post1-py3-none-any.whl" ] ||
  cp "${FLASHINFER_WHEEL:-/work/main/.client-wheels/fi/flashinfer_python-0.7.2.post1-py3-none-any.whl}" "$wheels/fi/"
bash "$here/split_wheel.sh" "$src"/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-*.whl
du -sb "$wheels"/abi "$wheels"/fi "$wheels"/cute/part1 "$wheels"/cute/part2
