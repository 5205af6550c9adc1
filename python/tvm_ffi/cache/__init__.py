"""The JIT cache from the command line: ``python -m tvm_ffi.cache prebuild|pull|list|prune|stats``
(see :mod:`tvm_ffi.cache._cli`). Nothing is imported until the command runs."""

__all__: list[str] = []
