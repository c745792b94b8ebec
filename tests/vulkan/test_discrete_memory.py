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
