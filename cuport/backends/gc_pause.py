"""Python's cyclic garbage collector paused while cuport builds big object graphs.

Parsing a PTX module (200,000 objects for Thrust's) and compiling a kernel (~400,000
llvmlite objects) each start many full collections that walk everything alive and find
nothing to free: 5 of the 30 s of CPU that compiling thrust_cub.cu's kernels took, and a
fifth of its module's parse. The garbage they leave is collected afterwards, once.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_pauses = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off inside (on again when the last pause of the process ends, if it
    was on before the first)."""
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
