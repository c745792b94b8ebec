"""The Vulkan backend's lanes: a runtime stream (timeline semaphore, own submissions) per CUDA
stream, so that one stream's kernel never holds back another stream's work or a host
operation on it (issue 7). The driver names the lane and what it follows (driver/stream.py
use_lane; tests/driver/test_stream_lanes.py checks those rules); here: the backend keeps lanes
apart, orders a lane after the ones named, and waits only for the lanes asked about.

lavapipe runs every submission on its one queue in order, and ends a shader loop after 65535
passes, so two kernels cannot run at once there: tests/programs/stream_overlap.cu checks the
concurrency itself on a GPU.
"""

from __future__ import annotations

import ctypes
import struct

import pytest
from vkrt_support import vkrt

if not vkrt.devices():
    pytest.skip("no Vulkan device", allow_module_level=True)


@pytest.fixture(scope="module")
def backend():
    from cuport.backends.vulkan.backend import get_vulkan_backend

    return get_vulkan_backend()


def _read(backend, address: int, n: int) -> bytes:
    """n bytes of device memory (through a copy: a discrete GPU's is not the host's)."""
    out = ctypes.create_string_buffer(n)
    backend.copy_dtoh(ctypes.addressof(out), address, n)
    return out.raw


def _filled(backend, key: int, address: int, value: int) -> None:
    backend.use_lane(key)
    try:
        backend.fill_queued(address, value, 16, 1)
    finally:
        backend.use_lane(None)


def test_each_cuda_stream_has_a_lane_of_its_own(backend):
    default = backend.stream
    backend.use_lane(101)
    first = backend.stream
    backend.use_lane(102)
    second = backend.stream
    backend.use_lane(0)
    legacy = backend.stream
    backend.use_lane(None)
    assert backend.stream is default is legacy
    assert len({id(default), id(first), id(second)}) == 3


def test_a_lane_follows_the_lanes_named_and_no_other(backend, monkeypatch):
    backend.use_lane(111)
    backend.use_lane(112)
    backend.use_lane(None)
    waits = []
    mine = backend._lanes[113] = backend.dev.stream()
    monkeypatch.setattr(mine, "wait_for", lambda other, ticket: waits.append(other))
    backend.use_lane(113, after=(0, 111))
    backend.use_lane(None)
    assert waits == [backend._lanes[0], backend._lanes[111]]
    backend.drop_lane(113)


def test_a_drain_waits_for_its_lanes_only(backend, monkeypatch):
    buf = backend.allocate(64)
    try:
        _filled(backend, 121, buf, 0x5A)
        _filled(backend, 122, buf + 16, 0x6B)

        def refused() -> None:
            raise AssertionError("a drain of lane 121 waited for lane 122")

        monkeypatch.setattr(backend._lanes[122], "synchronize", refused)
        assert backend.drain([121]) is None
        assert not backend.pending([121])
        assert _read(backend, buf, 16) == b"\x5a" * 16
        monkeypatch.undo()
        assert backend.drain([122]) is None
        assert _read(backend, buf + 16, 16) == b"\x6b" * 16
    finally:
        backend.drain()
        backend.drop_lane(121)
        backend.drop_lane(122)
        backend.free(buf, 64)


def test_an_events_place_is_followed_on_the_gpu(backend, monkeypatch):
    backend.use_lane(131)
    check = backend.when_reached(lambda failed: None, watch=False)
    backend.use_lane(132)
    waits = []
    monkeypatch.setattr(backend._lanes[132], "wait_for", lambda other, t: waits.append((other, t)))
    backend.follow(check)
    backend.use_lane(None)
    assert waits == [check.place] and check.place[0] is backend._lanes[131]
    backend.drop_lane(131)
    backend.drop_lane(132)


_BIG_PARAMS = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry big(.param .u64 out, .param .align 4 .b8 blob[8000])
{
    .reg .b64 %rd<3>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [blob+7996];
    st.global.u32 [%rd2], %r1;
    ret;
}
"""


def test_launches_with_big_parameters_on_two_lanes(backend):
    """Parameters too big for a launch slot share one buffer: each such launch is waited for
    on its own lane before the next may rewrite it (no wait for every lane)."""
    k = backend.load_module([_BIG_PARAMS]).kernel("big")
    out = backend.allocate(8)
    try:
        for i, key in enumerate((141, 142, 141)):
            backend.use_lane(key)
            try:
                blob = bytearray(8000)
                struct.pack_into("<I", blob, 7996, 0xC0DE00 + i)
                k.launch((1, 1, 1), (1, 1, 1), 0, struct.pack("<Q", out + 4 * (i % 2)) + blob)
            finally:
                backend.use_lane(None)
            assert backend.drain([key]) is None
            assert _read(backend, out + 4 * (i % 2), 4) == struct.pack("<I", 0xC0DE00 + i)
    finally:
        backend.drain()
        backend.drop_lane(141)
        backend.drop_lane(142)
        backend.free(out, 8)


def test_without_lanes_a_streams_drain_waits_for_the_default_lane(backend, monkeypatch):
    """CUPORT_VK_LANES=0 (and CUPORT_VK_PROFILE) put every stream's work on the default lane:
    a host operation on a stream must then drain and ask that lane, not a lane the stream
    never got (with the lanes' keys it waited for nothing)."""
    monkeypatch.setattr(backend, "lanes_on", False)
    buf = backend.allocate(16)
    try:
        _filled(backend, 151, buf, 0x3C)
        default = backend._lanes[0]
        assert 151 not in backend._lanes
        assert backend._lanes_of([151, 0]) == [default]
        with monkeypatch.context() as busy:  # the default lane has work: so has stream 151
            busy.setattr(default, "known_idle", lambda: False)
            busy.setattr(default, "is_done", lambda ticket: False)
            assert backend.pending([151])
        assert backend.drain([151]) is None
        assert _read(backend, buf, 16) == b"\x3c" * 16
    finally:
        monkeypatch.undo()
        backend.drain()
        backend.free(buf, 16)
