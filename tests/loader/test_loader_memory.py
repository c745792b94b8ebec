"""Images given as pointers into this process, as cuModuleLoadData and
cuLibraryLoadData receive them: built in ctypes memory, and live in nvcc-built
shared libraries loaded here (their wrappers relocated by the dynamic loader and
their `-rdc` fatbin list filled in by the CUDA runtime's constructors)."""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

import pytest
from loader_support import elf_sections, fatbin_size, statements

from cuport.loader import (
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_INVALID_VALUE,
    LoaderError,
    choose_relocatable_ptx,
    file_containing_address,
    parse_image,
    read_image_at,
    relocatable_ptx_in_file,
)

WRAPPER_MAGIC = 0x466243B1
PAGE = os.sysconf("SC_PAGE_SIZE")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def in_memory(data: bytes) -> ctypes.Array:
    """A copy of `data` in ctypes memory (keep the result alive while it is used)."""
    return ctypes.create_string_buffer(data, len(data))


def address(buffer: ctypes.Array) -> int:
    return ctypes.addressof(buffer)


def wrapper(version: int, data: int, fatbins: int = 0) -> ctypes.Array:
    return in_memory(struct.pack("<IiQQ", WRAPPER_MAGIC, version, data, fatbins))


@pytest.fixture
def guarded_page():
    """One readable page followed by an inaccessible one: reads past the first must
    be refused, not attempted."""
    base = _libc.mmap(None, 2 * PAGE, 3, 0x22, -1, 0)  # PROT_READ|WRITE, PRIVATE|ANONYMOUS
    assert base not in (None, ctypes.c_void_p(-1).value)
    assert _libc.mprotect(base + PAGE, PAGE, 0) == 0  # PROT_NONE
    yield base
    _libc.munmap(base, 2 * PAGE)


def put(base: int, offset: int, data: bytes) -> int:
    ctypes.memmove(base + offset, data, len(data))
    return base + offset


def test_fatbin_at_an_address_is_read_to_its_header_size(built):
    data = built.read("fatbin_default")
    buffer = in_memory(data + b"\xee" * 64)  # what follows is not part of it
    image = read_image_at(address(buffer))
    assert image == parse_image(data)
    assert statements(image.ptx[0].text) == statements(built.text("ptx_75.ptx"))


def test_version_1_wrapper_leads_to_its_fatbin(built):
    fatbin = in_memory(built.read("multi.fatbin"))
    wrapped = wrapper(1, address(fatbin))
    image = read_image_at(address(wrapped))
    assert image.kind == "wrapper"
    assert image.ptx == parse_image(built.read("multi.fatbin")).ptx


def test_version_2_wrapper_lists_the_relocatable_objects(built):
    """As the runtime registers an -rdc program: `data` is the device-linked
    fatbin, the NULL-terminated array holds one fatbin per object file."""
    program = built.read("rdc_program")
    sections = elf_sections(program)
    _, linked_at, _ = sections[".nv_fatbin"]
    _, rel_at, rel_size = sections["__nv_relfatbin"]
    objects, offset = [], rel_at
    while offset < rel_at + rel_size:
        objects.append(in_memory(program[offset : offset + fatbin_size(program, offset)]))
        offset += fatbin_size(program, offset)
    linked = in_memory(program[linked_at : linked_at + fatbin_size(program, linked_at)])
    array = (ctypes.c_uint64 * (len(objects) + 1))(*map(address, objects), 0)
    wrapped = wrapper(2, address(linked), ctypes.addressof(array))

    image = read_image_at(address(wrapped))

    assert image.kind == "wrapper" and image.ptx == [] and [s.arch for s in image.sass] == [75]
    assert [statements(o.ptx[0].text) for o in image.relocatable] == [
        statements(built.text("rdc_a.ptx")),
        statements(built.text("rdc_b.ptx")),
    ]


def test_nul_terminated_ptx_at_an_address(built):
    text = built.read("ptx_80.ptx")
    buffer = ctypes.create_string_buffer(text + b"\0garbage after the terminator")
    [entry] = read_image_at(address(buffer)).ptx
    assert (entry.arch, entry.target) == (80, "sm_80")
    assert entry.text == text.decode()


def test_cubin_at_an_address_is_sized_from_its_headers(built):
    data = built.read("kernel_80.cubin")
    buffer = in_memory(data + b"\xee" * 256)
    image = read_image_at(address(buffer))
    assert image.kind == "elf" and [(s.arch, s.size) for s in image.sass] == [(80, len(data))]


def test_null_and_unreadable_pointers_are_invalid_values(guarded_page):
    for pointer in (0, guarded_page + PAGE):
        with pytest.raises(LoaderError) as caught:
            read_image_at(pointer)
        assert caught.value.code == CUDA_ERROR_INVALID_VALUE


def test_sizes_past_readable_memory_are_refused(built, guarded_page):
    fatbin = built.read("fatbin_none")
    cubin = built.read("kernel_80.cubin")
    wrapped = wrapper(1, guarded_page + PAGE)  # its data pointer names the inaccessible page
    cases = {
        # a real fatbin cut short by the end of readable memory
        "fatbin": (PAGE - 200, fatbin[:200]),
        # a fatbin header claiming 1 TiB of entries
        "huge": (0, struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 40)),
        # a cubin whose section table lies past the end of readable memory
        "cubin": (PAGE - 64, cubin[:64]),
        # PTX text that runs to the end of readable memory without a NUL
        "ptx": (PAGE - 40, b".version 9.0\n.target sm_75\n" + b"/" * 13),
    }
    for name, (offset, data) in cases.items():
        ctypes.memset(guarded_page, 0, PAGE)
        with pytest.raises(LoaderError, match="readable memory") as caught:
            read_image_at(put(guarded_page, offset, data))
        assert caught.value.code == CUDA_ERROR_INVALID_IMAGE, name
    with pytest.raises(LoaderError, match="readable memory"):
        read_image_at(address(wrapped))


def test_unknown_wrapper_version_is_an_invalid_image(built):
    fatbin = in_memory(built.read("fatbin_default"))
    wrapped = wrapper(3, address(fatbin))
    with pytest.raises(LoaderError, match="version 3") as caught:
        read_image_at(address(wrapped))
    assert caught.value.code == CUDA_ERROR_INVALID_IMAGE


# Shared libraries loaded into this process -----------------------------------------


def load(path: Path) -> tuple[int, list[int]]:
    """Load a library; return its base address and the addresses of its wrappers."""
    ctypes.CDLL(str(path))
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        starts = [int(line.split("-")[0], 16) for line in maps if line.rstrip().endswith(real)]
    base = min(starts)  # an nvcc-built library links at address 0
    vaddr, _, size = elf_sections(path.read_bytes())[".nvFatBinSegment"]
    return base, [base + vaddr + offset for offset in range(0, size, 24)]


def test_live_wrapper_of_a_loaded_library(built):
    _, wrappers = load(built["libkernel.so"])
    found = [read_image_at(w) for w in wrappers]
    assert all(image.kind == "wrapper" for image in found)
    ptx = [statements(p.text) for image in found for p in image.ptx]
    assert ptx == [statements(built.text("ptx_75.ptx"))]
    path = os.path.realpath(built["libkernel.so"])
    assert {file_containing_address(w) for w in wrappers} == {path}


def test_live_rdc_library_lists_its_objects_through_the_version_2_wrapper(built):
    _, wrappers = load(built["librdc.so"])
    path = os.path.realpath(built["librdc.so"])
    prelinked = [w for w in wrappers if struct.unpack("<Ii", ctypes.string_at(w, 8))[1] == 2]
    assert len(prelinked) == 1
    image = read_image_at(prelinked[0])
    assert image.ptx == []
    assert [statements(p.text) for p in choose_relocatable_ptx(image.relocatable, 75)] == [
        statements(built.text("rdc_lib.ptx")),
        statements(built.text("rdc_b.ptx")),
    ]
    # The fatbin list lives in the library's .bss; the library is still the answer.
    array = struct.unpack("<Q", ctypes.string_at(prelinked[0] + 16, 8))[0]
    assert file_containing_address(array) == path
    assert file_containing_address(prelinked[0]) == path
    # The driver's other route, through the file on disk, finds the same modules.
    assert relocatable_ptx_in_file(path, 75) == choose_relocatable_ptx(image.relocatable, 75)


def test_file_containing_address_outside_any_file(guarded_page):
    libc_function = ctypes.cast(_libc.memmove, ctypes.c_void_p).value
    assert "libc" in os.path.basename(file_containing_address(libc_function))
    assert file_containing_address(guarded_page) is None
    assert file_containing_address(0) is None
