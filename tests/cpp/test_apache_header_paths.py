"""Every header path apache-tvm-ffi 0.1.15.post2 ships (the keys of apache_std_headers.json, read
off its wheel) either exists here, compiles alone and makes available the principal names of
apache's header, or is listed in ABSENT with the reason it is not offered (the guide's "what
differs" table names the same families). A path that appears here leaves ABSENT, so the list
cannot drift.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[1] / "include"
sys.path.insert(0, str(HERE))
import apache_headers  # noqa: E402
from test_apache_names import BRINGS, USES  # noqa: E402

_REFLECT = "reflection beyond functions, constructors and methods (fields, access paths, enums)"
_STRUCT = "structural equality, hashing, visiting and mutation of object graphs"
_INTERNAL = "apache's object-system internals (its own type registry and object layout)"
#: apache's header paths with no counterpart here -> why.
ABSENT = {
    "tvm/ffi/big_int.h": "arbitrary-precision integers, outside kernel launching",
    "tvm/ffi/cast.h": _INTERNAL,
    "tvm/ffi/container/container_detail.h": _INTERNAL,
    "tvm/ffi/container/map_base.h": _INTERNAL,
    "tvm/ffi/container/seq_base.h": _INTERNAL,
    "tvm/ffi/device.h": "device strings parse in Python (tvm_ffi.device)",
    "tvm/ffi/endian.h": "binary serialization, outside kernel launching",
    "tvm/ffi/enum.h": _REFLECT,
    "tvm/ffi/expected.h": "errors are exceptions here; no Expected<T> result type",
    "tvm/ffi/extra/base.h": "no compiled extra library to export from",
    "tvm/ffi/extra/base64.h": "binary serialization, outside kernel launching",
    "tvm/ffi/extra/dataclass.h": _REFLECT,
    "tvm/ffi/extra/dtype.h": "C++ element types per DLDataType, a codegen helper",
    "tvm/ffi/extra/json.h": "JSON, outside kernel launching",
    "tvm/ffi/extra/serialization.h": "object-graph serialization, outside kernel launching",
    "tvm/ffi/extra/structural_equal.h": _STRUCT,
    "tvm/ffi/extra/structural_hash.h": _STRUCT,
    "tvm/ffi/extra/structural_key.h": _STRUCT,
    "tvm/ffi/extra/structural_mutate.h": _STRUCT,
    "tvm/ffi/extra/structural_visit.h": _STRUCT,
    "tvm/ffi/extra/visit_error_context.h": _STRUCT,
    "tvm/ffi/function_detail.h": _INTERNAL,
    "tvm/ffi/memory.h": _INTERNAL,
    "tvm/ffi/reflection/access_path.h": _REFLECT,
    "tvm/ffi/reflection/accessor.h": _REFLECT,
    "tvm/ffi/reflection/creator.h": _REFLECT,
    "tvm/ffi/reflection/enum_def.h": _REFLECT,
    "tvm/ffi/reflection/native_function.h": _REFLECT,
    "tvm/ffi/reflection/overload.h": _REFLECT,
    "tvm/ffi/rvalue_ref.h": _INTERNAL,
    "tvm/ffi/type_traits.h": _INTERNAL,
    "tvm_ffi_python_helpers.h": "apache's Cython core's helpers (they include Python.h)",
    "tvm_ffi_python_object.h": "apache's Cython core's helpers (they include Python.h)",
}

# apache's umbrella leaves out extra/ (module.h, c_env_api.h), as ours does.
_EVERY = sorted(set(USES) - {"Module", "ModuleObj", "TVMFFIEnvGetStream", "TVMFFIEnvTensorAlloc"})
#: a statement per principal name of the paths test_apache_names.py does not cover.
MACROS = {
    "TVM_FFI_INLINE": "struct S { TVM_FFI_INLINE int f() { return 1; } };",
    "TVM_FFI_NO_INLINE": "struct T { TVM_FFI_NO_INLINE int f() { return 1; } };",
    "TVM_FFI_UNREACHABLE": "if (false) TVM_FFI_UNREACHABLE();",
    "TVM_FFI_PREDICT": "if (TVM_FFI_PREDICT_FALSE(false) || TVM_FFI_PREDICT_TRUE(false)) {}",
    "TVM_FFI_STR_CONCAT": "int TVM_FFI_STR_CONCAT(v, 1) = 0; (void)v1;",
    "TVM_FFI_FUNC_SIG": "(void)TVM_FFI_FUNC_SIG;",
    "TVM_FFI_SAFE_CALL": "auto f = []() -> int { TVM_FFI_SAFE_CALL_BEGIN(); "
    "TVM_FFI_SAFE_CALL_END(); }; (void)f;",
    "GetDataSize": "(void)tvm::ffi::GetDataSize(size_t{1}, DLDataType{kDLFloat, 32, 1});",
}
_COMPILER_MACROS = [v for m, v in MACROS.items() if m.startswith("TVM_FFI_") and "SAFE" not in m]
_TENSOR = BRINGS["tvm/ffi/container/tensor.h"]
#: header -> the statements that must compile after including only it.
NAMES = {
    **{h: [USES[n] for n in names] for h, names in BRINGS.items()},
    "tvm/ffi/tvm_ffi.h": [*(USES[n] for n in _EVERY), *MACROS.values()],
    "tvm/ffi/base_detail.h": _COMPILER_MACROS,
    "tvm/ffi/container/tensor.h": [*(USES[n] for n in _TENSOR), MACROS["GetDataSize"]],
    "tvm/ffi/function.h": [*(USES[n] for n in BRINGS["tvm/ffi/function.h"]),
                           MACROS["TVM_FFI_SAFE_CALL"]],
    "tvm/ffi/c_api.h": ["TVMFFIAny a; (void)a;"],
    "tvm/ffi/container/list.h": ["tvm::ffi::List<int> l; (void)l;", USES["Array"], USES["Any"]],
    "tvm/ffi/container/dict.h": ["tvm::ffi::Dict<int, int> d; (void)d;", USES["Any"],
                                 USES["Optional"]],
    "dlpack/dlpack.h": ["DLTensor t; DLDevice d{kDLCUDA, 0}; (void)t; (void)d;"],
    "tvm/ffi/container/shape.h": [USES[n] for n in BRINGS["tvm/ffi/container/shape.h"]],
    "tvm/ffi/extra/cuda/base.h": ["tvm::ffi::dim3 g(1); (void)g;"],
    "tvm/ffi/extra/cuda/cubin_launcher.h": ["tvm::ffi::CubinKernel k; (void)&k;"],
    "tvm/ffi/extra/cuda/device_guard.h": ["using G = tvm::ffi::CUDADeviceGuard;"],
    "tvm/ffi/extra/cuda/internal/unified_api.h": ["tvm::ffi::cuda_api::LaunchConfig c{}; (void)c;"],
    "tvm/ffi/reflection/registry.h": [USES["Function"], USES["Object"]],
    "tvm/ffi/string.h": [USES["String"], USES["Bytes"]],
    "tvm/ffi/optional.h": [USES["Optional"], USES["Any"], USES["String"]],
}  # fmt: skip


def _apache_paths() -> list[str]:
    return sorted(json.loads((HERE / "apache_std_headers.json").read_text()))


def test_every_path_is_here_or_absent_for_a_reason():
    paths = _apache_paths()
    here = [p for p in paths if (INCLUDE / p).is_file()]
    assert sorted(set(paths) - set(here)) == sorted(ABSENT)
    assert not set(ABSENT) & set(here)
    assert (len(paths), len(here), len(ABSENT)) == (60, 27, 33)


@pytest.mark.slow_compile
@pytest.mark.parametrize("header", [p for p in _apache_paths() if p not in ABSENT])
def test_path_compiles_alone_with_its_names(tmp_path, header):
    uses = NAMES.get(header)
    assert uses is not None, f"{header}: say which names it brings (NAMES)"
    body = "\n  ".join("{ " + use + " }" for use in uses)
    source = tmp_path / "uses.cc"
    source.write_text(f"#include <{header}>\n#include <cstddef>\n\nvoid Uses() {{\n  {body}\n}}\n")
    proc = subprocess.run(
        [apache_headers.CXX, "-std=c++17", "-fsyntax-only", "-Wno-unused", "-I", str(INCLUDE),
         *apache_headers.toolkit_includes(), str(source)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
