"""Host memory pages for backends that need plain host memory (the Vulkan backend's pinned memory where the device cannot map it).

Every allocation is a private anonymous mmap: page-aligned, zero-filled, not reserved in
swap (like device memory that is not touched yet).
"""

from __future__ import annotations

import ctypes
import mmap

from .base import CUDA_ERROR_OUT_OF_MEMORY, BackendError

PAGE = mmap.PAGESIZE
_MAP_NORESERVE = 0x4000  # Linux
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _length(size: int) -> int:
    return max(PAGE, -(-size // PAGE) * PAGE)


def allocate(size: int, kind: str = "device") -> int:
    address = _libc.mmap(None, _length(size), mmap.PROT_READ | mmap.PROT_WRITE,
                         mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
    if address in (None, _MAP_FAILED):
        raise BackendError(CUDA_ERROR_OUT_OF_MEMORY, f"mmap of {size} bytes failed "
                                                     f"(errno {ctypes.get_errno()})")
    return address


def free(address: int, size: int) -> None:
    _libc.munmap(address, _length(size))
