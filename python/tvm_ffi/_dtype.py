"""``tvm_ffi.dtype``, a data type that is also its string form, and ``DataTypeCode``.

A ``dtype`` is parsed once, when it is made, by the package's one dtype grammar (the C++
``StringToDLDataType`` of include/tvm/ffi/detail/dtype.h, reached through ``_core``), and
passed to an exported function as a data type, as a ``torch.dtype`` is.
"""

from __future__ import annotations

import builtins
import enum
from typing import Any

from . import _core

__all__ = ["DataTypeCode", "dtype"]


# compat: apache-tvm-ffi (tvm_ffi._dtype.DataTypeCode, with its member names)
class DataTypeCode(enum.IntEnum):
    """DLPack's ``DLDataTypeCode`` values (include/tvm/ffi/dlpack.h)."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    COMPLEX = 5
    BOOL = 6
    Float8E3M4 = 7
    Float8E4M3 = 8
    Float8E4M3B11FNUZ = 9
    Float8E4M3FN = 10
    Float8E4M3FNUZ = 11
    Float8E5M2 = 12
    Float8E5M2FNUZ = 13
    Float8E8M0FNU = 14
    Float6E2M3FN = 15
    Float6E3M2FN = 16
    Float4E2M1FN = 17


_INTEGER_CODES = frozenset((0, 1))
_FLOAT_CODES = frozenset((2, 4, *range(7, 18)))


# compat: apache-tvm-ffi (tvm_ffi.dtype, its lower-case name and its members)
class dtype(str):
    """A data type such as ``"float16"``, ``"int32"``, ``"float4_e2m1fnx2"`` (two lanes) or
    ``"handle"``: a ``str`` equal to the text it was made from, with DLPack's ``type_code``,
    ``bits`` and ``lanes``.

    Raises:
        ValueError: the text is not a data type.
    """

    __slots__ = ("_bits", "_code", "_lanes")
    _code: int
    _bits: int
    _lanes: int

    def __new__(cls, content: Any) -> dtype:
        if isinstance(content, str):
            text = str(content)
        else:  # torch.float32 ("torch.float32"), numpy.dtype("float32") ("float32"), ...
            text = str(content)
            if type(content).__module__ == "torch" and text.startswith("torch."):
                text = text[len("torch.") :]
        triple = _parse(text)
        if triple is None:
            shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
            raise ValueError(f'dtype: cannot parse "{shown}" as a data type {_PARSE_HINT}')
        return cls._make(text, *triple)

    @classmethod
    def _make(cls, text: str, code: int, bits: int, lanes: int) -> dtype:
        self = str.__new__(cls, text)
        self._code, self._bits, self._lanes = code, bits, lanes
        return self

    @staticmethod
    def from_dlpack_data_type(dltype_data_type: tuple[int, int, int]) -> dtype:
        """The dtype of a DLPack ``(type_code, bits, lanes)`` triple: ``(2, 16, 1)`` is
        ``"float16"``.

        Raises:
            ValueError: the triple has no string form that reads back as itself.
        """
        return _from_triple("dtype.from_dlpack_data_type", dltype_data_type)

    def with_lanes(self, lanes: int) -> dtype:
        """This type with ``lanes`` lanes: ``dtype("float32").with_lanes(4)`` is
        ``"float32x4"``."""
        if type(lanes) is not int or not 1 <= lanes <= 65535:
            raise ValueError(
                f"dtype.with_lanes: lanes must be an int from 1 to 65535 (got {lanes!r})"
            )
        return _from_triple("dtype.with_lanes", (self._code, self._bits, lanes))

    def __repr__(self) -> str:
        return f"dtype('{self}')"

    def __reduce__(self) -> tuple[Any, ...]:
        return (dtype, (str(self),))

    @property
    def type_code(self) -> int:
        """DLPack's type code (:class:`DataTypeCode`): 2 for float, 0 for int, ..."""
        return self._code

    @property
    def bits(self) -> int:
        """Bits of one lane."""
        return self._bits

    @property
    def lanes(self) -> int:
        """Number of lanes: 1 for a scalar type."""
        return self._lanes

    @property
    def itemsize(self) -> int:
        """Bytes of one element, all lanes, rounded up: ``float4_e2m1fnx2`` is 1.

        Raises:
            ValueError: a scalable vector (``int32xvscalex4``): its size is known at run time only.
        """
        if self._lanes >= 0x8000:  # DLPack stores -n lanes (scalable) in the 16-bit field
            raise ValueError(
                f"dtype.itemsize: {str(self)!r} is a scalable vector, whose size is known only "
                "at run time"
            )
        return (self._bits * self._lanes + 7) // 8

    @property
    def is_bool(self) -> builtins.bool:
        return self._code == DataTypeCode.BOOL

    @property
    def is_integer(self) -> builtins.bool:
        return self._code in _INTEGER_CODES

    @property
    def is_float(self) -> builtins.bool:
        return self._code in _FLOAT_CODES

    @property
    def is_handle(self) -> builtins.bool:
        return self._code == DataTypeCode.HANDLE

    @staticmethod
    def is_dtype(arg: Any) -> builtins.bool:
        """Whether ``arg`` is a dtype or text that parses as one."""
        return isinstance(arg, dtype) or _parse(str(arg)) is not None


_PARSE_HINT = "(expected e.g. float32, int8, bool, bfloat16, float8_e4m3fn, float16x2)"


def _parse(text: str) -> tuple[int, int, int] | None:
    """The (code, bits, lanes) of ``text``, or None when it is not a data type's one name.

    The runtime's grammar is apache's, which also reads shorthands ("float" is float32, "" is
    void); a dtype is a ``str`` that compares equal to its name, so only the name the runtime
    writes back for the triple is accepted: "float" and "float32" would otherwise be two dtypes
    of one type that compare unequal.
    """
    try:
        code, bits, lanes = _core._parse_dtype(text)
    except ValueError:  # the runtime's refusal, or text that is not UTF-8
        return None
    if _core._format_dtype(code, bits, lanes) != text:
        return None
    return code, bits, lanes


def _from_triple(label: str, triple: Any) -> dtype:
    if not (isinstance(triple, tuple) and len(triple) == 3 and all(type(x) is int for x in triple)):
        raise TypeError(
            f"{label}: expected a (type_code, bits, lanes) tuple of ints (got {triple!r})"
        )
    code, bits, lanes = triple
    text = _core._format_dtype(code, bits, lanes)
    if text is None:
        raise ValueError(
            f"{label}: {triple!r} is not a data type this package can name "
            "(expected e.g. (2, 32, 1) for float32)"
        )
    return dtype._make(text, code, bits, lanes)


_core._set_dtype_class(dtype)
