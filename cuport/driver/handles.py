"""Opaque handles (CUcontext, CUstream, CUevent, CUmodule, ...) and their objects.

A handle is a number the program holds; it is never reused, so a handle to a
destroyed object stays invalid forever and is reported as such (NVIDIA's driver
may reuse addresses; being stricter only turns silent misuse into an error).
Handles are spaced numbers in a range where the allocator does not place memory,
so they do not look like pointers the program owns; cuport never dereferences them.
"""

from __future__ import annotations

import threading
from typing import TypeVar

from cuport.driver.errors import CudaError, E

T = TypeVar("T")

_BASE = 0x7C0DE0000000
_STEP = 0x40
_last = 0
_objects: dict[int, object] = {}
_lock = threading.Lock()


def new(obj: object) -> int:
    """A fresh handle for obj."""
    global _last
    with _lock:
        _last += 1
        handle = _BASE + _last * _STEP
        _objects[handle] = obj
    return handle


def drop(handle: int) -> None:
    with _lock:
        _objects.pop(handle, None)


def was_issued(handle: int) -> bool:
    """Whether this process ever handed out `handle` (so if unknown now, it was destroyed)."""
    offset = handle - _BASE
    return offset > 0 and offset % _STEP == 0 and offset // _STEP <= _last


def lookup(handle: int, kind: type[T], what: str, code: int = E.INVALID_HANDLE) -> T:
    """The live object of type `kind` behind handle, else CudaError(code)."""
    obj = _objects.get(handle)
    if isinstance(obj, kind):
        return obj
    if handle == 0:
        raise CudaError(code, f"{what} is NULL")
    if obj is not None:
        raise CudaError(code, f"{what} {hex(handle)} is {_a(type(obj).__name__)} handle, "
                              f"not {_a(kind.__name__)} handle")
    if was_issued(handle):
        raise CudaError(code, f"{what} {hex(handle)} was destroyed")
    raise CudaError(code, f"{what} {hex(handle)} is not {_a(kind.__name__)} handle")


def _a(name: str) -> str:
    name = name.lower()
    return ("an " if name[0] in "aeiou" else "a ") + name


def peek(handle: int) -> object | None:
    return _objects.get(handle)


def owned_by(owner: object, kind: type) -> list[int]:
    """Handles of live `kind` objects whose `.context` is owner (freed with it)."""
    with _lock:
        return [h for h, o in _objects.items()
                if isinstance(o, kind) and getattr(o, "context", None) is owner]
