"""Host memory pages for backends that need plain host memory (the Vulkan backend's pinned memory where the device cannot map it).

Every allocation is a private anonymous mmap: page-aligned, zero-filled, not reserved in
swap (like device memory that is not touched yet). A GPU maps device memory in 2 MiB
pages, so a read a little outside an allocation (a stencil's row before or after its
buffer) lands in mapped memory and does not fault: here 2 MiB of zero pages lie on
either side of every allocation for the same reason. CUPORT_CHECK_BOUNDS=1 puts one
inaccessible page on either side instead, so that any access past the page that holds
an allocation's last byte faults (a checking mode, stricter than a GPU).

An allocation can be moved into a memory file (memfd) that other processes map: its
address and contents stay (share); another process maps such a file at an address of
its own (map_shared). The driver's IPC calls (driver/ipc.py) use them; the description
that goes with the file says only that it is host pages (another backend's importer
refuses it, and this one refuses another backend's).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import threading

from .base import CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, BackendError

PAGE = mmap.PAGESIZE
GRANULE = 2 << 20
_MAP_NORESERVE = 0x4000  # Linux
_MAP_FIXED = 0x10
_MADV_HUGEPAGE, _MADV_NOHUGEPAGE = 14, 15
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MAP_FAILED = ctypes.c_void_p(-1).value
_RW = mmap.PROT_READ | mmap.PROT_WRITE

# base of each allocation -> (start, length) of its whole mapping, padding included
_mappings: dict[int, tuple[int, int]] = {}
_lock = threading.Lock()


def _length(size: int) -> int:
    return max(PAGE, -(-size // PAGE) * PAGE)


def check_bounds() -> bool:
    return os.environ.get("CUPORT_CHECK_BOUNDS", "") not in ("", "0")


@functools.cache
def _thp_always() -> bool:
    """Whether the kernel backs any anonymous memory with huge pages (padding is then
    marked MADV_NOHUGEPAGE; otherwise it is left alone, which keeps a mapping one VMA)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[always]" in f.read()
    except OSError:
        return False


def _mmap(address, length: int, flags: int, fd: int = -1, prot: int = _RW, offset: int = 0,
          hint: bool = False) -> int:
    got = _libc.mmap(address, length, prot, flags, fd, offset)
    if got in (None, _MAP_FAILED) or (address is not None and got != address and not hint):
        raise BackendError(CUDA_ERROR_OUT_OF_MEMORY, f"mmap of {length} bytes failed "
                                                     f"(errno {ctypes.get_errno()})")
    return got


def allocate(size: int, kind: str = "device") -> int:
    body = _length(size)
    pad = PAGE if check_bounds() else GRANULE
    start = _mmap(None, pad + body + pad, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE)
    base = start + pad
    if body >= GRANULE and not check_bounds() and not _thp_always():
        # large allocations in huge pages, as a GPU maps them (the whole mapping, so it
        # stays one VMA): BLAS and FFT over 4 KiB pages ran ~10-20% slower (TLB misses)
        _libc.madvise(start, pad + body + pad, _MADV_HUGEPAGE)
    if check_bounds() or _thp_always():
        for guard in (start, base + body):
            if check_bounds():
                _libc.mprotect(guard, pad, 0)  # PROT_NONE
            else:  # padding written to must not take a huge page of real memory
                _libc.madvise(guard, pad, _MADV_NOHUGEPAGE)
    with _lock:
        _mappings[base] = (start, pad + body + pad)
    return base


def free(address: int, size: int) -> None:
    with _lock:
        start, length = _mappings.pop(address, (address, _length(size)))
    _libc.munmap(start, length)


DESCRIPTION = b"cuport host pages"


def shareable(address: int) -> bool:
    return True


def share(address: int, size: int) -> tuple[int, bytes]:
    """Move an allocation's pages into a memory file (contents copied, address kept) and
    return the file's descriptor and its description. The caller makes sure nothing uses
    the memory meanwhile."""
    body = _length(size)
    fd = os.memfd_create("cuport-ipc-mem", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, body)
        tmp = _mmap(None, body, mmap.MAP_SHARED, fd)
        ctypes.memmove(tmp, address, body)
        _libc.munmap(tmp, body)
        _mmap(address, body, mmap.MAP_SHARED | _MAP_FIXED, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd, DESCRIPTION


def map_shared(fd: int, description: bytes, size: int) -> int:
    """Map another process's memory file (share there), padded as allocate() pads; returns
    its base. The descriptor is closed."""
    try:
        if description != DESCRIPTION:
            raise BackendError(CUDA_ERROR_INVALID_VALUE, "the shared memory is another backend's "
                                                         "device memory, not the CPU device's")
        if os.fstat(fd).st_size < _length(size):
            raise BackendError(CUDA_ERROR_INVALID_VALUE, "the shared memory is smaller than its "
                                                         "handle says")
        base = allocate(size)
        try:
            _mmap(base, _length(size), mmap.MAP_SHARED | _MAP_FIXED, fd)
        except BackendError:
            free(base, size)
            raise
    finally:
        os.close(fd)
    return base


def map_file(fd: int, length: int) -> int:
    """A plain shared mapping of a small file (an interprocess event's page)."""
    return _mmap(None, length, mmap.MAP_SHARED, fd)


def unmap(address: int, length: int) -> None:
    _libc.munmap(address, length)


# -- address ranges for virtual memory management (driver/vmm.py) --------------------------

def reserve(length: int, hint: int | None = None) -> int:
    """An inaccessible range of `length` bytes, near `hint` if the kernel agrees (a reserved
    range takes no memory until a file is mapped into it)."""
    return _mmap(hint, length, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                 prot=0, hint=True)


def reserve_at(address: int, length: int) -> None:
    """Make [address, address+length) inaccessible and reserved again (after a mapping)."""
    _mmap(address, length, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE | _MAP_FIXED,
          prot=0)


def map_file_at(address: int, length: int, fd: int, offset: int, prot: int) -> None:
    """Map part of a memory file over reserved addresses, shared (two mappings of one
    file see the same bytes)."""
    _mmap(address, length, mmap.MAP_SHARED | _MAP_FIXED, fd, prot, offset)


def protect(address: int, length: int, prot: int) -> None:
    if _libc.mprotect(address, length, prot) != 0:
        raise BackendError(CUDA_ERROR_INVALID_VALUE, f"mprotect failed (errno {ctypes.get_errno()})")
