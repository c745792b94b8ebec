"""Device memory that the host cannot touch (a discrete GPU's under the Vulkan backend): every
way of allocating it must mark it so, or the driver's copies memmove to a GPU address (the
H200 host: stream_ordered.cu's cudaMemcpyAsync from cudaMallocAsync memory crashed the
process). A stand-in backend whose memory the host must not touch at its address (the
allocation is offset from the bytes that hold it) checks the driver's side on any machine."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

from cuport.driver import memory, mempool

OFFSET = 1 << 40  # the "device address" of a byte: its host address plus this


class Discrete:
    """A backend whose memory is reached only through copies."""

    def __init__(self) -> None:
        self.blocks: dict[int, ctypes.Array] = {}
        self.copies: list[str] = []

    def allocate(self, size: int, kind: str) -> int:
        buf = ctypes.create_string_buffer(size)
        address = ctypes.addressof(buf) + OFFSET
        self.blocks[address] = buf
        return address

    def free(self, base: int, size: int) -> None:
        self.blocks.pop(base, None)

    def host_accessible(self, address: int) -> bool:
        return not any(a <= address < a + len(b) for a, b in self.blocks.items())

    def copy_htod(self, dst: int, src: int, n: int) -> None:
        self.copies.append("htod")
        ctypes.memmove(dst - OFFSET, src, n)

    def copy_dtoh(self, dst: int, src: int, n: int) -> None:
        self.copies.append("dtoh")
        ctypes.memmove(dst, src - OFFSET, n)


def _context(be: Discrete):
    return SimpleNamespace(device=SimpleNamespace(backend=lambda: be, total_memory=lambda: 1 << 30))


def test_stream_ordered_allocations_are_copied_through_the_backend() -> None:
    be = Discrete()
    pool = mempool.Pool(device=0, default=False)
    a = pool.take(64, _context(be))
    try:
        assert not a.host_ok
        src = ctypes.create_string_buffer(b"stream-ordered memory", 32)
        dst = ctypes.create_string_buffer(32)
        memory.move(a.base, ctypes.addressof(src), 32)
        memory.move(ctypes.addressof(dst), a.base, 32)
        assert dst.raw == src.raw
        assert be.copies == ["htod", "dtoh"]
    finally:
        memory.TABLE.remove(a)


_SCALE_CU = r"""
extern "C" __global__ void scale(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

_API_RUN = r"""
import numpy as np, sys, cuport
m = cuport.Module(open(sys.argv[1]).read(), device="vulkan")
be = m._backend
probe = be.allocate(64)
assert not be.host_accessible(probe), "CUPORT_VK_COPIES=1 should make device memory copy-only"
be.free(probe, 64)
calls = []
for name in ("copy_htod", "copy_dtoh"):  # (lavapipe's addresses are the host's: count the copies)
    real = getattr(be, name)
    setattr(be, name, lambda d, s, n, real=real, name=name: (calls.append(name), real(d, s, n)))
x = np.arange(1000, dtype=np.float32)
y = np.ones(1000, dtype=np.float32)
m.kernel("scale")(grid=4, block=256, args=(y, x, np.float32(2.0), 1000))
assert np.array_equal(y, 2 * x + 1), y[:8]
assert sorted(calls) == ["copy_dtoh", "copy_dtoh", "copy_htod", "copy_htod"], calls
try:
    m.global_array("table", np.float32)
except ValueError as e:
    assert "device memory" in str(e), e
print("ok")
"""


def test_python_api_stages_arrays_through_copies(tmp_path) -> None:
    """cuport.Module on a Vulkan device whose memory the host cannot touch (CUPORT_VK_COPIES=1
    makes lavapipe's so; an NVIDIA GPU's is): the arrays go to the device and back through
    the backend's copies, not a memmove to a GPU address."""
    import os
    import shutil
    import subprocess
    import sys

    import pytest

    from cuport.backends.vulkan import runtime

    nvcc = shutil.which("nvcc")
    if nvcc is None or not runtime.devices():
        pytest.skip("needs nvcc and a Vulkan device")
    src = tmp_path / "scale.cu"
    src.write_text(_SCALE_CU + "__device__ float table[4];\n")
    ptx = tmp_path / "scale.ptx"
    subprocess.run([nvcc, "-ptx", "-O3", "-o", str(ptx), str(src)], check=True)
    env = dict(os.environ, CUPORT_VK_COPIES="1")
    r = subprocess.run([sys.executable, "-c", _API_RUN, str(ptx)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
