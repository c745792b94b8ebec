"""CUPORT_SPIRV_VALIDATE=1 (backends/vulkan/validate.py): every module through spirv-val."""

from __future__ import annotations

import struct

import pytest
from spvtools import needs_spirv_val

from cuport.backends.vulkan import validate
from cuport.backends.vulkan.compiler import compile_kernel
from cuport.ptx.errors import UnsupportedError
from cuport.ptx.parser import parse

PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd1, %rd1, %rd2;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


@needs_spirv_val
def test_a_valid_module_passes(monkeypatch):
    monkeypatch.setenv("CUPORT_SPIRV_VALIDATE", "1")
    c = compile_kernel(parse(PTX), "k", (32, 1, 1))
    validate.check(c.shader.spirv, "k")  # and compile_kernel ran it already


@needs_spirv_val
def test_an_invalid_module_fails_loudly():
    c = compile_kernel(parse(PTX), "k", (32, 1, 1))
    words = bytearray(c.shader.spirv)
    struct.pack_into("<I", words, 4, 0x00090000)  # a SPIR-V version that does not exist
    with pytest.raises(validate.InvalidSpirv, match="fails spirv-val"):
        validate.check(bytes(words), "k")


def test_validation_without_the_validator_is_an_error(monkeypatch):
    monkeypatch.setenv("CUPORT_SPIRV_VALIDATE", "1")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UnsupportedError, match="spirv-val is not installed"):
        compile_kernel(parse(PTX), "k", (32, 1, 1))


def test_off_by_default(monkeypatch):
    monkeypatch.delenv("CUPORT_SPIRV_VALIDATE", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    compile_kernel(parse(PTX), "k", (32, 1, 1))
