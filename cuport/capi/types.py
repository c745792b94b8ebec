"""The table's C types, usable from any Python code (no compiled library needed).

The dispatcher hands driver functions plain addresses; a function that reads a
struct the program passed (CUDA_MEMCPY2D, CUlaunchConfig) or fills one
(CUuuid, CUdevprop) views it through a cffi instance that knows the table's types:
inside libcuda.so.1 the library's own (compiled, nothing to parse), elsewhere an
ABI-mode one declared from the same generated table.
"""

from __future__ import annotations

import ctypes
from functools import cache

import cffi

from cuport.capi import table

_compiled = None


def install(compiled_ffi) -> None:
    """Use the library's own ffi (capi/runtime.py, at start-up)."""
    global _compiled
    _compiled = compiled_ffi


def ffi():
    return _compiled if _compiled is not None else _abi_ffi()


@cache
def _abi_ffi() -> cffi.FFI:
    f = cffi.FFI()
    f.cdef(table.types_cdef())
    return f


def struct_at(address: int, ctype: str):
    """A `ctype *` view of memory at address (the caller checked it is not NULL)."""
    return ffi().cast(f"{ctype} *", address)


def sizeof(ctype: str) -> int:
    return ffi().sizeof(ctype)


def c_function(address: int, ctype: str):
    """A Python callable for a C function pointer of type ctype (e.g. "CUhostFn")."""
    return ffi().cast(ctype, address)


def read_bytes(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size)


def write_bytes(address: int, data: bytes) -> None:
    ctypes.memmove(address, data, len(data))


#: the process's whole address space as one buffer: `MEMORY[a:a + n]` views n bytes at address
#: a without copying them and without a foreign call (ctypes.string_at is one, and releases the
#: GIL), so that copying them into a bytearray is the only copy (kernel parameters). Like
#: string_at it trusts the address.
MEMORY = memoryview((ctypes.c_char * (1 << 47)).from_address(0)).cast("B")


def read_pointers(address: int, count: int) -> list[int]:
    """`count` pointer-sized values from an array at address."""
    return MEMORY[address:address + 8 * count].cast("Q").tolist() if count else []


def read_cstring(address: int) -> str:
    return ctypes.string_at(address).decode("utf-8", "surrogateescape")
