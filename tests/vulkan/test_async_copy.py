"""cp.async, cp.async.bulk and mbarriers on the Vulkan backend (isa/async_copy.py through
backends/vulkan/lower_async.py's copies and atomic mbarrier words), with nvcc's PTX: tests/programs/async_copy.cu's kernels that wait for no other thread, and
async_kernels.cu's, checked against numpy.

A loop that waits on an mbarrier waits for other threads of the block, which a device that
runs a workgroup in lock step (lavapipe) cannot do in general: such kernels are refused
there (checked below). In a block of one subgroup the lock step is harmless (every thread
arrives before any waits), so on lavapipe those kernels run with blocks of 8 threads, compiled
as for a device whose threads progress independently.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of
from spvtools import validate

from cuport.backends.base import BackendError
from cuport.backends.vulkan.compiler import compile_kernel
from cuport.backends.vulkan.lower import DeviceCaps

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE.parent / "programs"


def _ptx(tmp_path_factory, src: Path) -> str:
    return ptx_of(tmp_path_factory, src, "sm_90")


@pytest.fixture(scope="module")
def program_ptx(tmp_path_factory) -> str:
    return _ptx(tmp_path_factory, PROGRAMS / "async_copy.cu")


@pytest.fixture(scope="module")
def kernels_ptx(tmp_path_factory) -> str:
    return _ptx(tmp_path_factory, HERE / "async_kernels.cu")


def _backend():
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return get_vulkan_backend()


@pytest.fixture(autouse=True)
def _steady_clock(monkeypatch):
    """cuda::barrier's waits read %globaltimer for their back-off only. lavapipe's device
    clock wraps at 32 bits, so cuport refuses %globaltimer there (test_globaltimer.py);
    these tests give it a clock of raw ticks so that the barrier semantics stay tested."""
    from cuport.backends.vulkan import runtime

    if runtime.devices():
        be = _backend()
        if be.caps.device_clock and be.caps.globaltimer is None and be.info.driver_id == "MESA_LLVMPIPE":
            monkeypatch.setattr(be, "caps", dataclasses.replace(be.caps, globaltimer=(0, 0, 1.0)))


def _dev(be, a: np.ndarray) -> int:
    p = be.allocate(max(a.nbytes, 4))
    be.copy_htod(p, a.ctypes.data, a.nbytes)
    return p


def _host(be, p: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    be.copy_dtoh(out.ctypes.data, p, out.nbytes)
    return out


def _kernel(be, ptx: str, part: str, block: tuple[int, int, int], independent: bool = False):
    m = be.load_module([ptx])
    k = m.kernel(next(n for n in m.kernel_names() if part in n))
    if independent and not be.caps.independent_threads:
        # one subgroup per block: compiled as for threads that progress independently
        assert block[0] * block[1] * block[2] <= be.info.subgroup_size
        caps = dataclasses.replace(be.caps, independent_threads=True)
        k.install(compile_kernel(m.ptx, k.fn.name, block, 0, caps))
    return k


def test_zero_fill_copies(program_ptx):
    """__pipeline_memcpy_async with a src-size: the tail zero-filled, never read."""
    be = _backend()
    n = 997
    h = np.where(np.arange(1024) < n, np.arange(1024) % 13, -100).astype(np.float32)
    d, o = _dev(be, h), _dev(be, np.zeros(1024, np.float32))
    _kernel(be, program_ptx, "zero_fill", (256, 1, 1)).launch(
        (1, 1, 1), (256, 1, 1), 0, struct.pack("<QiiQ", d, n, 0, o))
    want = np.where(np.arange(1024) < n, h, 0) + 1
    assert (_host(be, o, h) == want).all()


def test_inline_forms(program_ptx):
    """ignore-src, a run-time src-size, expect_tx/complete_tx, pending_count, try_wait.parity
    and test_wait, as async_copy.cu checks them."""
    be = _backend()
    h = np.arange(1000, 1128, dtype=np.uint32)
    d, o = _dev(be, h), _dev(be, np.zeros(256, np.uint32))
    _kernel(be, program_ptx, "raw_forms", (32, 1, 1)).launch((1, 1, 1), (32, 1, 1), 0, struct.pack("<QQ", d, o))
    r = _host(be, o, np.zeros(256, np.uint32))
    for t in range(32):
        words = t % 5
        assert r[t * 4:t * 4 + 4].tolist() == [h[t * 4 + k] if k < words else 0 for k in range(4)]
        assert r[224 + t] == (0 if t % 3 == 0 else h[t])
    # pending arrivals before the warp's: one count for the warp where it is a subgroup (as
    # on an H200); where warps are emulated each thread arrives alone, in lane order
    warp_is_subgroup = be.caps.subgroup_size == 32
    assert r[128:160].tolist() == ([32] * 32 if warp_is_subgroup else [32 - t for t in range(32)])
    assert r[192:224].tolist() == [1] * 32  # (r[160:192]: see async_copy.cu)


def test_waiting_kernels_are_refused_in_lock_step(program_ptx):
    be = _backend()
    if be.caps.independent_threads:
        pytest.skip(f"{be.info.name} runs threads independently")
    with pytest.raises(BackendError, match="a loop that waits for another thread of the block"):
        _kernel(be, program_ptx, "barrier_phases", (256, 1, 1)).prepare((256, 1, 1))


def test_barrier_phases_with_a_dropout(kernels_ptx):
    be = _backend()
    o = _dev(be, np.zeros(16, np.int32))
    _kernel(be, kernels_ptx, "phases", (8, 1, 1), independent=True).launch(
        (2, 1, 1), (8, 1, 1), 0, struct.pack("<Q", o))
    want = sum(sum(8 if w == 7 else (p + 1) * (w + 1) for w in range(8)) for p in range(3))
    assert _host(be, o, np.zeros(16, np.int32)).tolist() == ([want] * 7 + [0]) * 2


def test_bulk_copy_completes_the_barrier(kernels_ptx):
    be = _backend()
    h = (np.arange(3 * 64, dtype=np.int32) * 7 + 1)
    d, o = _dev(be, h), _dev(be, np.zeros_like(h))
    _kernel(be, kernels_ptx, "bulk", (8, 1, 1), independent=True).launch(
        (3, 1, 1), (8, 1, 1), 0, struct.pack("<QQ", d, o))
    want = h.reshape(3, 64)[:, ::-1].reshape(-1) + 1
    assert (_host(be, o, h) == want).all()


def test_per_thread_pipeline(kernels_ptx):
    be = _backend()
    n, threads = 5, 64
    h = np.arange(n * threads * 4, dtype=np.float32) % 17
    d, o = _dev(be, h), _dev(be, np.zeros(threads, np.float32))
    _kernel(be, kernels_ptx, "staged", (threads, 1, 1)).launch(
        (1, 1, 1), (threads, 1, 1), 0, struct.pack("<QiiQ", d, n, 0, o))
    want = h.reshape(n, threads, 4).sum(axis=(0, 2))
    assert (_host(be, o, np.zeros(threads, np.float32)) == want).all()


@pytest.mark.parametrize("part", ["pipeline_sum", "barrier_phases", "bulk_reverse", "raw_forms"])
def test_warp_wide_arrivals_validate(program_ptx, part):
    """Where the warp is a subgroup (NVIDIA), arrivals at one barrier go in lane order
    through subgroup operations: the SPIR-V validates (run on the H200 by async_copy.cu)."""
    from cuport.ptx.parser import parse

    ptx = parse(program_ptx)
    name = next(f.name for f in ptx.kernels() if part in f.name)
    block = (32 if part == "raw_forms" else 256, 1, 1)
    caps = DeviceCaps(subgroup_size=32, independent_threads=True, divergent_barriers=True,
                      device_clock=True, globaltimer=(0, 0, 1.0))  # libcu++'s waits back off by it
    c = compile_kernel(ptx, name, block, 0, caps)
    validate(c.shader.spirv)
