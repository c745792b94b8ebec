"""The forward-progress check (backends/vulkan/compiler.py check_progress) on nvcc's output.

A device that runs a workgroup's invocations in lock step (lavapipe) refuses a loop that
waits for another thread of the block; a loop that only reads what other threads wrote, a
fixed number of trips (cuda-samples' threadFenceReduction: thread 0 sums the warps' partial
sums from volatile shared memory), runs there, and gives the sums.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport

HERE = Path(__file__).resolve().parent
LOCK_STEP = "a loop that waits for another thread of the block"


@pytest.fixture(scope="module")
def progress_ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "progress.cu", "sm_80")


def _compile(ptx: str, kernel: str, threads: int):
    from cuport.backends import facts
    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.backends.vulkan.lower import DeviceCaps

    return compile_kernel(facts.load_ptx([ptx]), kernel, (threads, 1, 1), 4 * threads,
                          DeviceCaps(subgroup_size=8))


def test_a_loop_reading_others_data_is_not_a_wait(progress_ptx):
    assert _compile(progress_ptx, "block_total", 128).shader is not None


def test_a_loop_on_a_flag_is_refused_in_lock_step(progress_ptx):
    from cuport.ptx.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match=LOCK_STEP):
        _compile(progress_ptx, "wait_for_flag", 64)


def test_block_total_on_vulkan(progress_ptx):
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    rng = np.random.default_rng(7)
    blocks, threads = 5, 128
    x = rng.integers(-100, 100, blocks * threads).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    cuport.Module(progress_ptx, device="vulkan").kernel("block_total")(
        blocks, threads, (x, out), shared=4 * threads)
    assert out.tolist() == x.reshape(blocks, threads).sum(axis=1).tolist()
