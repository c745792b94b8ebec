"""Pre-Volta warp-synchronous code through a volatile shared pointer, no __syncwarp
(warp_sync_scan.cu: the CUDA SDK's scanwarp, as HeCBench's radixsort has it, and the
classic reduction's last warp). On a GPU it relies on ptxas keeping volatile accesses in
program order and on the warp running in lock step. Where a warp is a subgroup, cuport puts
a subgroup-scope memory barrier after each volatile shared store (lower_sync.py
after_volatile_shared_store), so that NVIDIA's Vulkan compiler cannot read the next step's
word before the lanes stored this one; radixsort printed "Unordered key" on the H100's
Vulkan without it. The CPU backend runs a warp's 32 lanes as one vector; lavapipe's 8-wide
subgroups cannot run a warp in lock step (skipped there)."""

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


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "warp_sync_scan.cu", "sm_90")


@pytest.mark.skipif(SPIRV_DIS is None, reason="spirv-dis not installed (Debian: spirv-tools)")
def test_a_subgroup_barrier_after_each_volatile_shared_store(ptx) -> None:
    """With 32-wide subgroups every volatile Workgroup store is followed by a subgroup-scope
    OpMemoryBarrier before the next load; with emulated warps (8 wide) none is added."""
    m = parse(ptx)
    for size in (32, 8):
        spv = compile_kernel(m, "_Z9warp_scanPKjPjS1_", (THREADS, 1, 1), 0, DeviceCaps(subgroup_size=size)).shader.spirv
        validate(spv)
        d = disassemble(spv)
        subgroup = re.search(r"(%\w+) = OpConstant %\w+ 3\b", d)
        body = d[d.index("OpFunction "):]
        stores = [mt.end() for mt in re.finditer(r"OpStore %\w+ %\w+ Volatile[^\n]*", body)]
        assert len(stores) >= 11, len(stores)  # scanwarp's 7, the reduction's 6 (some merged)
        if size == 8:
            assert subgroup is None or f"OpMemoryBarrier {subgroup.group(1)} " not in body
            continue
        for end in stores:
            nxt = body[end:]
            barrier = nxt.find(f"OpMemoryBarrier {subgroup.group(1)} ")
            load = nxt.find("OpLoad")
            assert barrier != -1 and (load == -1 or barrier < load), body[end:end + 400]


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_warp_synchronous_scan_and_reduction(ptx, device) -> None:
    if device == "vulkan":
        from cuport.backends.vulkan import runtime

        devs = runtime.devices()
        if not devs:
            pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
        if not devs[0].min_subgroup_size <= 32 <= devs[0].max_subgroup_size:
            pytest.skip(f"{devs[0].name}: subgroups {devs[0].min_subgroup_size}..{devs[0].max_subgroup_size} "
                        "wide cannot run a warp in lock step")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1000, BLOCKS * THREADS).astype(np.uint32)
    scan = np.zeros_like(x)
    sums = np.zeros(BLOCKS, np.uint32)
    cuport.Module(ptx, device=device).kernel("_Z9warp_scanPKjPjS1_")((BLOCKS, 1, 1), (THREADS, 1, 1),
                                                                       (x, scan, sums))
    warps = x.reshape(-1, 32)
    want = (np.cumsum(warps, axis=1) - warps).astype(np.uint32).ravel()
    np.testing.assert_array_equal(scan, want)
    np.testing.assert_array_equal(sums, x.reshape(BLOCKS, THREADS).sum(axis=1).astype(np.uint32))
