"""Stand-ins for the clients' heavy third-party imports (see ../README.md).

Only names that cannot be imported for real are stubbed: a finder placed last on
``sys.meta_path`` answers for the top-level packages listed in STUBBED after every real
finder has declined them. FlashInfer's and sglang's own modules are never replaced.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

# Third-party packages the clients import at module level on the paths our tests take,
# none of which takes part in building, loading or calling a JIT kernel.
STUBBED = frozenset(
    {
        "requests",
        "aiohttp",
        "pydantic",
        "IPython",
        "zmq",
        "pydantic_core",
        "starlette",
        "PIL",
        "triton",
        "pybase64",
        "psutil",
        "orjson",
        "tqdm",
        "pynvml",
    }
)


class _Anything:
    """A value that accepts any use: attribute, call, subclassing, decoration, iteration."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        # Used as a decorator (@stub or @stub(...)): hand the decorated object back.
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Anything()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __mro_entries__(self, bases):
        return (_AnyBase,)


class _AnyBase:
    def __init_subclass__(cls, **kwargs):  # class keywords (msgspec.Struct, frozen=True)
        pass

    def __init__(self, *args, **kwargs):
        pass


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []  # a package, so that any submodule resolves too
        module.__tvm_ffi_client_stub__ = True
        return module

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] not in STUBBED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


sys.meta_path.append(_StubFinder())
