"""Cooperative launches on the Vulkan backend (backends/vulkan/cooperative.py) and the driver
quirks that grid-wide waits meet on lavapipe (quirks.py, loops.py, lower_order.py): its loop
budget must never give wrong results, only the right ones or a launch failure naming the loop.

The kernels are nvcc's (cooperative.cu, built with -ptx at test time) or, for the driver
probes, a few lines of PTX; results are checked against numpy.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

from cuport.backends.base import BackendError
from cuport.backends.vulkan import cooperative

HERE = Path(__file__).resolve().parent


def _backend():
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return get_vulkan_backend()


def _lavapipe(be) -> None:
    if be.info.driver_id != "MESA_LLVMPIPE":
        pytest.skip(f"{be.info.name} is not lavapipe")


def _to_device(be, a: np.ndarray) -> int:
    addr = be.allocate(max(a.nbytes, 4))
    be.copy_htod(addr, a.ctypes.data, a.nbytes)
    return addr


def _from_device(be, addr: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    be.copy_dtoh(out.ctypes.data, addr, out.nbytes)
    return out


@pytest.fixture(scope="module")
def coop_ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "cooperative.cu", "sm_80")


# ---------------------------------------------------------------- residency


def test_lavapipe_threads_follow_mesas_rule(monkeypatch):
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.delenv("LP_NUM_THREADS", raising=False)
    assert cooperative.lavapipe_threads() == (min(cpus, 32) if cpus > 1 else 1)
    for value, want in (("3", 3), ("0", 1), ("40", 32), ("0x10", 16), ("junk", min(cpus, 32) if cpus > 1 else 1)):
        monkeypatch.setenv("LP_NUM_THREADS", value)
        assert cooperative.lavapipe_threads() == want, value


def _info(**kw):
    limits = types.SimpleNamespace(max_workgroup_invocations=1024, max_shared_memory=48 * 1024)
    base = dict(driver_id="NVIDIA_PROPRIETARY", multiprocessors=132, warps_per_multiprocessor=64,
                limits=limits, name="NVIDIA H200")
    base.update(kw)
    return types.SimpleNamespace(**base)


@pytest.mark.parametrize("threads, shared, want", [
    (256, 0, 1),  # registers: 255 a thread at most -> 8 warps of 256-register granules
    (128, 0, 2),
    (32, 0, 8),
    (1024, 0, 1),  # 64 registers a thread at most
    (64, 20 * 1024, 2),  # shared memory: 48 KiB (all Vulkan says) / 20 KiB
    (1025, 0, 0),
])
def test_nvidia_blocks_per_multiprocessor(threads, shared, want):
    assert cooperative.blocks_per_multiprocessor(_info(), threads, shared) == want


def test_unknown_devices_refuse_cooperative_launches():
    info = _info(driver_id="AMD_PROPRIETARY", warps_per_multiprocessor=None)
    assert cooperative.multiprocessors(info) is None
    assert cooperative.attributes(info)["COOPERATIVE_LAUNCH"] == 0


def test_device_attributes_say_what_runs_at_once():
    be = _backend()
    from cuport.backends.vulkan.attributes import device_attributes

    a = device_attributes(be.info)
    if be.info.driver_id == "MESA_LLVMPIPE":
        assert a["COOPERATIVE_LAUNCH"] == 1
        assert a["MULTIPROCESSOR_COUNT"] == cooperative.lavapipe_threads()
        assert a["MAX_BLOCKS_PER_MULTIPROCESSOR"] == 1
    else:
        assert a["COOPERATIVE_LAUNCH"] == int(cooperative.kind(be.info) is not None)


#: every block's thread 0 arrives and waits until all `want` blocks have: finishes only
#: when the blocks run at the same time (else the waits spend lavapipe's loop budget and
#: the launch fails)
_ALL_WAIT = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry all_wait(.param .u64 counter, .param .u32 want)
{
    .reg .pred %p<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [counter];
    ld.param.u32 %r1, [want];
    mov.u32 %r2, %tid.x;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra DONE;
    atom.global.add.u32 %r3, [%rd1], 1;
WAIT:
    ld.acquire.gpu.global.u32 %r4, [%rd1];
    setp.lt.u32 %p2, %r4, %r1;
    @%p2 bra WAIT;
DONE:
    ret;
}
"""

_RESIDENCY_SCRIPT = """
import struct, sys
import numpy as np
from cuport.backends.base import BackendError
from cuport.backends.vulkan.backend import get_vulkan_backend
be = get_vulkan_backend()
k = be.load_module([sys.stdin.read()]).kernel("all_wait")
for g in map(int, sys.argv[1:]):
    c = be.allocate(4)
    try:
        k.launch((g, 1, 1), (64, 1, 1), 0, struct.pack("<QI", c, g))
        failed = be.drain()  # launches are asynchronous: their failure comes with the wait
        if failed is not None:
            raise failed[1]
        print(g, "together")
    except BackendError as e:
        print(g, "apart" if "loops ran longer" in e.message else e.message)
"""


@pytest.mark.parametrize("threads", ["3", "0"])
def test_lavapipe_runs_as_many_workgroups_at_once_as_it_has_threads(threads):
    """Mesa's rule, measured: LP_NUM_THREADS workgroups wait for each other, one more cannot
    (0 threads: the dispatching thread runs them one at a time)."""
    _lavapipe(_backend())
    n = max(int(threads), 1)
    env = dict(os.environ, LP_NUM_THREADS=threads, CUPORT_CACHE="0")
    r = subprocess.run([sys.executable, "-c", _RESIDENCY_SCRIPT, str(n), str(n + 1)], input=_ALL_WAIT,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.stdout.split("\n")[:2] == [f"{n} together", f"{n + 1} apart"], r.stdout + r.stderr


def test_cooperative_exchange_through_grid_sync(coop_ptx):
    """Blocks publish values, grid.sync(), and read all the others' (three rounds), through
    a generic pointer to shared memory and the cooperative groups' grid workspace."""
    be = _backend()
    k = be.load_module([coop_ptx]).kernel("exchange")
    per_sm = k.blocks_per_multiprocessor(64, 0)
    blocks = per_sm * cooperative.multiprocessors(be.info)
    rounds = 3
    slots = _to_device(be, np.zeros(blocks, np.int32))
    out = np.zeros(rounds * blocks, np.int64)
    dout = _to_device(be, out)
    k.launch((blocks, 1, 1), (64, 1, 1), 0, struct.pack("<QQi", slots, dout, rounds), cooperative=True)
    got = _from_device(be, dout, out).reshape(rounds, blocks)
    want = [sum(b + 1 + r for b in range(blocks)) for r in range(rounds)]
    assert (got == np.array(want)[:, None]).all(), got
    # a grid that cannot all run at once is refused, as NVIDIA's driver refuses it
    with pytest.raises(BackendError) as e:
        k.launch((blocks + 1, 1, 1), (64, 1, 1), 0, struct.pack("<QQi", slots, dout, rounds),
                 cooperative=True)
    assert e.value.code == 720  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE


def test_flag_chain_between_resident_blocks(coop_ptx):
    """Thread 0 of each block spins on a volatile flag of the block before (code the rest of
    the block skips: lavapipe's memory barriers must not be used there)."""
    be = _backend()
    k = be.load_module([coop_ptx]).kernel("chain")
    blocks = cooperative.multiprocessors(be.info) or 1
    flags = _to_device(be, np.zeros(blocks, np.int32))
    order = np.zeros(blocks + 1, np.int32)
    dorder = _to_device(be, order)
    k.launch((blocks, 1, 1), (32, 1, 1), 0, struct.pack("<QQ", flags, dorder))
    got = _from_device(be, dorder, order)
    assert got.tolist() == list(range(blocks)) + [blocks]


# ---------------------------------------------------------------- lavapipe's quirks

_COUNT = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry count(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
LOOP:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def _wait(be) -> None:
    failed = be.drain()
    if failed is not None:
        raise failed[1]


def test_probe_finds_lavapipes_quirks():
    be = _backend()
    _lavapipe(be)
    assert be.caps.loop_iteration_limit == 65535
    assert be.caps.divergent_memory_barriers is False


def test_a_loop_longer_than_the_drivers_budget_fails_the_launch():
    be = _backend()
    if not be.caps.loop_iteration_limit:
        pytest.skip(f"{be.info.name} does not limit loops")
    k = be.load_module([_COUNT]).kernel("count")
    out = be.allocate(4)
    k.launch((1, 1, 1), (1, 1, 1), 0, struct.pack("<QI", out, 60000))
    assert _from_device(be, out, np.zeros(1, np.uint32))[0] == 60000
    with pytest.raises(BackendError) as e:
        k.launch((1, 1, 1), (1, 1, 1), 0, struct.pack("<QI", out, 100000))
        _wait(be)  # launches are asynchronous: the failure comes with the wait
    assert e.value.code == 719 and "loops ran longer" in e.value.message  # CUDA_ERROR_LAUNCH_FAILED
    assert "PTX line 16" in e.value.message


_DIVERGENT_SPIN = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra DONE;
    mov.u32 %r3, 0;
LOOP:
    LOAD
    setp.eq.u32 %p2, %r4, 12345;
    @%p2 bra STORE;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p3, %r3, %r1;
    @%p3 bra LOOP;
STORE:
    st.global.u32 [%rd1], %r3;
DONE:
    ret;
}
"""


@pytest.mark.parametrize("load", [
    "ld.acquire.gpu.global.u32 %r4, [%rd1+4];",
    "ld.volatile.global.u32 %r4, [%rd1+4];",
    "ld.relaxed.gpu.global.u32 %r4, [%rd1+4]; fence.acq_rel.gpu;",
    "atom.acquire.gpu.global.or.b32 %r4, [%rd1+4], 0;",
])
def test_ordered_accesses_in_a_loop_one_thread_runs(load):
    """The loop of thread 0 alone runs all its iterations and its store happens (lavapipe
    loses both when such accesses keep their memory semantics)."""
    be = _backend()
    k = be.load_module([_DIVERGENT_SPIN.replace("LOAD", load)]).kernel("spin")
    out = be.allocate(8)
    k.launch((1, 1, 1), (64, 1, 1), 0, struct.pack("<QI", out, 1000))
    assert _from_device(be, out, np.zeros(1, np.uint32))[0] == 1000


def _back_edge_lines(ptx: str, kernel: str) -> set[int]:
    """The PTX lines of `kernel`'s branches to a label above them (its loops' back edges)."""
    lines = ptx.splitlines()
    start = next(i for i, text in enumerate(lines) if f".entry {kernel}(" in text)
    labels: set[str] = set()
    out: set[int] = set()
    for i in range(start, len(lines)):
        text = lines[i].strip()
        if text == "}":
            break
        if text.endswith(":"):
            labels.add(text[:-1])
        m = re.search(r"\bbra(?:\.uni)?\s+(\S+);", text)
        if m and m.group(1) in labels:
            out.add(i + 1)
    return out


def _loop_limit(e: BackendError) -> int:
    """The PTX line of a launch failure that says the driver cut a loop short."""
    assert e.code == 719 and "loops ran longer" in e.message, e.message  # CUDA_ERROR_LAUNCH_FAILED
    return int(re.search(r"PTX line (\d+)", e.message).group(1))


@pytest.mark.parametrize("nrows", [20000, 70000])
def test_grid_sync_rows_past_the_loop_budget(coop_ptx, nrows):
    """One block, a grid.sync() after each row (nvcc's inline form). The sync's spin loop
    ends at once, yet lavapipe spends a loop pass on it each time, which cuport's count of
    back edges missed: from 32768 rows the driver ended the row loop early and the thread
    went on to the trap after the loop (reported as a trap, the rows wrong). Under the
    budget the rows are right; past it (at least one pass a row) the launch fails naming
    the row loop where the driver has a budget, never with wrong rows."""
    be = _backend()
    k = be.load_module([coop_ptx]).kernel("rows")
    ncols = 32
    m = np.zeros(nrows * ncols, np.int32)
    dm = _to_device(be, m)
    over = be.caps.loop_iteration_limit and nrows > be.caps.loop_iteration_limit
    try:
        k.launch((1, 1, 1), (ncols, 1, 1), 0, struct.pack("<Qii", dm, nrows, ncols), cooperative=True)
        _wait(be)
    except BackendError as e:
        assert over, e.message
        assert _loop_limit(e) in _back_edge_lines(coop_ptx, "rows"), e.message
        return
    assert not over, "the launch passed the driver's loop budget without failing"
    got = _from_device(be, dm, m).reshape(nrows, ncols)
    assert (got == np.arange(nrows, dtype=np.int32)[:, None]).all()


#: an outer loop of n trips around INNER; out[2t] = the outer count, out[2t+1] the inner one
_PASSES = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry passes(.param .u64 out, .param .u32 n, .param .u32 m)
{
    .reg .pred %p<4>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r9, [m];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
    mov.u32 %r6, 0;
OUTER:
INNER
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, %r1;
    @%p1 bra OUTER;
    mul.wide.u32 %rd2, %r2, 8;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    st.global.u32 [%rd3+4], %r6;
    ret;
}
"""
_COUNTED = """
    mov.u32 %r4, 0;
INNER:
    add.u32 %r6, %r6, 1;
    add.u32 %r4, %r4, 1;
    setp.lt.u32 %p2, %r4, %r7;
    @%p2 bra INNER;
"""
#: shape -> (the inner loop with its trip count in %r7, inner trips of thread t per outer
#: trip when m = 1, an outer count under the driver's budget, one past it)
_INNER_SHAPES = {
    # one trip (no back edge) by every thread: lavapipe spends 2 passes an outer trip
    "exits_at_once": ("mov.u32 %r7, %r9;" + _COUNTED, lambda t: 1, 30000, 40000),
    # behind a branch no thread takes (m != 12345): still 2 passes an outer trip
    "no_thread_enters": ("setp.ne.u32 %p3, %r9, 12345;\n@%p3 bra SKIP;\nmov.u32 %r7, %r9;"
                         + _COUNTED + "SKIP:", lambda t: 0, 30000, 40000),
    # thread t makes t + 1 trips: the 8 threads run together pay the longest, 9 an outer trip
    "unequal_threads": ("add.u32 %r7, %r9, %r2;" + _COUNTED, lambda t: t + 1, 7000, 8000),
}


@pytest.mark.parametrize("shape", sorted(_INNER_SHAPES))
@pytest.mark.parametrize("past", [False, True])
def test_loop_passes_the_driver_counts(shape, past):
    """What lavapipe's budget counts (loops.py), with 8 threads (one of its groups): the
    inner loop's leaving pass, a loop no thread enters, the longest thread's trips. cuport
    counted each thread's back edges, so these launches, past the budget, returned short
    counts without a failure; under it they must give the full counts."""
    be = _backend()
    inner, trips, under, over = _INNER_SHAPES[shape]
    n = over if past else under
    ptx = _PASSES.replace("INNER", inner)
    k = be.load_module([ptx]).kernel("passes")
    out = be.allocate(64)
    try:
        k.launch((1, 1, 1), (8, 1, 1), 0, struct.pack("<QII", out, n, 1))
        _wait(be)
    except BackendError as e:
        assert past and be.caps.loop_iteration_limit, e.message
        assert _loop_limit(e) in _back_edge_lines(ptx, "passes"), e.message
        return
    assert not (past and be.caps.loop_iteration_limit), "the launch passed the driver's budget"
    got = _from_device(be, out, np.zeros(16, np.uint32)).reshape(8, 2)
    assert got.tolist() == [[n, n * trips(t)] for t in range(8)]
