"""What the Vulkan memory model needs for CUDA's acquire/release to order plain accesses,
and the address check of global accesses, in the SPIR-V cuport emits (a GPU is needed to see
the failures: on the H200, grid.sync() without MakeVisible read the previous round's block
sums from a stale L1, and a wild pointer hung the queue)."""

from __future__ import annotations

import re

import pytest
from spvtools import SPIRV_DIS, disassemble, validate

from cuport.backends.vulkan.compiler import compile_kernel
from cuport.backends.vulkan.lower import DeviceCaps
from cuport.ptx.parser import parse

# cooperative groups' grid.sync() as CUDA 13 emits it: a release add, an acquire spin
PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry sync(.param .u64 bar, .param .u64 data, .param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [bar];
    ld.param.u64 %rd2, [data];
    ld.param.u64 %rd3, [out];
    st.global.u32 [%rd2], 7;
    atom.add.release.gpu.u32 %r1, [%rd1], 1;
WAIT:
    ld.acquire.gpu.u32 %r2, [%rd1];
    setp.lt.u32 %p1, %r2, 2;
    @%p1 bra WAIT;
    ld.global.u32 %r3, [%rd2+4];
    st.global.u32 [%rd3], %r3;
    ret;
}
"""

needs_dis = pytest.mark.skipif(SPIRV_DIS is None, reason="spirv-dis not installed (Debian: spirv-tools)")


def _dis(caps: DeviceCaps) -> str:
    c = compile_kernel(parse(PTX), "sync", (32, 1, 1), 0, caps)
    validate(c.shader.spirv)
    return disassemble(c.shader.spirv)


def _semantics(dis: str, op: str) -> list[int]:
    """The memory-semantics constants of each `op` in the disassembly (spirv-dis --raw-id)."""
    consts = {m.group(1): int(m.group(2)) for m in re.finditer(r"(%\d+) = OpConstant %\d+ (\d+)", dis)}
    out = []
    for m in re.finditer(rf"= {op} %\d+ %\d+ %\d+ (%\d+)", dis):
        out.append(consts[m.group(1)])
    return out


@needs_dis
def test_acquire_makes_visible_and_release_makes_available() -> None:
    dis = _dis(DeviceCaps(subgroup_size=32, independent_threads=True, divergent_barriers=True))
    make_available, make_visible, acquire, release = 0x2000, 0x4000, 0x2, 0x4
    loads = _semantics(dis, "OpAtomicLoad")
    adds = _semantics(dis, "OpAtomicIAdd")
    assert any(s & acquire and s & make_visible for s in loads), (loads, dis)
    assert adds and all(s & release and s & make_available for s in adds), (adds, dis)


@needs_dis
def test_global_accesses_are_checked_against_the_devices_memory() -> None:
    """With a sink page, each global access compares its address with the push constants
    heap_lo/heap_span; without one (no backend), none does."""
    checked = _dis(DeviceCaps(sink_page=0x20000, zero_page=0x10000))
    plain = _dis(DeviceCaps())
    assert checked.count("OpUGreaterThanEqual") >= 5 > plain.count("OpUGreaterThanEqual")
