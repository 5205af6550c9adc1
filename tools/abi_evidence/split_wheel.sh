#!/usr/bin/env bash
# Cuts a wheel over the 64 MiB a call may carry into two halves, each in a folder of its own
# (carried in two consecutive calls): .client-wheels/cute/part1/<wheel>.part1 (with the
# wheel's sha256) and .client-wheels/cute/part2/<wheel>.part2. cute_dsl_kernel.sh joins them.
# Usage: bash tools/abi_evidence/split_wheel.sh [WHEEL]   (SPLIT_DEST: another folder)
set -euo pipefail
src=${1:-/tmp/abi_wheels/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl}
[ -f "$src" ] || { echo "no wheel $src" >&2; exit 1; }
dest=${SPLIT_DEST:-$(cd "$(dirname "$0")/../.." && pwd)/.client-wheels/cute}
name=$(basename "$src")
size=$(stat -c %s "$src")
half=$(((size + 1) / 2))
rm -rf "$dest/part1" "$dest/part2"
mkdir -p "$dest/part1" "$dest/part2"
head -c "$half" "$src" >"$dest/part1/$name.part1"
tail -c +"$((half + 1))" "$src" >"$dest/part2/$name.part2"
(cd "$(dirname "$src")" && sha256sum "$name") >"$dest/part1/$name.sha256"
ls -l "$dest/part1" "$dest/part2"
