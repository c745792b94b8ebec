"""Address-space inference (passes/spaces.py) on nvcc's output, run on the Vulkan backend.

A pointer loaded from memory points to global memory unless the kernel stores a shared or
local address into memory (such an address means something only to the thread or block
that made it); spaces.cu has a kernel that does (the load must then test the address at run
time and find the local array) and one that stores a global address beside a local array
made generic (the load is a plain global one). Results are checked against numpy.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

HERE = Path(__file__).resolve().parent
N = 5
THREADS = 32


@pytest.fixture(scope="module")
def spaces_ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "spaces.cu", "sm_80")


def _reloaded_access(ptx: str, kernel: str) -> frozenset[str]:
    """The spaces of the generic load through the pointer read back from memory."""
    from cuport.backends import facts
    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.backends.vulkan.lower import DeviceCaps
    from cuport.isa.memory import space_of
    from cuport.ptx import ir

    c = compile_kernel(facts.load_ptx([ptx]), kernel, (THREADS, 1, 1), 0, DeviceCaps(subgroup_size=8))
    loads = [s for s in c.fn.body if isinstance(s, ir.Instr) and s.op == "ld"
             and space_of(s) == "generic"]
    assert len(loads) == 1, [s.text() for s in loads]
    return c.spaces.of(loads[0].args[1])


def _expected(kernel: str, g: np.ndarray) -> np.ndarray:
    t = np.arange(THREADS)
    local = g[:8] + np.arange(8) if kernel == "escapes" else g[:8] - np.arange(8)
    through = local if kernel == "escapes" else g[8:16]
    return through[(N + t) & 7] + 3 * local[N & 7]


@pytest.mark.parametrize("kernel, spaces", [("escapes", {"global", "shared", "local"}),
                                            ("stays", {"global"})])
def test_pointer_read_back_from_memory(spaces_ptx, kernel, spaces):
    assert _reloaded_access(spaces_ptx, kernel) == spaces
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    from cuport.backends.vulkan.backend import get_vulkan_backend

    be = get_vulkan_backend()
    g = (np.arange(16, dtype=np.int32) * 7 - 20).astype(np.int32)
    dg, dslot, dout = be.allocate(g.nbytes), be.allocate(8 * THREADS), be.allocate(4 * THREADS)
    try:
        be.copy_htod(dg, g.ctypes.data, g.nbytes)
        k = be.load_module([spaces_ptx]).kernel(kernel)
        k.launch((1, 1, 1), (THREADS, 1, 1), 0, struct.pack("<QQQi", dg, dslot, dout, N))
        failed = be.drain()
        assert failed is None, failed
        out = np.empty(THREADS, dtype=np.int32)
        be.copy_dtoh(out.ctypes.data, dout, out.nbytes)
        assert out.tolist() == _expected(kernel, g).tolist()
    finally:
        for a, n in ((dg, g.nbytes), (dslot, 8 * THREADS), (dout, 4 * THREADS)):
            be.free(a, n)
