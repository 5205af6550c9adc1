"""conftest.py for apache-tvm-ffi's own Python tests run against this package (apache_suite.sh
copies it beside them).

apache's tests call its testing library: C++ global functions named ``testing.*`` in
``libtvm_ffi_testing.so``, reached through the Python module ``tvm_ffi.testing``. The library is
a binary built with apache's headers, so it loads into this package's runtime like any client
library (``APACHE_TESTING_LIB`` names it; apache_suite.sh takes it from apache's wheel). Its
Python module cannot be used (it reaches apache's Cython core and dataclasses), so a stand-in
for it is put in ``sys.modules`` here: its attributes are the library's ``testing.*``
functions and ``run_with_gpu_lock`` (which just calls: the run is CPU only). A test module
that imports one of apache's Python test classes from it still fails to import, as it would
without the stand-in; apache_suite.sh counts that as a failure of the module.
"""

from __future__ import annotations

import os
import sys
import types

import tvm_ffi


def _testing_module() -> types.ModuleType:
    module = types.ModuleType("tvm_ffi.testing")

    def run_with_gpu_lock(func, /, *args, **kwargs):
        return func(*args, **kwargs)

    def lookup(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return tvm_ffi.get_global_func(f"testing.{name}")
        except ValueError:
            raise AttributeError(
                f"tvm_ffi.testing (the suite's stand-in) has no {name!r}: it is neither a "
                "testing.* global function nor run_with_gpu_lock"
            ) from None

    module.run_with_gpu_lock = run_with_gpu_lock
    module.__getattr__ = lookup
    return module


_library = os.environ.get("APACHE_TESTING_LIB")
if _library:
    tvm_ffi.load_module(_library)
    sys.modules["tvm_ffi.testing"] = _testing_module()
    tvm_ffi.testing = sys.modules["tvm_ffi.testing"]
