"""Pre-Volta warp-synchronous code through a volatile shared pointer, no __syncwarp
(warp_sync_scan.cu: the CUDA SDK's scanwarp, as HeCBench's radixsort has it, and the
classic reduction's last warp). On a GPU it relies on ptxas keeping volatile accesses in
program order and on the warp running in lock step. Where a warp is a subgroup, cuport puts
a subgroup-scope memory barrier after each volatile shared store (lower_sync.py
after_volatile_shared_store), so that NVIDIA's Vulkan compiler cannot read the next step's
word before the lanes stored this one (radixsort printed "Unordered key" on the H100's
Vulkan). Where warps are emulated (lavapipe's 8-wide subgroups), a volatile shared store
that the whole block runs sits between workgroup barriers: without them scanwarp's
results were wrong there (radixsort failed with an illegal shared address). The
reduction's last warp, which part of the block skips (no barrier possible), is right on
lavapipe without them (measured; why not examined). The CPU backend runs a warp's 32
lanes as one vector."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of
from spvtools import SPIRV_DIS, disassemble, validate

import cuport
from cuport.backends.vulkan.compiler import compile_kernel
from cuport.backends.vulkan.lower import DeviceCaps
from cuport.ptx.parser import parse

HERE = Path(__file__).resolve().parent
BLOCKS, THREADS = 64, 256
SCAN, REDUCE = "_Z9warp_scanPKjPj", "_Z11warp_reducePKjPj"


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "warp_sync_scan.cu", "sm_90")


def _stores_and_next(body: str):
    """For each volatile store of the function: the text before it (from the previous
    volatile store) and the text after it (to the next OpLoad)."""
    ends = [(mt.start(), mt.end()) for mt in re.finditer(r"OpStore %\w+ %\w+ Volatile[^\n]*", body)]
    for k, (start, end) in enumerate(ends):
        before = body[ends[k - 1][1] if k else 0:start]
        after = body[end:]
        yield before, after[:after.find("OpLoad")] if "OpLoad" in after else after


@pytest.mark.skipif(SPIRV_DIS is None, reason="spirv-dis not installed (Debian: spirv-tools)")
def test_barriers_around_volatile_shared_stores(ptx) -> None:
    """32-wide subgroups: a subgroup-scope OpMemoryBarrier after each volatile Workgroup store,
    before the next load. 8-wide (emulated warps): scanwarp's stores, which the whole block
    runs, each between two workgroup OpControlBarriers; the reduction's, in code part of the
    block skips, none."""
    m = parse(ptx)
    for size in (32, 8):
        for kernel in (SCAN, REDUCE):
            spv = compile_kernel(m, kernel, (THREADS, 1, 1), 0, DeviceCaps(subgroup_size=size)).shader.spirv
            validate(spv)
            d = disassemble(spv)
            consts = dict(re.findall(r"(%\w+) = OpConstant %\w+ (\d+)\n", d)[::-1])
            ids = {v: k for k, v in consts.items()}
            body = d[d.index("OpFunction "):]
            pairs = list(_stores_and_next(body))
            assert len(pairs) >= 6, (size, kernel, len(pairs))
            for before, after in pairs:
                if size == 32:
                    assert f"OpMemoryBarrier {ids['3']} " in after, after
                elif kernel == SCAN:
                    assert "OpControlBarrier" in before and "OpControlBarrier" in after, (before, after)
                else:
                    assert "OpControlBarrier" not in after, after


def _vulkan_warp_width() -> int:
    """32 where the Vulkan device runs a warp as one subgroup, else its subgroups' width."""
    from cuport.backends.vulkan import runtime

    devs = runtime.devices()
    if not devs:
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    d = devs[0]
    return 32 if d.min_subgroup_size <= 32 <= d.max_subgroup_size else d.max_subgroup_size


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_warp_synchronous_scan(ptx, device) -> None:
    if device == "vulkan":
        _vulkan_warp_width()
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1000, BLOCKS * THREADS).astype(np.uint32)
    scan = np.zeros_like(x)
    cuport.Module(ptx, device=device).kernel(SCAN)((BLOCKS, 1, 1), (THREADS, 1, 1), (x, scan))
    warps = x.reshape(-1, 32)
    np.testing.assert_array_equal(scan, (np.cumsum(warps, axis=1) - warps).astype(np.uint32).ravel())


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_warp_synchronous_reduction(ptx, device) -> None:
    """The reduction's last warp, in code part of the block skips (no barrier there): right
    on the CPU, where a warp is a subgroup, and (measured, 64 of 64 blocks) on lavapipe."""
    if device == "vulkan":
        _vulkan_warp_width()
    rng = np.random.default_rng(6)
    x = rng.integers(0, 1000, BLOCKS * THREADS).astype(np.uint32)
    sums = np.zeros(BLOCKS, np.uint32)
    cuport.Module(ptx, device=device).kernel(REDUCE)((BLOCKS, 1, 1), (THREADS, 1, 1), (x, sums))
    np.testing.assert_array_equal(sums, x.reshape(BLOCKS, THREADS).sum(axis=1).astype(np.uint32))
