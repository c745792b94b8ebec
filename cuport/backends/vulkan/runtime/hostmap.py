"""Host address-space tools for giving host and device one address (Linux).

A device allocation's address is chosen by the driver. Two things make that address mean
the same memory, or nothing, on the host:
- `reserve(addr, size)`: a PROT_NONE mapping placed exactly there (MAP_FIXED_NOREPLACE), so
  no host object can ever live at a device address (CUDA's unified addressing: a pointer
  value names one thing).
- `SharedPages`: pages of a memfd, mapped once where the kernel likes (that mapping is what
  the driver imports with VK_EXT_external_memory_host) and then again exactly at the device
  address the driver gave the import, so host and kernels use one pointer value for the
  same physical pages (managed and mapped pinned memory on a discrete GPU).
MAP_FIXED_NOREPLACE never replaces an existing mapping; a kernel older than 4.17 takes it as
a hint, which is detected (the result differs) and undone.
"""

from __future__ import annotations

import ctypes
import mmap as _mmap
import os
import sys

PROT_NONE = 0
PROT_RW = 3  # PROT_READ | PROT_WRITE
MAP_SHARED = 0x01
MAP_PRIVATE = 0x02
MAP_FIXED = 0x10
MAP_ANONYMOUS = 0x20
MAP_NORESERVE = 0x4000
MAP_FIXED_NOREPLACE = 0x100000
PAGE = _mmap.PAGESIZE

_MAP_FAILED = ctypes.c_void_p(-1).value

SUPPORTED = sys.platform.startswith("linux") and hasattr(os, "memfd_create")

if SUPPORTED:
    _libc = ctypes.CDLL(None, use_errno=True)
    _mmap_fn = _libc.mmap
    _mmap_fn.restype = ctypes.c_void_p
    _mmap_fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_long]
    _munmap_fn = _libc.munmap
    _munmap_fn.restype = ctypes.c_int
    _munmap_fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def round_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def _map(addr: int | None, size: int, prot: int, flags: int, fd: int) -> int | None:
    r = _mmap_fn(addr, size, prot, flags, fd, 0)
    if r is None or r == _MAP_FAILED:
        return None
    if addr is not None and flags & MAP_FIXED_NOREPLACE and r != addr:
        _munmap_fn(r, size)  # an old kernel took the address as a hint
        return None
    return r


def unmap(addr: int, size: int) -> None:
    if SUPPORTED:
        _munmap_fn(addr, size)


def reserve(addr: int, size: int) -> bool:
    """Keep the host from ever using [addr, addr+size): True if it was free and is now held."""
    if not SUPPORTED or addr % PAGE:
        return False
    size = round_up(size, PAGE)
    return _map(addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE
                | MAP_FIXED_NOREPLACE, -1) is not None


def release(addr: int, size: int) -> None:
    """Undo `reserve`."""
    unmap(addr, round_up(size, PAGE))


class SharedPages:
    """`size` bytes of a memfd, mapped at `base` (aligned to `align`), and optionally again
    at a chosen address (`alias_at`); both mappings show the same pages."""

    def __init__(self, size: int, align: int) -> None:
        if not SUPPORTED:
            raise OSError("shared host mappings need Linux's memfd_create")
        self.size = round_up(size, max(align, PAGE))
        self.alias: int | None = None
        fd = os.memfd_create("cuport-vulkan", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, self.size)
            self.base = self._map_aligned(fd, max(align, PAGE))
            self._fd: int | None = fd
        except BaseException:
            os.close(fd)
            raise

    def _map_aligned(self, fd: int, align: int) -> int:
        if align <= PAGE:
            r = _map(None, self.size, PROT_RW, MAP_SHARED, fd)
            if r is None:
                raise OSError(ctypes.get_errno(), "mmap of a memfd failed")
            return r
        # Reserve room for an aligned start, place the pages inside the reservation (MAP_FIXED
        # over our own PROT_NONE range: nothing else can be there), then trim the rest.
        span = self.size + align
        hole = _map(None, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1)
        if hole is None:
            raise OSError(ctypes.get_errno(), "mmap of a reservation failed")
        start = round_up(hole, align)
        r = _map(start, self.size, PROT_RW, MAP_SHARED | MAP_FIXED, fd)
        if r != start:
            _munmap_fn(hole, span)
            raise OSError(ctypes.get_errno(), "mmap at an aligned address failed")
        if start > hole:
            _munmap_fn(hole, start - hole)
        if hole + span > start + self.size:
            _munmap_fn(start + self.size, hole + span - start - self.size)
        return r

    def alias_at(self, addr: int) -> bool:
        """Map the same pages at `addr` too; False if that range is not free."""
        assert self._fd is not None and self.alias is None
        if addr % PAGE:
            return False
        r = _map(addr, self.size, PROT_RW, MAP_SHARED | MAP_FIXED_NOREPLACE, self._fd)
        if r is None:
            return False
        self.alias = r
        return True

    def close_fd(self) -> None:
        """The mappings keep the pages; the descriptor is not needed once they are made."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def free(self) -> None:
        self.close_fd()
        if self.alias is not None:
            _munmap_fn(self.alias, self.size)
            self.alias = None
        if self.base:
            _munmap_fn(self.base, self.size)
            self.base = 0
