"""Recognising an image by its first bytes and collecting what it holds.

What cuModuleLoadData and cuLibraryLoadData accept: a fatbin wrapper (only
through its address: it holds pointers), one or more fatbins, an ELF image (a
cubin, or a whole program whose `.nv_fatbin` and `__nv_relfatbin` sections are
read), or PTX text.
"""

from __future__ import annotations

import os
import re
import struct
from typing import BinaryIO

from .elf import ELF_MAGIC, Elf, Reader, buffer_reader
from .errors import (
    CUDA_ERROR_FILE_NOT_FOUND,
    CUDA_ERROR_INVALID_VALUE,
    LoaderError,
    invalid_image,
)
from .fatbin import FATBIN_MAGIC, WRAPPER_MAGIC, parse_fatbins, split_fatbins
from .model import Image, SassEntry
from .ptxtext import looks_like_ptx, ptx_entry

RUNTIME_SECTION = ".nv_fatbin"  # the fatbins the runtime registers
RELOCATABLE_SECTION = "__nv_relfatbin"  # -rdc=true: one fatbin per object file
_MODULE_START = re.compile(rb"^[ \t]*\.version\b", re.M)


def as_bytes_view(data: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(data)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def parse_image(data: bytes | bytearray | memoryview) -> Image:
    """Everything in an image held in memory as bytes."""
    try:
        view = as_bytes_view(data)
    except TypeError:
        raise LoaderError(
            CUDA_ERROR_INVALID_VALUE, f"an image is bytes, not {type(data).__name__}"
        ) from None
    magic = struct.unpack_from("<I", view)[0] if len(view) >= 4 else None
    if magic == WRAPPER_MAGIC:
        raise invalid_image(
            "a fatbin wrapper holds pointers into its process's memory: "
            "read it with read_image_at(address), not from bytes"
        )
    if magic == FATBIN_MAGIC:
        return parse_fatbins(view)
    if bytes(view[:4]) == ELF_MAGIC:
        return parse_elf(Elf(buffer_reader(view), len(view)))
    return parse_ptx(view)


def parse_ptx(view: memoryview) -> Image:
    """PTX text is a C string: it ends at the first NUL, as cuModuleLoadData reads it."""
    if not looks_like_ptx(view):
        start = bytes(view[:8]).hex(" ")
        raise invalid_image(
            f"not a fatbin, ELF image or PTX text (starts with {start or 'nothing'})"
        )
    text = bytes(view)
    end = text.find(b"\0")
    text = text[: end if end >= 0 else None]
    starts = [m.start() for m in _MODULE_START.finditer(text)]
    if len(starts) <= 1:
        return Image(ptx=[ptx_entry(text, None, "PTX text")], sass=[], kind="ptx")
    # Several `.version` directives: modules linked by cuLinkComplete, one after another.
    bounds = [0, *starts[1:], len(text)]
    objects = [
        Image(ptx=[ptx_entry(text[a:b], None, f"PTX module {i + 1} of {len(starts)}")],
              sass=[], kind="ptx")
        for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))
    ]
    return Image(ptx=[], sass=[], kind="ptx", relocatable=objects)


def parse_elf(elf: Elf) -> Image:
    """A cubin is SASS for one architecture; a program carries fatbins in its sections."""
    elf.check_complete()
    if elf.is_cubin:
        return Image(ptx=[], sass=[SassEntry(arch=elf.cuda_arch, size=elf.extent())], kind="elf")
    image = Image(ptx=[], sass=[], kind="elf")
    runtime = elf.section(RUNTIME_SECTION)
    if runtime is not None and runtime.size:
        image.merge(parse_fatbins(as_bytes_view(elf.section_data(runtime))))
    image.relocatable = relocatable_objects(elf)
    return image


def relocatable_objects(elf: Elf) -> list[Image]:
    section = elf.section(RELOCATABLE_SECTION)
    if section is None or not section.size:
        return []
    return split_fatbins(as_bytes_view(elf.section_data(section)))


def parse_file(path: str) -> Image:
    """An image file on disk: a program or shared library (of which only the headers
    and fatbin sections are read), a cubin, a fatbin or PTX text."""
    with _open(path) as file:
        if file.read(4) == ELF_MAGIC:
            return parse_elf(Elf(*file_reader(file, path)))
        file.seek(0)
        return parse_image(file.read())


def relocatable_objects_in_file(path: str) -> list[Image]:
    """The relocatable objects of a `-rdc=true` program or library on disk."""
    with _open(path) as file:
        if file.read(4) != ELF_MAGIC:
            raise invalid_image(f"{path} is not an ELF file")
        return relocatable_objects(Elf(*file_reader(file, path)))


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as error:
        raise LoaderError(
            CUDA_ERROR_FILE_NOT_FOUND, f"cannot open {path}: {error.strerror}"
        ) from None


def file_reader(file: BinaryIO, path: str) -> tuple[Reader, int]:
    """Reads parts of an open file, so that a large library is never read whole."""
    fd = file.fileno()
    size = os.fstat(fd).st_size

    def read(offset: int, count: int) -> bytes:
        if offset < 0 or count < 0 or offset + count > size:
            raise invalid_image(
                f"{path}: ELF wants bytes {offset}..{offset + count}, file has {size}"
            )
        return os.pread(fd, count, offset)

    return read, size
