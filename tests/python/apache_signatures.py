"""Prints, as JSON, the signature of every public function of tvm_ffi's faces (the package,
tvm_ffi.cpp, tvm_ffi.libinfo, tvm_ffi.utils and its embed_cubin, and the classes of
tvm_ffi.utils): {"module.name": [[parameter, kind, repr(default) or null], ...]}.

Run with apache-tvm-ffi first on the path, it makes tests/python/apache_signatures.json
(test_apache_signatures.py does so when the wheel is found, and compares):

    PYTHONPATH=<unpacked wheel> python3.12 tests/python/apache_signatures.py
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys

MODULES = (
    "tvm_ffi",
    "tvm_ffi.cpp",
    "tvm_ffi.libinfo",
    "tvm_ffi.utils",
    "tvm_ffi.utils.embed_cubin",
)


def signatures() -> dict:
    out = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in sorted(getattr(module, "__all__", None) or dir(module)):
            obj = getattr(module, attr, None)
            if attr.startswith("_") or not (
                inspect.isfunction(obj) or (name == "tvm_ffi.utils" and inspect.isclass(obj))
            ):
                continue
            out[f"{name}.{attr}"] = describe(obj)
    return out


def describe(obj: object) -> list:
    return [
        [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in inspect.signature(obj).parameters.values()
    ]


if __name__ == "__main__":
    json.dump(signatures(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
