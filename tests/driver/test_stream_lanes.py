"""What a host operation on a stream waits for, and which device work a stream's work follows,
with a backend that keeps a queue per CUDA stream (a lane: the Vulkan backend's use_lane).

CUDA's rules (driver/stream.py): a stream's host operation follows the stream's own work and,
for the legacy default stream, every blocking stream's (and a blocking stream's, the legacy
stream's); CU_STREAM_NON_BLOCKING streams take no part. A host operation on one non-blocking
stream must never wait for another's kernels (issue 7: a kernel spinning on a flag that the
host sets after that operation deadlocked). The backend here records what the driver asks.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from cuport.driver import stream
from cuport.driver.consts import K


class LaneRecorder:
    """The lane calls of a backend, recorded: use_lane, drain and pending with their lanes."""

    def __init__(self) -> None:
        self.uses: list = []
        self.drains: list = []
        self.pendings: list = []

    def use_lane(self, key, after=()) -> None:
        self.uses.append(None if key is None else (key, tuple(after)))

    def drain(self, lanes=None):
        self.drains.append(None if lanes is None else tuple(lanes))
        return None

    def pending(self, lanes=None) -> bool:
        self.pendings.append(None if lanes is None else tuple(lanes))
        return False


@pytest.fixture
def ctx():
    rec = LaneRecorder()
    device = SimpleNamespace(loaded_backend=lambda: rec, backend=lambda: rec)
    c = SimpleNamespace(lock=threading.Lock(), streams=None, sticky_error=None, device=device,
                        active=True)
    c.rec = rec
    yield c
    for s in stream.streams_of(c).all():
        s.close()


def _streams(ctx):
    """Two non-blocking streams, a blocking one and the legacy stream."""
    cs = stream.streams_of(ctx)
    a, b = (stream.Stream(ctx, K.CU_STREAM_NON_BLOCKING, 0) for _ in range(2))
    c = stream.Stream(ctx, 0, 0)
    cs.created.update((a, b, c))
    return a, b, c, cs.legacy


def test_a_host_operation_waits_only_for_its_streams_lanes(ctx):
    a, b, c, legacy = _streams(ctx)
    rec = ctx.rec
    for s, lanes in ((b, (b.lane,)), (a, (a.lane,)), (c, (c.lane, 0)), (legacy, (0, c.lane))):
        rec.drains.clear()
        stream.submit(s, lambda: None, "cuLaunchHostFunc").done.wait(10)
        assert rec.drains == [lanes], s.kind
    assert legacy.lane == 0 and len({a.lane, b.lane, c.lane, 0}) == 4


def test_device_work_goes_to_its_streams_lane_after_its_implicit_peers(ctx):
    a, b, c, legacy = _streams(ctx)
    rec = ctx.rec
    for s, after in ((a, ()), (c, (0,)), (legacy, (c.lane,))):
        rec.uses.clear()
        seen: list = []
        assert stream.submit_device(s, lambda x=seen: x.append(rec.uses[-1]), "cuLaunchKernel") is None
        assert seen == [(s.lane, after)] and rec.uses[-1] is None  # (selected, then cleared)


def test_synchronize_query_and_settled_ask_only_for_the_streams_lanes(ctx):
    a, b, c, legacy = _streams(ctx)
    rec = ctx.rec
    b.synchronize()
    c.synchronize()  # (its work already follows the legacy stream's on the device)
    legacy.synchronize()  # (and the blocking streams', as cudaDeviceSynchronize's)
    assert rec.drains == [(b.lane,), (c.lane,), (0, c.lane)]
    rec.drains.clear()
    assert stream.caught_up(b) and stream.settled(legacy)
    assert rec.pendings == [(b.lane,), (0, c.lane)]
    assert rec.drains == [(b.lane,), (0, c.lane)]
