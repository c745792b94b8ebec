"""Images in this process's memory: what the CUDA API hands over as a bare pointer.

Sizes come from the headers (a fatbin's, an ELF's tables, the NUL that ends PTX
text). Every read is checked against the readable mappings of /proc/self/maps
first, so a wild pointer or a corrupt size gives a LoaderError, not a crash.
"""

from __future__ import annotations

import bisect
import ctypes
import struct
from dataclasses import dataclass

from .elf import ELF_MAGIC, Elf, Reader
from .errors import CUDA_ERROR_INVALID_VALUE, LoaderError, invalid_image
from .fatbin import FATBIN_MAGIC, HEADER, WRAPPER_MAGIC, parse_fatbin, read_header
from .image import parse_elf, parse_ptx
from .model import Image

# The wrapper in `.nvFatBinSegment`: magic, version, data, filename (version 1) or
# a NULL-terminated array of the relocatable objects' fatbins (version 2).
WRAPPER = struct.Struct("<IiQQ")
MAX_PRELINKED = 1 << 16

_libc = ctypes.CDLL(None)
_libc.memchr.restype = ctypes.c_void_p
_libc.memchr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


_libc.dladdr.restype = ctypes.c_int
_libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    readable: bool
    path: str  # '' for anonymous memory, '[heap]' and the like for special ones


class ProcessMemory:
    """A snapshot of this process's mappings, and checked reads through it."""

    def __init__(self) -> None:
        self.maps = _read_maps()
        self.starts = [m.start for m in self.maps]

    def mapping_at(self, address: int) -> Mapping | None:
        index = bisect.bisect_right(self.starts, address) - 1
        if index >= 0 and address < self.maps[index].end:
            return self.maps[index]
        return None

    def readable_until(self, address: int) -> int:
        """End of the run of readable mappings that holds `address` (`address` if none)."""
        index = bisect.bisect_right(self.starts, address) - 1
        end = address
        while 0 <= index < len(self.maps):
            m = self.maps[index]
            if m.start > end or not m.readable or m.path.startswith("[vvar"):
                break
            end = max(end, m.end)
            index += 1
        return end

    def view(self, address: int, size: int) -> memoryview:
        # (an offset from a corrupt header may carry the address past 64 bits, which no
        # mapping reaches but ctypes cannot even represent: the same error)
        if size < 0 or address <= 0 or address + size >= 1 << 64 or \
                address + size > self.readable_until(address):
            raise invalid_image(
                f"the image's headers ask for {size} bytes at {address:#x}, which run past "
                f"readable memory"
            )
        return memoryview((ctypes.c_ubyte * size).from_address(address)).cast("B")

    def reader(self, base: int) -> Reader:
        return lambda offset, size: self.view(base + offset, size)

    def c_string(self, address: int) -> bytes:
        if not 0 < address < 1 << 64:
            raise invalid_image(f"text at {address:#x} is outside the address space")
        limit = self.readable_until(address) - address
        nul = _libc.memchr(address, 0, limit)
        if nul is None:
            raise invalid_image(f"text at {address:#x} has no terminating NUL in readable memory")
        return ctypes.string_at(address, nul - address)


def _read_maps() -> list[Mapping]:
    maps = []
    with open("/proc/self/maps") as lines:
        for line in lines:
            fields = line.rstrip("\n").split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            path = fields[5] if len(fields) == 6 else ""
            path = path.removesuffix(" (deleted)")
            maps.append(Mapping(start, end, fields[1].startswith("r"), path))
    return maps


def read_image_at(address: int) -> Image:
    """The image at a pointer from cuModuleLoadData / cuLibraryLoadData."""
    if not address:
        raise LoaderError(CUDA_ERROR_INVALID_VALUE, "the image pointer is NULL")
    memory = ProcessMemory()
    available = memory.readable_until(address) - address
    if available <= 0:
        raise LoaderError(
            CUDA_ERROR_INVALID_VALUE, f"the image pointer {address:#x} is not readable memory"
        )
    head = bytes(memory.view(address, min(4, available)))
    magic = struct.unpack("<I", head)[0] if len(head) == 4 else None
    if magic == WRAPPER_MAGIC:
        return _wrapper_at(memory, address)
    if magic == FATBIN_MAGIC:
        return _fatbin_at(memory, address)
    if head == ELF_MAGIC:
        elf = Elf(memory.reader(address), None)
        memory.view(address, elf.extent())  # all of it must be readable
        return parse_elf(elf)
    return parse_ptx(memoryview(memory.c_string(address)))


def _fatbin_at(memory: ProcessMemory, address: int) -> Image:
    header = read_header(memory.view(address, HEADER.size), 0)
    return parse_fatbin(memory.view(address, header.header_size + header.size), 0)


def _wrapper_at(memory: ProcessMemory, address: int) -> Image:
    _, version, data, fatbins = WRAPPER.unpack(memory.view(address, WRAPPER.size))
    if version not in (1, 2):
        raise invalid_image(f"fatbin wrapper at {address:#x} has version {version} (known: 1, 2)")
    if data:
        image = _fatbin_at(memory, data)
    elif version == 2:
        image = Image(ptx=[], sass=[], kind="fatbin")
    else:
        raise invalid_image(f"fatbin wrapper at {address:#x} has a NULL data pointer")
    image.kind = "wrapper"
    if version == 2 and fatbins:
        for index in range(MAX_PRELINKED):
            (pointer,) = struct.unpack("<Q", memory.view(fatbins + 8 * index, 8))
            if not pointer:
                break
            image.relocatable.append(_fatbin_at(memory, pointer))
        else:
            raise invalid_image(f"fatbin wrapper at {address:#x}: its fatbin list has no end")
    return image


def file_containing_address(address: int) -> str | None:
    """The file on disk (program or shared library) whose mapping holds `address`."""
    memory = ProcessMemory()
    mapping = memory.mapping_at(address)
    if mapping is not None and mapping.path.startswith("/"):
        return mapping.path
    # Anonymous memory right after a file's pages (.bss) still belongs to that
    # object: the dynamic linker knows which, and where its first page lies.
    info = _DlInfo()
    if address and _libc.dladdr(address, ctypes.byref(info)) and info.dli_fbase:
        mapping = memory.mapping_at(info.dli_fbase)
        if mapping is not None and mapping.path.startswith("/"):
            return mapping.path
    return None
