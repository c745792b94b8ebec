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


# a warp-synchronous exchange through shared memory as nvcc 13 emits __syncwarp() between a
# store and the load of another lane's word, and once more under a divergent branch
SYNCWARP_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry swap(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b8 s[128];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.s32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    bar.warp.sync -1;
    xor.b32 %r5, %r2, 4;
    add.s32 %r6, %r3, %r5;
    ld.shared.u32 %r7, [%r6];
    setp.lt.u32 %p1, %r1, 16;
    @!%p1 bra DONE;
    bar.warp.sync 65535;
DONE:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd2, %rd1, %rd2;
    st.global.u32 [%rd2], %r7;
    ret;
}
"""


@needs_dis
@pytest.mark.parametrize("divergent_ok", [True, False])
def test_syncwarp_orders_the_warps_accesses_where_a_warp_is_a_subgroup(divergent_ok) -> None:
    """__syncwarp on 32-wide subgroups: a subgroup-scope acquire-release memory barrier over
    workgroup and buffer memory (no control barrier: the subgroup runs together, and a
    partial mask's is in code the rest of the warp skips); in divergent code only where the
    device's memory barriers do not act as workgroup barriers there (quirks.py)."""
    caps = DeviceCaps(subgroup_size=32, independent_threads=True, divergent_barriers=True,
                      divergent_memory_barriers=divergent_ok)
    c = compile_kernel(parse(SYNCWARP_PTX), "swap", (32, 1, 1), 0, caps)
    validate(c.shader.spirv)
    dis = disassemble(c.shader.spirv)
    consts = {m.group(1): int(m.group(2)) for m in re.finditer(r"(%\d+) = OpConstant %\d+ (\d+)", dis)}
    barriers = [(consts[a], consts[b]) for a, b in re.findall(r"OpMemoryBarrier (%\d+) (%\d+)", dis)]
    subgroup, acq_rel, workgroup_mem, uniform_mem = 3, 0x8, 0x100, 0x40
    warp = [sem for scope, sem in barriers if scope == subgroup]
    assert len(warp) == (2 if divergent_ok else 1), dis
    assert all(sem & acq_rel and sem & workgroup_mem and sem & uniform_mem for sem in warp)
    assert "OpControlBarrier" not in dis


# a spin on a shared flag another thread of the block sets (volatile, as nvcc emits for a
# `volatile __shared__ int flag`): the load must stay in the loop
VOLATILE_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .shared .align 4 .u32 flag;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra WAIT;
    st.volatile.shared.u32 [flag], 1;
WAIT:
    ld.volatile.shared.u32 %r2, [flag];
    setp.eq.s32 %p2, %r2, 0;
    @%p2 bra WAIT;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


@needs_dis
@pytest.mark.parametrize("workgroup_memory", [48 * 1024, 0], ids=["workgroup", "slice"])
def test_volatile_shared_accesses_stay_volatile(workgroup_memory) -> None:
    """ld/st.volatile.shared carry the Volatile memory operand (and are made visible /
    available at workgroup scope), in workgroup memory and in a device-memory slice; a plain
    shared access does not."""
    caps = DeviceCaps(subgroup_size=32, workgroup_memory=workgroup_memory)
    c = compile_kernel(parse(VOLATILE_PTX), "spin", (32, 1, 1), 0, caps)
    validate(c.shader.spirv)
    dis = disassemble(c.shader.spirv)
    volatile = re.findall(r"(OpLoad|OpStore)[^\n]*Volatile", dis)
    assert sorted(set(volatile)) == ["OpLoad", "OpStore"], dis
    plain = compile_kernel(parse(VOLATILE_PTX.replace(".volatile", "")), "spin", (32, 1, 1), 0, caps)
    assert "Volatile" not in disassemble(plain.shader.spirv)
