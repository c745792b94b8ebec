"""The CPU backend's objects must link wherever the JIT puts their sections.

LLVM's JIT linker (RuntimeDyld) maps an object's code, read-only data and writable data
separately; with x86-64's small code model the code reaches constants and jump tables
through 32-bit PC-relative offsets, and a program aborted in RuntimeDyldELF
(`isInt<32>(RealOffset)`) when the mappings landed 2 GiB apart (HeCBench nqueen and pool,
cuda-samples dmmaTensorCoreGemm; it depends on the process's address-space layout, so no
small program reproduces it at will). jit.py asks for the JIT's code model (large on
x86-64): every relocation of an object is then 64 bits wide.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from cuport.backends.cpu.compiler import compile_object
from cuport.loader.elf import Elf, buffer_reader
from cuport.ptx.parser import parse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import need_nvcc  # noqa: E402

SHT_RELA = 4
# x86-64 relocation types whose field is 32 bits or narrower (System V x86-64 ABI, table 4.9)
NARROW = {2: "PC32", 4: "PLT32", 9: "GOTPCREL", 10: "32", 11: "32S", 12: "16", 13: "PC16",
          14: "8", 15: "PC8", 26: "GOTPC32", 41: "GOTPCRELX", 42: "REX_GOTPCRELX"}


def relocation_types(obj: bytes) -> list[int]:
    elf = Elf(buffer_reader(memoryview(obj)), len(obj))
    types = []
    for s in elf.sections:
        if s.type == SHT_RELA:
            data = obj[s.offset:s.offset + s.size]
            for off in range(0, len(data), 24):
                _, info, _ = struct.unpack_from("<QQq", data, off)
                types.append(info & 0xFFFFFFFF)
    return types


@pytest.mark.skipif(sys.platform != "linux", reason="x86-64 ELF objects")
def test_kernel_objects_have_only_64_bit_relocations(tmp_path):
    ptx = tmp_path / "jump_table.ptx"
    subprocess.run([need_nvcc(), "-ptx", "-O3", "-o", str(ptx), str(HERE / "c" / "jump_table.cu")],
                   check=True, timeout=300)
    obj, _ = compile_object(parse(ptx.read_text()), "_Z5shadePKiPKfPfi", (128, 1, 1))
    types = relocation_types(obj)
    assert types, "the kernel's object has no relocations: the test no longer tests anything"
    narrow = sorted({NARROW[t] for t in types if t in NARROW})
    assert not narrow, f"32-bit relocations in the kernel's object: {narrow}"
