"""Just enough ELF64 to find the fatbin sections of a program and the size of a cubin.

Reads go through a `read(offset, size)` function, so that the same code serves
bytes in hand, a file on disk (only the headers and the wanted section are read)
and an image in process memory whose size is not known until the headers are.
"""

from __future__ import annotations

import struct
from collections import namedtuple
from collections.abc import Callable

from .errors import invalid_image

Reader = Callable[[int, int], "bytes | memoryview"]

ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
SHT_NOBITS = 8
SHN_XINDEX = 0xFFFF

IDENT = struct.Struct("<4sBBBBB7x")  # magic, class, data, version, osabi, abiversion
HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
Header = namedtuple(
    "Header",
    "ident type machine version entry phoff shoff flags ehsize phentsize phnum "
    "shentsize shnum shstrndx",
)
SECTION = struct.Struct("<IIQQQQIIQQ")
Section = namedtuple(
    "Section", "name_offset type flags addr offset size link info addralign entsize name"
)
PROGRAM = struct.Struct("<IIQQQQQQ")
Program = namedtuple("Program", "type flags offset vaddr paddr filesz memsz align")

MAX_TABLE = 1 << 20  # entries; more is a corrupt header, not a real file


class Elf:
    """The headers of one ELF64 little-endian image."""

    def __init__(self, read: Reader, size: int | None) -> None:
        """`size`: bytes available, where known (None for process memory, whose
        reads are checked as they happen)."""
        self.read = read
        self.size = size
        ident = IDENT.unpack(read(0, IDENT.size))
        if ident[0] != ELF_MAGIC:
            raise invalid_image("not an ELF image")
        if ident[1] != 2 or ident[2] != 1:
            raise invalid_image("only 64-bit little-endian ELF images are supported")
        self.abi_version = ident[5]
        self.header = Header(*HEADER.unpack(read(0, HEADER.size)))
        self.sections = self._read_sections()
        self.programs = [
            Program(*fields)
            for fields in self._read_table(
                self.header.phoff, self.header.phnum, self.header.phentsize, PROGRAM, "program"
            )
        ]

    @property
    def is_cubin(self) -> bool:
        return self.header.machine == EM_CUDA

    @property
    def cuda_arch(self) -> int:
        """The sm version of a cubin: EF_CUDA_SM moved from bits 0-7 to 8-15 in ABI version 8."""
        if self.abi_version >= 8:
            return (self.header.flags >> 8) & 0xFF
        return self.header.flags & 0xFF

    def extent(self) -> int:
        """Bytes the image occupies: the furthest end of any header table, section or segment."""
        h = self.header
        ends = [HEADER.size, h.shoff + len(self.sections) * h.shentsize]
        ends.append(h.phoff + len(self.programs) * h.phentsize)
        ends += [s.offset + s.size for s in self.sections if s.type != SHT_NOBITS]
        ends += [p.offset + p.filesz for p in self.programs]
        return max(ends)

    def check_complete(self) -> None:
        if self.size is not None and self.extent() > self.size:
            raise invalid_image(
                f"ELF image truncated: its headers describe {self.extent()} bytes, "
                f"{self.size} are there"
            )

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def section_data(self, section: Section) -> bytes:
        if section.type == SHT_NOBITS:
            raise invalid_image(f"ELF section {section.name} has no contents in the file")
        return self.read(section.offset, section.size)

    def _read_sections(self) -> list[Section]:
        h = self.header
        if h.shoff == 0:
            return []
        count, names_index = h.shnum, h.shstrndx
        if count == 0 or names_index == SHN_XINDEX:
            # Extended numbering: the real values sit in section 0.
            first = self._read_table(h.shoff, 1, h.shentsize, SECTION, "section")[0]
            count = count or first[5]
            names_index = first[6] if names_index == SHN_XINDEX else names_index
        raw = self._read_table(h.shoff, count, h.shentsize, SECTION, "section")
        if not raw:
            return []
        if names_index >= len(raw):
            raise invalid_image(f"ELF section name table index {names_index} out of range")
        names = raw[names_index]
        table = bytes(self.read(names[4], names[5])) if names[1] != SHT_NOBITS else b""
        return [Section(*fields, _name(table, fields[0])) for fields in raw]

    def _read_table(
        self, offset: int, count: int, entsize: int, layout: struct.Struct, what: str
    ) -> list[tuple]:
        if count == 0 or offset == 0:
            return []
        if entsize < layout.size or count > MAX_TABLE:
            raise invalid_image(f"ELF {what} header table: {count} entries of {entsize} bytes")
        raw = self.read(offset, count * entsize)
        return [layout.unpack_from(raw, i * entsize) for i in range(count)]


def _name(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("latin-1")


def buffer_reader(data: memoryview) -> Reader:
    """Reads from bytes in hand; a read past the end is a truncated image."""

    def read(offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0 or offset + size > len(data):
            raise invalid_image(
                f"ELF image truncated: wants bytes {offset}..{offset + size}, has {len(data)}"
            )
        return data[offset : offset + size]

    return read
