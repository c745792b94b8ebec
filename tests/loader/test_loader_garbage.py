"""Garbage in, LoaderError out: truncated, mutated and corrupt images never raise
anything else, from bytes or from memory."""

from __future__ import annotations

import ctypes
import random
import struct

import pytest
from loader_support import elf_sections, fatbin_entries

from cuport.loader import (
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_INVALID_VALUE,
    LoaderError,
    choose_ptx,
    parse_image,
    read_image_at,
)

# fatbins with zstd PTX (default), LZ4 PTX (speed), zstd SASS (size), several entries (multi)
FATBINS = ("fatbin_default", "fatbin_speed", "fatbin_size", "multi.fatbin")


def relfatbin_section(built) -> bytes:
    data = built.read("rdc_program")
    _, offset, size = elf_sections(data)["__nv_relfatbin"]
    return data[offset : offset + size]


def parses_or_refuses(data: bytes) -> None:
    """The only acceptable outcomes: an Image (whose PTX choice also behaves), or a LoaderError."""
    try:
        image = parse_image(data)
    except LoaderError as error:
        assert error.code in (200, 218), error
        return
    for cc in (75, 90):
        try:
            choose_ptx(image, cc)
        except LoaderError:
            pass


@pytest.mark.parametrize("name", [*FATBINS, "kernel_80.cubin", "program"])
def test_every_truncation_is_refused(built, name):
    data = built.read(name)
    lengths = (
        range(len(data)) if len(data) < 20000 else random.Random(1).sample(range(len(data)), 800)
    )
    for length in lengths:
        with pytest.raises(LoaderError) as caught:
            parse_image(data[:length])
        assert caught.value.code == CUDA_ERROR_INVALID_IMAGE, length


@pytest.mark.parametrize("name", [*FATBINS, "kernel_80.cubin", "ptx_75.ptx", "relfatbin"])
def test_mutations_parse_or_give_loader_error(built, name):
    data = relfatbin_section(built) if name == "relfatbin" else built.read(name)
    rng = random.Random(name)
    for _ in range(400):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            # Headers are where a flipped byte changes sizes and offsets: aim there often.
            position = (
                rng.randrange(min(len(data), 256))
                if rng.random() < 0.6
                else rng.randrange(len(data))
            )
            mutated[position] = rng.randrange(256)
        parses_or_refuses(bytes(mutated))


@pytest.mark.parametrize(("name", "method"), [("fatbin_default", "zstd"), ("fatbin_speed", "lz4")])
def test_corrupt_compressed_ptx_is_refused(built, name, method):
    data = bytearray(built.read(name))
    [ptx] = [e for e in fatbin_entries(bytes(data)) if e["kind"] == 1]
    header_size, payload_size, compressed_size = struct.unpack_from(
        "<I Q I", data, ptx["offset"] + 4
    )
    payload = ptx["offset"] + header_size
    data[payload + 4 : payload + compressed_size] = bytes(compressed_size - 4)
    with pytest.raises(LoaderError, match=method) as caught:
        parse_image(bytes(data))
    assert caught.value.code == CUDA_ERROR_INVALID_IMAGE


def test_wrong_uncompressed_size_is_refused(built):
    data = bytearray(built.read("fatbin_default"))
    [ptx] = [e for e in fatbin_entries(bytes(data)) if e["kind"] == 1]
    struct.pack_into("<Q", data, ptx["offset"] + 56, 1 << 40)
    with pytest.raises(LoaderError, match="uncompressed size"):
        parse_image(bytes(data))


def test_random_bytes_are_an_invalid_image():
    rng = random.Random(7)
    for length in (0, 1, 3, 4, 15, 16, 64, 1000):
        with pytest.raises(LoaderError) as caught:
            parse_image(bytes(rng.randrange(256) for _ in range(length)))
        assert caught.value.code == CUDA_ERROR_INVALID_IMAGE


def test_impossible_elf_tables_are_refused(built):
    data = bytearray(built.read("kernel_80.cubin"))
    for field, value in ((0x3C, 0xFFFF), (0x28, 1 << 62), (0x3A, 1), (0x3E, 0xFFF0)):
        mutated = bytearray(data)
        struct.pack_into("<Q" if field == 0x28 else "<H", mutated, field, value)
        with pytest.raises(LoaderError):
            parse_image(bytes(mutated))


def test_non_bytes_is_an_invalid_value():
    with pytest.raises(LoaderError) as caught:
        parse_image("not bytes")
    assert caught.value.code == CUDA_ERROR_INVALID_VALUE


def test_mutated_images_in_memory_parse_or_give_loader_error(built):
    rng = random.Random(3)
    for name in ("fatbin_default", "kernel_80.cubin"):
        data = built.read(name)
        for _ in range(200):
            mutated = bytearray(data)
            mutated[rng.randrange(min(len(data), 128))] = rng.randrange(256)
            buffer = ctypes.create_string_buffer(bytes(mutated), len(mutated))
            try:
                read_image_at(ctypes.addressof(buffer))
            except LoaderError:
                pass


def test_an_offset_past_64_bits_in_memory_is_an_invalid_image(built):
    """A cubin in memory whose section-name table is empty and lies at an offset that carries
    the address past 2^64 (the mutation test above met one by chance, as ASLR placed its
    buffer): an invalid image, not ctypes' OverflowError."""
    data = bytearray(built.read("kernel_80.cubin"))
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, _, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    header = shoff + shstrndx * shentsize
    buffer = ctypes.create_string_buffer(bytes(data), len(data))
    address = ctypes.addressof(buffer)
    struct.pack_into("<QQ", buffer, header + 24, (2**64 - address + 16) % 2**64, 0)  # sh_offset, sh_size
    with pytest.raises(LoaderError) as e:
        read_image_at(address)
    assert e.value.code == CUDA_ERROR_INVALID_IMAGE
