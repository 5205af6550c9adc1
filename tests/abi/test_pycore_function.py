"""Function as the CuTe DSL uses it: wrapping a safe-call address or the MLIR packed form,
subclassed by a class whose __init__ never calls Function's, handles moved between
instances, and the unbound Function.__call__."""

from __future__ import annotations

from helpers.next_pycore import run_core_child

PRELUDE = r"""
import ctypes, gc, sys, weakref
raw = ctypes.CDLL(RAW)
def address(name):
    return ctypes.cast(getattr(raw, name), ctypes.c_void_p).value
class Engine:  # stands in for the JIT's execution engine
    pass
"""


def test_from_extern_c_and_mlir_packed(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        PRELUDE
        + r"""
f = core.Function.__from_extern_c__(address("raw_add_one"))
assert type(f) is core.Function and f(41) == 42 and f.__chandle__() != 0
engine = Engine()
before = sys.getrefcount(engine)
g = core.Function.__from_extern_c__(address("raw_handle"), keep_alive_object=engine)
assert sys.getrefcount(engine) == before + 1
assert g() == id(engine)  # the safe call's handle is the keep-alive object
del g
assert sys.getrefcount(engine) == before
p = core.Function.__from_mlir_packed_safe_call__(address("raw_add_one_packed"),
                                                 keep_alive_object=engine)
assert p(1) == 2 and sys.getrefcount(engine) == before + 1
raises(TypeError, "raw_add_one expects one int", p, "x")
del p
assert sys.getrefcount(engine) == before
m = core.load_module(LIB)
assert m.call_back(f, 9) == 10  # a wrapped address passed on to C++
raises(TypeError, "Function.__from_extern_c__() address must be an int, got str",
       core.Function.__from_extern_c__, "0x1")
raises(ValueError, "Function.__from_extern_c__() address is NULL",
       core.Function.__from_extern_c__, 0)
raises(TypeError, "Function.__from_extern_c__() got an unexpected keyword argument 'keep'",
       lambda: core.Function.__from_extern_c__(1, keep=None))
raises(TypeError, "Function.__from_mlir_packed_safe_call__() takes one address (got 2 arguments)",
       core.Function.__from_mlir_packed_safe_call__, 1, 2)
""",
    )


def test_dsl_style_subclass(core_runtime: str) -> None:
    run_core_child(
        core_runtime,
        PRELUDE
        + r"""
class JitCompiledFunction:  # the DSL's Python base
    def __init__(self, engine, name):
        self.engine, self.name = engine, name

class TVMFFIJitCompiledFunction(core.Function, JitCompiledFunction):
    def __init__(self, engine, name):
        JitCompiledFunction.__init__(self, engine, name)  # Function.__init__ is never called
        assert self.__chandle__() == 0
        fn = core.Function.__from_extern_c__(address(name), keep_alive_object=engine)
        handle = fn.__chandle__()
        self.__move_handle_from__(fn)
        assert self.__chandle__() == handle and fn.__chandle__() == 0

    def __call__(self, *args):
        return core.Function.__call__(self, *args)

engine = Engine()
jit = TVMFFIJitCompiledFunction(engine, "raw_add_one")
assert isinstance(jit, core.Function) and jit.name == "raw_add_one" and jit.engine is engine
assert jit(1) == 2 and core.Function.__call__(jit, 5) == 6
m = core.load_module(LIB)
assert m.call_back(jit, 10) == 11  # a subclass instance is an argument like any Function
raises(ValueError, "cannot call an empty Function (it has no handle)",
       core.Function.__call__, TVMFFIJitCompiledFunction.__new__(TVMFFIJitCompiledFunction))

class Plain(core.Function):  # no __call__ override: vectorcall of the base
    pass
plain = Plain()
plain.__move_handle_from__(core.Function.__from_extern_c__(address("raw_add_one")))
assert plain(100) == 101
raises(TypeError, "__move_handle_from__() expects a Function, got int",
       plain.__move_handle_from__, 1)

# A cycle through the subclass instance's __dict__ is collected, and with it the handle (and
# the keep-alive object the handle holds).
engine = Engine()
before = sys.getrefcount(engine)
jit = TVMFFIJitCompiledFunction(engine, "raw_add_one")
jit.me = jit
alive = weakref.ref(jit)
del jit
gc.collect()
assert alive() is None and sys.getrefcount(engine) == before
""",
    )
