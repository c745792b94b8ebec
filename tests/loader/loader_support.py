"""Helpers shared by the loader tests: reading PTX and fatbin headers independently
of the loader, so that tests compare the loader with an outside view."""

from __future__ import annotations

import re
import struct

COMPRESS_MODES = ("default", "size", "speed", "none")


def statements(ptx: str) -> list[str]:
    """PTX without comments, blank lines and layout: what must match between the
    PTX nvcc embeds (comments stripped) and what `nvcc -ptx` writes."""
    ptx = re.sub(r"/\*.*?\*/", " ", ptx, flags=re.S)
    lines = (" ".join(line.split("//", 1)[0].split()) for line in ptx.splitlines())
    return [line for line in lines if line]


def ptx_version(ptx: str) -> tuple[int, int]:
    major, minor = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M).groups()
    return int(major), int(minor)


def fatbin_entries(data: bytes, offset: int = 0) -> list[dict]:
    """Entry headers of the fatbin at `offset`, read here independently of the loader:
    lets tests check which compression nvcc actually used."""
    _, _, header_size, size = struct.unpack_from("<IHHQ", data, offset)
    position, end = offset + header_size, offset + header_size + size
    entries = []
    while position < end:
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, position)
        arch, flags = struct.unpack_from("<I8xQ", data, position + 28)
        entries.append({"kind": kind, "arch": arch, "flags": flags, "offset": position})
        position += entry_header + payload
    return entries


def fatbin_size(data: bytes, offset: int = 0) -> int:
    _, _, header_size, size = struct.unpack_from("<IHHQ", data, offset)
    return header_size + size


def elf_sections(data: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (virtual address, file offset, size) of every section of an ELF64 file."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    sections = {}
    for name, _, _, addr, offset, size in headers:
        start = names_offset + name
        sections[data[start : data.index(b"\0", start)].decode()] = (addr, offset, size)
    return sections


def file_offset(data: bytes, vaddr: int) -> int:
    """Where the byte that a pointer in the file (a link-time address) names lies in it."""
    for addr, offset, size in elf_sections(data).values():
        if addr and addr <= vaddr < addr + size:
            return offset + vaddr - addr
    raise ValueError(f"no section holds address {vaddr:#x}")


def wrappers(data: bytes) -> list[tuple[int, int, int, int]]:
    """(magic, version, data, filename_or_fatbins) of every fatbin wrapper in
    `.nvFatBinSegment`, pointers as link-time addresses."""
    _, offset, size = elf_sections(data)[".nvFatBinSegment"]
    return [struct.unpack_from("<IiQQ", data, offset + i) for i in range(0, size, 24)]
