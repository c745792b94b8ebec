"""NVIDIA fat binaries: the container nvcc embeds in `.nv_fatbin` and `__nv_relfatbin`.

Layout (measured with nvcc 13.0; see reference/cudart-protocol.md): a 16-byte
header, then entries, each a header followed by its payload. Entry headers grow
when they name the source file and options, so always step by `header_size`.
Only PTX entries are decompressed; cubins are listed, never unpacked.
"""

from __future__ import annotations

import struct
from collections import namedtuple

import lz4.block
import zstandard

from .errors import invalid_image
from .model import Image, SassEntry
from .ptxtext import ptx_entry

FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1

HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
Header = namedtuple("Header", "magic version header_size size")

# Entry header, the 64 bytes every entry starts with.
ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
Entry = namedtuple(
    "Entry",
    "kind version header_size payload_size compressed_size unknown0 "
    "ptx_minor ptx_major arch name_offset name_size flags unknown1 uncompressed_size",
)

KIND_PTX = 1
KIND_ELF = 2
KIND_NAMES = {KIND_PTX: "PTX", KIND_ELF: "SASS", 8: "LTO-IR"}

FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
MAX_UNCOMPRESSED = 0x7FFFFFFF  # sizes elsewhere are u32; more is a corrupt header


def fatbin_extent(data: memoryview, offset: int = 0) -> int:
    """Bytes that the fatbin at `offset` occupies (header included), from its header."""
    header = read_header(data, offset)
    return header.header_size + header.size


def read_header(data: memoryview, offset: int) -> Header:
    if len(data) - offset < HEADER.size:
        raise invalid_image(f"fatbin header truncated at byte {offset}")
    header = Header(*HEADER.unpack_from(data, offset))
    if header.magic != FATBIN_MAGIC:
        raise invalid_image(f"no fatbin at byte {offset} (magic {header.magic:#x})")
    if header.version != 1:
        raise invalid_image(f"fatbin version {header.version} is not supported (only 1)")
    if header.header_size < HEADER.size:
        raise invalid_image(f"fatbin header size {header.header_size} is too small")
    return header


def parse_fatbins(data: memoryview) -> Image:
    """All fatbins that follow one another in `data`, as one Image."""
    fatbins = split_fatbins(data)
    image = fatbins[0]
    for more in fatbins[1:]:
        image.merge(more)
    return image


def split_fatbins(data: memoryview) -> list[Image]:
    """One Image per fatbin in `data` (a section holds one fatbin per object file).

    Zero bytes between and after fatbins are alignment padding.
    """
    images = [parse_fatbin(data, 0)]
    offset = skip_zeros(data, fatbin_extent(data, 0))
    while offset < len(data):
        images.append(parse_fatbin(data, offset))
        offset = skip_zeros(data, offset + fatbin_extent(data, offset))
    return images


def skip_zeros(data: memoryview, offset: int) -> int:
    while offset < len(data):
        chunk = bytes(data[offset : offset + 4096])
        rest = chunk.lstrip(b"\0")
        offset += len(chunk) - len(rest)
        if rest:
            break
    return offset


def parse_fatbin(data: memoryview, offset: int = 0) -> Image:
    """The entries of the one fatbin at `offset`."""
    header = read_header(data, offset)
    start = offset + header.header_size
    end = start + header.size
    if end > len(data):
        raise invalid_image(
            f"fatbin at byte {offset} says {header.size} bytes of entries follow, "
            f"only {len(data) - start} are there"
        )
    image = Image(ptx=[], sass=[], kind="fatbin")
    position = start
    while position < end:
        entry, payload = read_entry(data, position, end)
        if entry.kind == KIND_PTX:
            raw = decompress(entry, payload, position)
            image.ptx.append(ptx_entry(raw, entry.arch, f"PTX entry at byte {position}"))
        elif entry.kind == KIND_ELF:
            size = entry.uncompressed_size if compression(entry) else entry.payload_size
            image.sass.append(SassEntry(arch=entry.arch, size=size))
        else:
            name = KIND_NAMES.get(entry.kind, f"entry kind {entry.kind}")
            image.other.append(f"{name} for sm_{entry.arch}")
        position += entry.header_size + entry.payload_size
    return image


def read_entry(data: memoryview, position: int, end: int) -> tuple[Entry, memoryview]:
    if end - position < ENTRY.size:
        raise invalid_image(f"fatbin entry header truncated at byte {position}")
    entry = Entry(*ENTRY.unpack_from(data, position))
    if entry.header_size < ENTRY.size:
        raise invalid_image(f"fatbin entry at byte {position}: header size {entry.header_size}")
    payload_start = position + entry.header_size
    if payload_start + entry.payload_size > end:
        raise invalid_image(
            f"fatbin entry at byte {position}: {entry.payload_size} bytes of payload "
            f"run past the end of its fatbin"
        )
    return entry, data[payload_start : payload_start + entry.payload_size]


def compression(entry: Entry) -> str:
    both = FLAG_LZ4 | FLAG_ZSTD
    if entry.flags & both == both:
        raise invalid_image(f"fatbin entry flags {entry.flags:#x} name both LZ4 and zstd")
    if entry.flags & FLAG_ZSTD:
        return "zstd"
    if entry.flags & FLAG_LZ4:
        return "lz4"
    return ""


def decompress(entry: Entry, payload: memoryview, position: int) -> bytes:
    """The payload as stored, or decompressed: zstd is a standard frame, LZ4 a raw block."""
    method = compression(entry)
    if not method:
        return bytes(payload)
    where = f"fatbin entry at byte {position}"
    if not 0 < entry.compressed_size <= len(payload):
        raise invalid_image(
            f"{where}: compressed size {entry.compressed_size} does not fit its "
            f"{len(payload)}-byte payload"
        )
    if not 0 < entry.uncompressed_size <= MAX_UNCOMPRESSED:
        raise invalid_image(
            f"{where}: uncompressed size {entry.uncompressed_size} is not plausible"
        )
    packed = payload[: entry.compressed_size]
    try:
        if method == "zstd":
            raw = zstandard.ZstdDecompressor().decompress(
                packed, max_output_size=entry.uncompressed_size
            )
        else:
            raw = lz4.block.decompress(packed, uncompressed_size=entry.uncompressed_size)
    except (zstandard.ZstdError, lz4.block.LZ4BlockError, ValueError, MemoryError) as error:
        raise invalid_image(f"{where}: corrupt {method} data ({error})") from None
    if len(raw) != entry.uncompressed_size:
        raise invalid_image(
            f"{where}: {method} data gave {len(raw)} bytes, the header says "
            f"{entry.uncompressed_size}"
        )
    return raw
