"""Memory with buffer device addresses: allocation, copies and fills, checked with numpy.

Copies and fills are checked both ways a stream can do them: on the host (idle stream,
mapped memory) and on the GPU (host_paths=False, or work queued ahead of them).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import vkrt_support as vs
from vkrt_support import device, vkrt

PATHS = [pytest.param(True, id="host-paths"), pytest.param(False, id="gpu-paths")]


@pytest.fixture(scope="module")
def dev():
    return device()


def test_allocations_are_aligned_disjoint_and_reused(dev):
    sizes = [1, 255, 256, 257, 4096, 100_000, 3, 1 << 20]
    bufs = [dev.alloc(n) for n in sizes]
    spans = sorted((b.address, b.address + b.size) for b in bufs)
    assert all(b.address % 512 == 0 for b in bufs)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))
    for b in bufs:
        assert dev.find(b.address, b.size) is b
        assert dev.find(b.address + b.size - 1) is b
    freed = bufs[3]
    dev.free(freed)
    with pytest.raises(vkrt.BadAddress):
        dev.find(freed.address)
    again = dev.alloc(freed.size)
    assert again.address == freed.address  # first fit gives the hole back
    for b in bufs[:3] + bufs[4:] + [again]:
        dev.free(b)
    with pytest.raises(vkrt.BadAddress):
        dev.free(again)


def test_a_range_past_the_end_of_an_allocation_is_refused(dev):
    b = dev.alloc(1000)
    try:
        with pytest.raises(vkrt.BadAddress):
            dev.find(b.address + 990, 20)
        s = dev.stream()
        with pytest.raises(vkrt.BadAddress):
            s.copy_to_device(b.address + 990, bytes(20))
    finally:
        dev.free(b)


def test_large_allocation_gets_its_own_block(dev):
    b = dev.alloc(40 << 20)
    try:
        assert b.block.size >= 40 << 20 and b.address % 512 == 0
        s = dev.stream(host_paths=False)
        data = np.random.default_rng(1).integers(0, 2**32, size=(40 << 20) // 4, dtype=np.uint32)
        s.copy_to_device(b.address, data)
        out = np.empty_like(data)
        s.copy_to_host(out, b.address)
        assert np.array_equal(out, data)
    finally:
        dev.free(b)


def test_too_large_allocation_is_out_of_memory(dev):
    too_big = dev.info.limits.max_memory_allocation_size + (1 << 20)
    with pytest.raises(vkrt.OutOfDeviceMemory, match="at most"):
        dev.alloc(too_big)


@pytest.mark.parametrize("host_paths", PATHS)
@pytest.mark.parametrize("size", [4, 1000, 4096, 65536, 65540, 1 << 20, 3 << 20])
@pytest.mark.parametrize("offset", [0, 4, 7])
def test_copy_round_trip(dev, host_paths, size, offset):
    buf = dev.alloc(size + 16)
    try:
        s = dev.stream(host_paths=host_paths)
        rng = np.random.default_rng(size + offset)
        data = rng.integers(0, 256, size=size, dtype=np.uint8)
        s.copy_to_device(buf.address + offset, data)
        out = np.zeros(size, dtype=np.uint8)
        s.copy_to_host(out, buf.address + offset)
        assert np.array_equal(out, data)
        # device -> device into a second allocation, then back
        other = dev.alloc(size)
        try:
            s.copy(other.address, buf.address + offset, size)
            out2 = np.zeros(size, dtype=np.uint8)
            s.copy_to_host(out2, other.address)
            assert np.array_equal(out2, data)
        finally:
            dev.free(other)
    finally:
        dev.free(buf)


def test_overlapping_device_copy_moves_like_memmove(dev):
    buf = dev.alloc(4096)
    try:
        s = dev.stream(host_paths=False)
        data = np.arange(4096, dtype=np.uint8)
        s.copy_to_device(buf.address, data)
        s.copy(buf.address + 100, buf.address, 2000)
        out = np.zeros(4096, dtype=np.uint8)
        s.copy_to_host(out, buf.address)
        want = data.copy()
        want[100:2100] = data[0:2000]
        assert np.array_equal(out, want)
    finally:
        dev.free(buf)


@pytest.mark.parametrize("host_paths", PATHS)
@pytest.mark.parametrize("width,value", [(1, 0xA5), (2, 0xBEEF), (4, 0xDEADBEEF), (1, 0)])
@pytest.mark.parametrize("offset,count", [(0, 1), (0, 1000), (2, 7), (4, 65536), (1, 12345),
                                          (3, 2)])
def test_fill(dev, host_paths, width, value, offset, count):
    offset = offset // width * width
    buf = dev.alloc(offset + count * width + 64)
    try:
        s = dev.stream(host_paths=host_paths)
        n = offset + count * width + 64
        background = np.full(n, 0x11, dtype=np.uint8)
        s.copy_to_device(buf.address, background)
        s.fill(buf.address + offset, value, count, width)
        out = np.zeros(n, dtype=np.uint8)
        s.copy_to_host(out, buf.address)
        want = background.copy()
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
        want[offset:offset + count * width] = np.full(count, value, dtype=dtype).view(np.uint8)
        assert np.array_equal(out, want)
    finally:
        dev.free(buf)


def test_fill_refuses_misaligned_wide_patterns(dev):
    buf = dev.alloc(64)
    try:
        with pytest.raises(ValueError, match="aligned"):
            dev.stream().fill(buf.address + 2, 1, 4, 4)
    finally:
        dev.free(buf)


def test_queued_copies_and_fills_keep_stream_order(dev):
    """With a batch recorded and not yet submitted, later copies go into the same stream order."""
    s = dev.stream(eager=False, batch=10_000)
    buf = dev.alloc(1 << 16)
    try:
        s.dispatch(dev.pipeline(vs.glsl(vs.EMPTY), "main", (1, 1, 1), 0), (1, 1, 1))
        assert not s.idle()  # recorded, not submitted: what follows is recorded behind it
        a = np.arange(1 << 14, dtype=np.uint32)
        s.copy_to_device(buf.address, a)          # vkCmdUpdateBuffer
        s.fill(buf.address + 64, 7, 16, 4)          # after it
        big = np.arange(1 << 14, dtype=np.uint32)[::-1].copy()
        s.copy_to_device(buf.address + 4096, big[:3000])  # staging, after the fill
        assert s.submitted == 0
        out = np.zeros(1 << 14, dtype=np.uint32)
        s.copy_to_host(out, buf.address)
        want = a.copy()
        want[16:32] = 7
        want[1024:1024 + 3000] = big[:3000]
        assert np.array_equal(out, want)
    finally:
        s.synchronize()
        dev.free(buf)


@pytest.mark.parametrize("kind", ["host", "managed"])
def test_host_kinds_are_mapped_and_kernels_see_host_writes(dev, kind):
    if kind == "managed" and not dev.managed_same_address:
        with pytest.raises(vkrt.Unsupported):
            dev.alloc(4096, kind)
        return
    buf = dev.alloc(256 * 4, kind)
    try:
        assert buf.host_ptr is not None
        if dev.managed_same_address:
            assert buf.host_ptr == buf.address
        host = np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint32) * 256).from_address(
            buf.host_ptr), dtype=np.uint32)
        host[:] = np.arange(256, dtype=np.uint32)
        s = dev.stream()
        pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 16)
        for _ in range(3):
            s.dispatch(pipe, (4, 1, 1), struct.pack("<QI", buf.address, 256))
        s.synchronize()
        assert np.array_equal(host, np.arange(256, dtype=np.uint32) + 3)
    finally:
        dev.free(buf)


def test_pinned_memory_copies_run_in_stream_order(dev):
    """Copies to and from pinned (host-kind) memory are GPU copies: they read and write the
    host memory when the stream gets there, not at the call."""
    pinned = dev.alloc(4096, "host")
    d = dev.alloc(4096)
    try:
        host = np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint8) * 4096).from_address(
            pinned.host_ptr), dtype=np.uint8)
        host[:] = 5
        s = dev.stream(eager=False, batch=10_000)
        s.fill(d.address, 9, 4096)
        s.copy_to_host(pinned.host_ptr, d.address, 4096)  # queued: nothing has run yet
        assert (host == 5).all()
        s.synchronize()
        assert (host == 9).all()
        host[:] = 3
        s.copy_to_device(d.address, pinned.host_ptr, 4096)
        out = np.zeros(4096, dtype=np.uint8)
        s.copy_to_host(out, d.address)
        assert (out == 3).all()
    finally:
        dev.free(pinned)
        dev.free(d)


def test_registered_host_memory_is_used_in_place(dev):
    if "VK_EXT_external_memory_host" not in dev.enabled_extensions:
        pytest.skip("the device lacks VK_EXT_external_memory_host")
    import mmap

    m = mmap.mmap(-1, 3 * 4096)
    arr = np.frombuffer(m, dtype=np.uint32)
    arr[:] = 10
    ptr = arr.ctypes.data + 4096 + 64  # not page aligned, as cuMemHostRegister allows
    buf = dev.register_host(ptr, 1024 * 4)
    try:
        if dev.host_pointer_is_device_pointer:
            assert buf.address == ptr
        s = dev.stream()
        pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 16)
        s.dispatch(pipe, (16, 1, 1), struct.pack("<QI", buf.address, 1024))
        s.synchronize()
        first = (4096 + 64) // 4
        want = np.full(3 * 1024, 10, dtype=np.uint32)
        want[first:first + 1024] = 11
        assert np.array_equal(arr, want)
    finally:
        dev.free(buf)
        del arr
        m.close()


def test_memory_info_counts_allocations(dev):
    free0, total = dev.memory_info()
    assert 0 < free0 <= total
    b = dev.alloc(48 << 20)
    try:
        free1, total1 = dev.memory_info()
        assert total1 == total
        if "VK_EXT_memory_budget" not in dev.enabled_extensions:
            assert free1 <= free0 - (48 << 20)
    finally:
        dev.free(b)


def test_validation_layer_saw_nothing_wrong(dev):
    assert vs.validation_messages() == []


def test_signal_memory_that_cannot_be_made_falls_back_to_system_memory(dev, monkeypatch, capfd):
    """Small pinned allocations go to "signal" blocks where the driver needs them (NVIDIA's:
    memory.py); where such a block cannot be made (here lavapipe, which has no placed maps)
    the allocation is system memory as elsewhere, the failed blocks are given back, and the
    reason is said once."""
    from cuport.backends.vulkan.runtime import memory as M

    mem = dev.memory
    monkeypatch.setattr(dev, "placed_alignment", 4096)
    monkeypatch.setattr(mem, "_signal_type", next(
        i for i, t in enumerate(mem._types) if {"device_local", "host_visible"} <= t.flags))
    before = mem.allocated
    blocks_before = len(mem._blocks[M.HOST])
    a = dev.alloc(64, M.HOST)
    b = dev.alloc(64, M.HOST)
    assert a.kind == b.kind == M.HOST and a.block.kind == b.block.kind == M.HOST
    assert a.host_ptr is not None and not mem._blocks[M.SIGNAL] and mem._signal_type is None
    assert mem.allocated - before == sum(blk.bytes for blk in mem._blocks[M.HOST][blocks_before:])
    err = capfd.readouterr().err
    assert err.count("small pinned allocations stay in system memory") == 1, err
    dev.free(a)
    dev.free(b)
