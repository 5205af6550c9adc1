# shellcheck shell=bash
# Sourced by the evidence scripts of this folder (README.md): where things live on the GPU
# machine, and the steps they share. The machine has no network: wheels come carried in the
# tree under .client-wheels/ and are staged under $EVID_ROOT/wheels, where they outlive the
# call while the machine stays warm (so a later call need not carry them again).
set -uo pipefail
EVID_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$EVID_DIR/../.." && pwd)
EVID_ROOT=${EVID_ROOT:-/tmp/abi-evidence}
WHEELS=$EVID_ROOT/wheels
OURS=${EVID_OURS:-$EVID_ROOT/ours} # this package, installed with pip --target
PY=${PYTHON:-python3}
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
# The GPU host's default g++ (/opt/gcc) has no shared libstdc++ (docs/dev/cxx_runtime.md).
export CXX=${EVID_CXX:-/usr/bin/g++}
if [ -z "${CUDA_HOME:-}" ]; then
  CUDA_HOME=/usr/local/cuda
  [ -x $CUDA_HOME/bin/nvcc ] || CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
fi
export CUDA_HOME
mkdir -p "$WHEELS"

# fd 3 is the script's stdout, also inside $(...): a step that dies there still prints the summary.
exec 3>&1
die() {
  echo "$*" >&2
  echo "SUMMARY ${EVID_NAME:-abi-evidence}: FAIL ($*)" >&3
  exit 1
}

# Copies the wheels (and wheel parts) carried in this call into $WHEELS.
stage_wheels() {
  local f
  while IFS= read -r -d '' f; do
    [ -e "$WHEELS/$(basename "$f")" ] || cp "$f" "$WHEELS/"
  done < <(find "$REPO/.client-wheels" -type f \( -name '*.whl' -o -name '*.whl.part*' -o -name '*.whl.sha256' \) -print0 2>/dev/null)
}

# Prints the one staged wheel whose name matches $1, or dies naming the carry it needs ($2).
need_wheel() {
  local found
  found=$(find "$WHEELS" -maxdepth 1 -name "$1" | head -1)
  [ -n "$found" ] || die "no wheel $1 in $WHEELS: carry $2 in this call (or in the call just before, machine still warm)"
  echo "$found"
}

# Joins $WHEELS/$1.part1 and .part2 (split_wheel.sh) into $WHEELS/$1 unless it is there, and
# checks the sha256 split_wheel.sh wrote; $2 names the folder the parts are carried from.
join_parts() {
  local name=$1 p1 p2 want got
  [ -f "$WHEELS/$name" ] && return 0
  p1=$(need_wheel "$name.part1" "$2/part1") || exit 1
  p2=$(need_wheel "$name.part2" "$2/part2") || exit 1
  cat "$p1" "$p2" >"$WHEELS/$name.partial"
  want=$(awk '{print $1}' "$WHEELS/$name.sha256" 2>/dev/null)
  got=$(sha256sum "$WHEELS/$name.partial" | awk '{print $1}')
  if [ -z "$want" ] || [ "$want" != "$got" ]; then
    rm -f "$WHEELS/$name.partial"
    die "joined $name: sha256 $got, expected ${want:-(no $name.sha256 staged)}"
  fi
  mv "$WHEELS/$name.partial" "$WHEELS/$name"
  echo "joined $name (sha256 $got)"
}

# pip install --no-deps --target $2 of wheel (or source tree) $1, once: a folder is complete
# only after the install succeeded (renamed from .partial), so a failed call leaves nothing.
install_into() {
  local what=$1 target=$2
  [ -f "$target/.complete" ] && return 0
  rm -rf "$target.partial"
  if ! "$PY" -m pip install -q --no-deps --no-build-isolation --target "$target.partial" "$what" \
    >"$EVID_ROOT/install-$(basename "$target").log" 2>&1; then
    tail -30 "$EVID_ROOT/install-$(basename "$target").log" >&2
    die "pip install of $what into $target failed (log: $EVID_ROOT/install-$(basename "$target").log)"
  fi
  touch "$target.partial/.complete"
  rm -rf "$target"
  mv "$target.partial" "$target"
}

# This package from the repository tree (builds libtvm_ffi.so and the core on this machine).
install_ours() {
  [ -f "$OURS/.complete" ] || echo "building and installing this package into $OURS ..."
  install_into "$REPO" "$OURS"
}
