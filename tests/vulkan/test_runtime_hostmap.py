"""One address for host and device: host address-space reservations, shared pages mapped at a
chosen address, and the import path (VK_EXT_external_memory_host) that managed memory uses on
GPUs whose device addresses are not host pointers."""

from __future__ import annotations

import ctypes
import mmap
import struct

import numpy as np
import pytest
import vkrt_support as vs
from vkrt_support import device

from cuport.backends.vulkan.runtime import hostmap

pytestmark = pytest.mark.skipif(not hostmap.SUPPORTED, reason="Linux memfd_create needed")


def _free_range(size: int) -> int:
    """An address range that was just free (mapped and unmapped again)."""
    m = mmap.mmap(-1, size)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    m.close()
    return addr


def test_reserve_holds_a_free_range_and_refuses_a_used_one():
    size = 16 * hostmap.PAGE
    addr = _free_range(size)
    assert hostmap.reserve(addr, size)
    try:
        assert not hostmap.reserve(addr, size)  # held now: never replaced
        assert not hostmap.reserve(addr + hostmap.PAGE, hostmap.PAGE)
    finally:
        hostmap.release(addr, size)
    assert hostmap.reserve(addr, size)
    hostmap.release(addr, size)


def test_shared_pages_show_the_same_memory_at_both_addresses():
    pages = hostmap.SharedPages(3 * hostmap.PAGE + 5, 1 << 16)
    try:
        assert pages.base % (1 << 16) == 0 and pages.size % (1 << 16) == 0
        target = _free_range(pages.size)
        assert pages.alias_at(target)
        pages.close_fd()
        a = (ctypes.c_uint32 * (pages.size // 4)).from_address(pages.base)
        b = (ctypes.c_uint32 * (pages.size // 4)).from_address(target)
        a[0], a[1000] = 0x12345678, 7
        assert (b[0], b[1000]) == (0x12345678, 7)
        b[5] = 99
        assert a[5] == 99
    finally:
        pages.free()


def test_shared_pages_refuse_an_address_in_use():
    pages = hostmap.SharedPages(hostmap.PAGE, hostmap.PAGE)
    keep = mmap.mmap(-1, hostmap.PAGE)
    try:
        used = ctypes.addressof(ctypes.c_char.from_buffer(keep))
        assert not pages.alias_at(used)
        assert pages.alias is None
    finally:
        pages.free()
        keep.close()


def test_managed_memory_through_imported_shared_pages():
    """The discrete-GPU path (memfd pages imported with VK_EXT_external_memory_host, shown on the
    host at the device address), run on this device."""
    dev = device()
    if "VK_EXT_external_memory_host" not in dev.enabled_extensions:
        pytest.skip("the device lacks VK_EXT_external_memory_host")
    mem = dev.memory
    saved = mem.strategy, mem._blocks["managed"]
    mem.strategy, mem._blocks["managed"] = "alias", []
    try:
        buf = dev.alloc(1000 * 4, "managed")
        assert buf.block.pages is not None
        assert buf.host_ptr == buf.address
        host = np.frombuffer((ctypes.c_uint32 * 1000).from_address(buf.host_ptr), dtype=np.uint32)
        host[:] = np.arange(1000, dtype=np.uint32) * 3
        s = dev.stream()
        pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 12)
        s.dispatch(pipe, (16, 1, 1), struct.pack("<QI", buf.address, 1000))
        s.synchronize()
        assert np.array_equal(host, np.arange(1000, dtype=np.uint32) * 3 + 1)
        out = np.zeros(1000, dtype=np.uint32)
        s.copy_to_host(out, buf.address)
        assert np.array_equal(out, host)
        dev.free(buf)
    finally:
        for blk in mem._blocks["managed"]:
            mem._destroy_block(blk)
        mem.strategy, mem._blocks["managed"] = saved
