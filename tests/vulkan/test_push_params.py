"""Kernel parameters read from push constants (DeviceCaps.push_params), on nvcc's output.

Only a device with more than 128 bytes of push constants gets them (NVIDIA's 256; lavapipe
has 128, all of them cuport's own block), so here the modules are checked, not run: valid
SPIR-V with the copy on and off, and the parameter loads from device memory gone where the
copy holds them. On the H100 the programs with every kind of parameter (struct_params.cu:
structs by value, each integer width, float4, a pointer) passed with the copy on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nvcc_ptx import ptx_of
from spvtools import disassemble, validate

from cuport.backends import facts
from cuport.backends.vulkan import compiler
from cuport.backends.vulkan.lower import DeviceCaps

PROGRAMS = Path(__file__).parent.parent / "programs"


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return facts.load_ptx([ptx_of(tmp_path_factory, PROGRAMS / "struct_params.cu", "sm_80")])


def _compile(m, name: str, push: int):
    return compiler.compile_kernel(m, name, (32, 1, 1), 0, DeviceCaps(push_params=push))


def _spirv(m, name: str, push: int) -> bytes:
    return bytes(_compile(m, name, push).shader.spirv)


@pytest.mark.parametrize("which", ["struct_kernel", "many_params"])
def test_parameters_from_push_constants(module, which):
    name = next(n for n, f in module.functions.items() if f.is_entry and which in n)
    plain, pushed = _spirv(module, name, 0), _spirv(module, name, 128)
    validate(plain)
    validate(pushed)
    d_plain, d_pushed = disassemble(plain), disassemble(pushed)
    # every ld.param of the kernel reads the push-constant copy (each parameter lies in its
    # first 128 bytes), so fewer loads through buffer addresses remain
    assert d_pushed.count("OpConvertUToPtr") < d_plain.count("OpConvertUToPtr")
    assert max(_push_offsets(d_plain)) < 128 <= max(_push_offsets(d_pushed))


def _push_offsets(dis: str) -> list[int]:
    """Byte offsets of the push-constant block's members (the only struct with offsets)."""
    return [int(x) for x in re.findall(r"OpMemberDecorate %\d+ \d+ Offset (\d+)", dis)]


def test_a_launch_writes_the_parameters_only_where_their_address_is_taken(module):
    """KernelPlan.params_in_memory: False where every read is from the push constants (the
    launch then writes no copy to device memory), True without the copy, and True where the
    code makes an address of a parameter (a cvta.param pointer read through a register)."""
    name = next(n for n, f in module.functions.items() if f.is_entry and "many_params" in n)
    assert _compile(module, name, 0).plan.params_in_memory
    assert not _compile(module, name, 128).plan.params_in_memory
    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry addr(.param .u64 out, .param .align 4 .b8 s[16])
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, s;
    cvta.param.u64 %rd3, %rd2;
    ld.u32 %r1, [%rd3+4];
    cvta.to.global.u64 %rd4, %rd1;
    st.global.u32 [%rd4], %r1;
    ret;
}
"""
    assert _compile(facts.load_ptx([ptx]), "addr", 128).plan.params_in_memory

