"""Pipelines and dispatch: kernels reach memory through device addresses in push constants.

Shaders are GLSL (GL_EXT_buffer_reference) compiled by glslangValidator at test time;
results are checked against numpy.
"""

from __future__ import annotations

import os
import stat
import struct
import time

import numpy as np
import pytest
import vkrt_support as vs
from vkrt_support import device, vkrt


@pytest.fixture(scope="module")
def dev():
    return device()


def _host_array(buf, dtype, n):
    ct = np.ctypeslib.as_ctypes_type(dtype) * n
    return np.frombuffer(ct.from_address(buf.host_ptr), dtype=dtype)


def test_vector_add_through_device_addresses(dev):
    n = 100_003
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    bufs = [dev.alloc(n * 4) for _ in range(3)]
    try:
        s = dev.stream()
        s.copy_to_device(bufs[0].address, a)
        s.copy_to_device(bufs[1].address, b)
        pipe = dev.pipeline(vs.glsl(vs.VADD), "main", (64, 1, 1), 28)
        push = struct.pack("<QQQI", bufs[0].address, bufs[1].address, bufs[2].address, n)
        s.dispatch(pipe, ((n + 63) // 64, 1, 1), push)
        c = np.empty(n, dtype=np.float32)
        s.copy_to_host(c, bufs[2].address)
        assert np.array_equal(c, a + b)
    finally:
        for x in bufs:
            dev.free(x)


def test_pointers_stored_in_device_memory_can_be_chased(dev):
    """A linked list whose next pointers are CUdeviceptr values written by the host."""
    count = 500
    nodes = dev.alloc(count * 16)
    out = dev.alloc(8)
    try:
        order = np.random.default_rng(3).permutation(count)
        blob = bytearray(count * 16)
        values = np.arange(1, count + 1, dtype=np.uint32) * 7
        for k, slot in enumerate(order):
            nxt = nodes.address + 16 * order[k + 1] if k + 1 < count else 0
            struct.pack_into("<QI", blob, 16 * slot, nxt, int(values[k]))
        s = dev.stream()
        s.copy_to_device(nodes.address, bytes(blob))
        pipe = dev.pipeline(vs.glsl(vs.CHASE), "main", (1, 1, 1), 16)
        s.dispatch(pipe, (1, 1, 1), struct.pack("<QQ", nodes.address + 16 * order[0], out.address))
        got = np.zeros(2, dtype=np.uint32)
        s.copy_to_host(got, out.address)
        want = int(np.sum(values.astype(np.uint64) * np.arange(1, count + 1))) & 0xFFFFFFFF
        assert got.tolist() == [want, count]
    finally:
        dev.free(nodes)
        dev.free(out)


@pytest.mark.parametrize("eager,batch,submitter", [(True, 256, False), (True, 256, True),
                                                    (True, 7, True), (False, 10_000, False),
                                                    (False, 7, False)])
def test_a_stream_of_dependent_launches_runs_in_order(dev, eager, batch, submitter):
    n = 4096
    buf = dev.alloc(n * 4)
    try:
        s = dev.stream(eager=eager, batch=batch, submitter=submitter)
        s.fill(buf.address, 0, n, 4)
        pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 16)
        push = struct.pack("<QI", buf.address, n)
        for _ in range(200):
            s.dispatch(pipe, (n // 64, 1, 1), push)
        if not eager:
            assert s.submitted == 200 // batch  # launches were batched, not waited for
        out = np.empty(n, dtype=np.uint32)
        s.copy_to_host(out, buf.address)
        assert (out == 200).all()
    finally:
        dev.free(buf)


def test_the_submitter_hands_recorded_work_over_without_another_call(dev):
    """Launches recorded on a stream with a submitter thread run although the host makes no
    further call (no wait, no submit): the thread submits them, in order."""
    n = 4096
    buf = dev.alloc(n * 4, "host")
    try:
        s = dev.stream(submitter=True)
        assert s.threaded
        counts = _host_array(buf, np.uint32, n)
        counts[:] = 0
        pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 16)
        push = struct.pack("<QI", buf.address, n)
        for _ in range(50):
            s.dispatch(pipe, (n // 64, 1, 1), push)
        deadline = time.monotonic() + 60
        while s.completed() < s.mark() and time.monotonic() < deadline:
            time.sleep(0.01)  # (completed() only reads the semaphore: it submits nothing)
        assert s.completed() == s.mark() == s.submitted
        assert (counts == 50).all()
        s.close()
    finally:
        dev.free(buf)


def test_a_dropped_stream_ends_its_submitter(dev):
    import gc

    buf = dev.alloc(64 * 4)
    try:
        s = dev.stream(submitter=True)
        pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 16)
        s.dispatch(pipe, (1, 1, 1), struct.pack("<QI", buf.address, 64))  # (starts the thread)
        thread = s._submitter
        s.synchronize()
        del s
        gc.collect()
        thread.join(10)
        assert not thread.is_alive()
    finally:
        dev.free(buf)


def test_grids_beyond_the_workgroup_count_limit_are_split(dev):
    limit = dev.info.limits.max_workgroup_count[0]
    if limit > 1 << 20:
        pytest.skip(f"a grid over {limit} workgroups in x is too large to test")
    groups = limit + 4465
    buf = dev.alloc(groups * 4)
    try:
        s = dev.stream()
        pipe = dev.pipeline(vs.glsl(vs.WGID), "main", (1, 1, 1), 8)
        s.fill(buf.address, 0, groups, 4)
        s.dispatch(pipe, (groups, 1, 1), struct.pack("<Q", buf.address))
        out = np.empty(groups, dtype=np.uint32)
        s.copy_to_host(out, buf.address)
        assert np.array_equal(out, np.arange(1, groups + 1, dtype=np.uint32))
    finally:
        dev.free(buf)


def test_required_subgroup_size(dev):
    info = dev.info
    if not (info.required_subgroup_size_compute and dev.enabled_features.get("subgroupSizeControl")):
        pytest.skip("the device cannot require a subgroup size")
    n = 256
    code = vs.glsl(vs.SUBGROUP)
    buf = dev.alloc(2 * n * 4)
    try:
        size = info.min_subgroup_size
        while size <= info.max_subgroup_size:
            pipe = dev.pipeline(code, "main", (64, 1, 1), 12, required_subgroup_size=size,
                                full_subgroups=True)
            assert pipe.required_subgroup_size == size
            s = dev.stream()
            s.dispatch(pipe, (n // 64, 1, 1), struct.pack("<QI", buf.address, n))
            out = np.empty(2 * n, dtype=np.uint32)
            s.copy_to_host(out, buf.address)
            assert (out[:n] == size).all()
            assert np.array_equal(out[n:], np.arange(n, dtype=np.uint32) % size)
            size *= 2
    finally:
        dev.free(buf)
    with pytest.raises(vkrt.Unsupported, match="subgroup size"):
        dev.pipeline(code, "main", (64, 1, 1), 12, required_subgroup_size=info.max_subgroup_size * 2)


def test_pipelines_are_shared_and_checked(dev):
    code = vs.glsl(vs.INCR)
    p1 = dev.pipeline(code, "main", (64, 1, 1), 12)
    p2 = dev.pipeline(bytearray(code), "main", (64, 1, 1), 12)
    assert p1 is p2 and p1.push_size == 12
    assert dev.pipeline(code, "main", (64, 1, 1), 16) is not p1
    with pytest.raises(ValueError, match="SPIR-V"):
        dev.pipeline(b"\0" * 64, "main", (64, 1, 1), 12)
    lim = dev.info.limits
    with pytest.raises(vkrt.Unsupported, match="push constants"):
        dev.pipeline(code, "main", (64, 1, 1), lim.max_push_constants + 4)
    with pytest.raises(vkrt.Unsupported, match="workgroup size"):
        dev.pipeline(code, "main", (lim.max_workgroup_invocations * 2, 1, 1), 12)
    with pytest.raises(ValueError, match="push constants"):
        dev.stream().dispatch(p1, (1, 1, 1), bytes(16))


def test_pipeline_cache_is_written_privately_and_only_private_files_are_read(dev, tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(tmp_path / "c"))
    from cuport.backends.vulkan.runtime.pipeline import Pipelines

    pl = Pipelines(dev)
    pl.get(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
    pl.save()
    path = pl._path
    assert path is not None and path.exists()
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    data = path.read_bytes()
    pl.close()
    pl2 = Pipelines(dev)
    assert pl2._load() == data
    os.chmod(path, 0o666)  # another user could have written it now: never read
    assert pl2._load() == b""
    os.chmod(path, 0o600)
    os.chmod(path.parent, 0o777)
    assert pl2._load() == b""
    os.chmod(path.parent, 0o700)
    path.write_bytes(b"\x20\0\0\0\x01\0\0\0" + bytes(24))  # another device's header
    assert pl2._load() == b""
    pl2.close()


def test_streams_wait_for_each_other(dev):
    n, iters = 4096, 2000
    a = dev.alloc(n * 4)
    b = dev.alloc(n * 4)
    try:
        s1, s2 = dev.stream(), dev.stream()
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        s1.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", a.address, n, iters))
        t = s1.mark()
        s2.wait_for(s1, t)
        s2.copy(b.address, a.address, n * 4)
        out = np.empty(n, dtype=np.uint32)
        s2.copy_to_host(out, b.address)
        assert np.array_equal(out, vs.lcg(n, iters))
        assert s1.is_done(t)
    finally:
        dev.synchronize()
        dev.free(a)
        dev.free(b)


def test_tickets(dev):
    s = dev.stream(eager=False)
    assert s.mark() == 0 and s.is_done(0)
    buf = dev.alloc(4096 * 4)
    try:
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        s.dispatch(spin, (64, 1, 1), struct.pack("<QII", buf.address, 4096, 100))
        t = s.mark()
        assert t == 1 and s.submitted == 0  # recorded, not yet submitted
        s.wait(t)
        assert s.submitted == 1 and s.is_done(t) and s.idle()
        with pytest.raises(ValueError, match="never issued"):
            s.wait(5)
    finally:
        dev.free(buf)


def test_timestamps_measure_gpu_time(dev):
    if dev.info.limits.timestamp_valid_bits == 0:
        pytest.skip("no timestamps on the compute queue")
    n = 1 << 16
    buf = dev.alloc(n * 4)
    try:
        s = dev.stream()
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        t0 = s.timestamp()
        s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", buf.address, n, 10))
        t1 = s.timestamp()
        s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", buf.address, n, 2000))
        t2 = s.timestamp()
        short, long = vkrt.elapsed_ms(t0, t1), vkrt.elapsed_ms(t1, t2)
        assert 0 <= short < long
    finally:
        dev.free(buf)


def test_device_synchronize_waits_for_every_stream(dev):
    n = 4096
    bufs = [dev.alloc(n * 4) for _ in range(3)]
    try:
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        streams = [dev.stream(eager=False) for _ in bufs]
        for s, b in zip(streams, bufs, strict=True):
            s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", b.address, n, 300))
        dev.synchronize()
        for s in streams:
            assert s.idle()
        out = np.empty(n, dtype=np.uint32)
        streams[0].copy_to_host(out, bufs[2].address)
        assert np.array_equal(out, vs.lcg(n, 300))
    finally:
        for b in bufs:
            dev.free(b)


def test_validation_layer_saw_nothing_wrong(dev):
    assert vs.validation_messages() == []


def test_freed_memory_is_not_reused_while_queued_work_may_use_it(dev):
    s = dev.stream(eager=False)
    n = 4096
    a = dev.alloc(n * 4)
    out = dev.alloc(n * 4)
    spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
    s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", a.address, n, 50))
    s.copy(out.address, a.address, n * 4)
    dev.free(a)  # queued work still writes and reads it
    with pytest.raises(vkrt.BadAddress):
        dev.find(a.address)
    b = dev.alloc(n * 4)
    assert b.address != a.address
    got = np.empty(n, dtype=np.uint32)
    s.copy_to_host(got, out.address)  # runs the queued work
    assert np.array_equal(got, vs.lcg(n, 50))
    c = dev.alloc(n * 4)
    assert c.address == a.address  # released now that the work is done
    for x in (b, c, out):
        dev.free(x)
    s.close()


def test_a_destroyed_stream_finishes_its_work_and_keeps_its_timestamps(dev):
    n = 4096
    buf = dev.alloc(n * 4)
    try:
        s = dev.stream(eager=False)
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        has_ts = dev.info.limits.timestamp_valid_bits > 0
        t0 = s.timestamp() if has_ts else None
        s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", buf.address, n, 77))
        t1 = s.timestamp() if has_ts else None
        s.close()  # returns at once; the work runs
        with pytest.raises(vkrt.VulkanError, match="destroyed"):
            s.dispatch(spin, (1, 1, 1), struct.pack("<QII", buf.address, n, 1))
        dev.synchronize()
        assert s.destroyed
        got = np.empty(n, dtype=np.uint32)
        dev.stream().copy_to_host(got, buf.address)
        assert np.array_equal(got, vs.lcg(n, 77))
        if has_ts:
            assert vkrt.elapsed_ms(t0, t1) >= 0
    finally:
        dev.free(buf)


def test_a_destroyed_pipeline_still_runs_its_queued_launches(dev):
    n = 256
    buf = dev.alloc(n * 4)
    try:
        s = dev.stream(eager=False)
        code = vs.glsl(vs.SPIN.replace("x * 1664525u", "x * 1664525u + 0u"))  # a pipeline of its own
        spin = dev.pipeline(code, "main", (64, 1, 1), 16)
        s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", buf.address, n, 9))
        dev.destroy_pipeline(spin)
        assert dev.pipeline(code, "main", (64, 1, 1), 16) is not spin
        got = np.empty(n, dtype=np.uint32)
        s.copy_to_host(got, buf.address)
        assert np.array_equal(got, vs.lcg(n, 9))
        s.close()
    finally:
        dev.free(buf)


def test_grids_split_in_y_see_the_whole_grid(dev):
    limit = dev.info.limits.max_workgroup_count[1]
    gx, gy = 3, limit + 2
    buf = dev.alloc(gx * gy * 4)
    try:
        s = dev.stream()
        pipe = dev.pipeline(vs.glsl(vs.WGID2), "main", (1, 1, 1), 12)
        s.fill(buf.address, 0, gx * gy, 4)
        s.dispatch(pipe, (gx, gy, 1), struct.pack("<QI", buf.address, gx))
        out = np.empty(gx * gy, dtype=np.uint32)
        s.copy_to_host(out, buf.address)
        assert np.array_equal(out, np.arange(1, gx * gy + 1, dtype=np.uint32))
    finally:
        dev.free(buf)


def test_streams_used_from_several_threads(dev):
    import threading

    n = 1024
    pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 12)
    bufs = [dev.alloc(n * 4) for _ in range(4)]
    shared = dev.stream()
    errors = []

    def work(buf, own):
        try:
            s = dev.stream() if own else shared
            for _ in range(50):
                s.dispatch(pipe, (n // 64, 1, 1), struct.pack("<QI", buf.address, n))
            s.synchronize()
        except Exception as e:  # reported below
            errors.append(e)

    try:
        for b in bufs:
            dev.stream().fill(b.address, 0, n, 4)
        threads = [threading.Thread(target=work, args=(b, i % 2 == 0)) for i, b in enumerate(bufs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        dev.synchronize()
        for b in bufs:
            out = np.empty(n, dtype=np.uint32)
            shared.copy_to_host(out, b.address)
            assert (out == 50).all()
    finally:
        for b in bufs:
            dev.free(b)


def test_host_functions_run_in_stream_order(dev):
    """cuLaunchHostFunc: the function sees the work before it, the work after it waits for it."""
    n = 1024
    buf = dev.alloc(n * 4)
    pinned = dev.alloc(n * 4, "host")
    try:
        host = _host_array(pinned, np.uint32, n)
        host[:] = 0
        s = dev.stream(eager=False)
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        incr = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 12)
        s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", pinned.address, n, 500))
        seen = {}

        def callback():
            seen["before"] = host.copy()  # the kernel before has run
            import time

            time.sleep(0.05)
            host[:] = 1000  # the kernel after must see this

        s.launch_host_func(callback)
        t = s.mark()
        s.dispatch(incr, (n // 64, 1, 1), struct.pack("<QI", pinned.address, n))
        s.synchronize()
        assert np.array_equal(seen["before"], vs.lcg(n, 500))
        assert (host == 1001).all()
        assert s.is_done(t)
        s.close()
    finally:
        dev.free(buf)
        dev.free(pinned)


def test_a_stream_dropped_without_close_is_released_after_its_work(dev):
    import gc

    n = 4096
    buf = dev.alloc(n * 4)
    try:
        s = dev.stream(submitter=False)
        spin = dev.pipeline(vs.glsl(vs.SPIN), "main", (64, 1, 1), 16)
        s.dispatch(spin, (n // 64, 1, 1), struct.pack("<QII", buf.address, n, 300))
        assert s.submitted == 1  # submitted at once (eager, on this thread)
        h = s._h
        del s
        gc.collect()
        dev.free(dev.alloc(16))  # allocations collect what was dropped
        dev.synchronize()
        assert h.released and not dev._dropped_live
        got = np.empty(n, dtype=np.uint32)
        other = dev.stream()
        other.copy_to_host(got, buf.address)
        assert np.array_equal(got, vs.lcg(n, 300))
        other.close()
    finally:
        dev.free(buf)
