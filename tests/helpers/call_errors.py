"""Errors of calls into libraries, as the core raises them: the message is the callee's (or the
core's argument message), and one PEP 678 note ends with the function and library."""

from __future__ import annotations

import re


def assert_call_error(exc: BaseException, message: str, function: str) -> None:
    """``exc.args`` is ``(message,)``; its one note ends with ``in function '<function>'
    of library '<path>'`` (after the C++ frames, when the error has them)."""
    assert exc.args == (message,)
    notes = getattr(exc, "__notes__", [])
    assert len(notes) == 1, notes
    assert re.search(rf"(^|\n)in function '{re.escape(function)}' of library '[^']+'$", notes[0])
