"""The project's own CUDA kernels, compiled with `nvcc -ptx`, run through cuport's Python API.

Each test checks real outputs against a NumPy reference: these are the kernels of the
compiler issue's checklist (barriers inside loops, shuffles under divergence, recursion...).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cuport

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from device_limits import device_limit, devices  # noqa: E402 (tests/device_limits.py: what a device may refuse)

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is needed to build the kernels")


ON_GPU = os.environ.get("CUPORT_KERNEL_TESTS_ON") == "cupy"  # confirm the references on a real GPU


class _Skipping:
    """A module whose kernels skip the test when the device refuses what it cannot do."""

    def __init__(self, m, device: str) -> None:
        self._m = m
        self.device = device
        # lavapipe and other CPU Vulkan drivers run kernels inside this process
        self.in_process = device != "cpu" and m._backend.info.device_type == "cpu"

    def kernel(self, name: str):
        k = self._m.kernel(name)

        def run(*a, **kw):
            try:
                return k(*a, **kw)
            except cuport.BackendError as e:
                if device_limit(self.device, e.code, e.message):
                    pytest.skip(f"{self.device}: {e.message}")
                raise

        run.info = k.info
        run.launch = k.launch
        return run


@pytest.fixture(scope="module", params=devices())
def mod(request, tmp_path_factory):
    if request.param != "cpu":
        # every SPIR-V module the Vulkan backend builds goes through spirv-val
        mp = pytest.MonkeyPatch()
        mp.setenv("CUPORT_SPIRV_VALIDATE", "1")
        request.addfinalizer(mp.undo)
    ptx = tmp_path_factory.mktemp("kernels") / "kernels.ptx"
    subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_75", "-o", str(ptx), str(HERE / "kernels.cu")], check=True)
    if ON_GPU:
        from cupy_module import CupyModule

        return CupyModule(ptx)
    return _Skipping(cuport.Module(ptx.read_text(), device=request.param), request.param)


def test_tiled_matmul_with_partial_tiles(mod):
    rng = np.random.default_rng(1)
    M, N, K = 70, 45, 53
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = np.zeros((M, N), np.float32)
    mod.kernel("matmul_tiled")(((N + 15) // 16, (M + 15) // 16), (16, 16), (A, B, C, M, N, K))
    # fmaf in k order: compare with a float64 reference at float32 accuracy
    np.testing.assert_allclose(C, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_block_reduction_with_shuffles_and_atomics(mod):
    rng = np.random.default_rng(2)
    n = 100_003
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    total = np.zeros(1, np.uint64)
    blocks = 37
    block_sums = np.zeros(blocks, np.int32)
    mod.kernel("reduce_sum")(blocks, 256, (x, n, total, block_sums))
    assert int(total[0].astype(np.int64)) == int(x.sum())
    # each block's partial: the grid-stride elements it owns
    idx = np.arange(n)
    expect = [int(x[(idx // 256) % blocks == b].sum()) for b in range(blocks)]
    assert block_sums.tolist() == expect


def test_histogram_shared_and_global_atomics(mod):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 200_001, dtype=np.uint8)
    hist = np.zeros(256, np.uint32)
    mod.kernel("histogram256")(29, 192, (data, data.size, hist))
    assert (hist == np.bincount(data, minlength=256)).all()


def test_multi_block_scan(mod):
    rng = np.random.default_rng(4)
    n, bs = 5000, 256
    x = rng.integers(-50, 50, n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    nb = (n + bs - 1) // bs
    totals = np.zeros(nb, np.int32)
    mod.kernel("scan_blocks")(nb, bs, (x, out, totals, n), shared=bs * 4)
    scanned = np.cumsum(totals).astype(np.int32)
    mod.kernel("scan_add")(nb, bs, (out, scanned, n))
    assert (out == np.cumsum(x)).all()


def test_stencil_with_shared_halo(mod):
    rng = np.random.default_rng(5)
    h, w = 37, 53
    a = rng.standard_normal((h, w), dtype=np.float32)
    out = np.zeros_like(a)
    mod.kernel("stencil2d")(((w + 15) // 16, (h + 15) // 16), (16, 16), (a, out, w, h))
    p = np.pad(a, 1, mode="edge")
    ref = 0.5 * a + 0.125 * (p[1:-1, :-2] + p[1:-1, 2:] + p[:-2, 1:-1] + p[2:, 1:-1])
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_barrier_inside_loop_with_per_thread_trip_count(mod):
    rng = np.random.default_rng(6)
    blocks, bs = 3, 96
    trips = rng.integers(0, 9, blocks * bs, dtype=np.int32)
    out = np.zeros(blocks * bs, np.int32)
    mod.kernel("barrier_in_loop")(blocks, bs, (trips, out))
    s = np.arange(bs) * 3 + 1
    expect = [sum(int(s[(t % bs + i) % bs]) for i in range(trips[t])) for t in range(blocks * bs)]
    assert out.tolist() == expect


def test_warps_that_reach_different_barriers(mod):
    blocks, bs = 2, 256
    out = np.zeros(blocks * bs, np.int32)
    mod.kernel("warps_at_different_barriers")(blocks, bs, (out,))
    t = np.arange(bs)
    expect = np.where((t // 32) % 2 == 0, t + (t ^ 32) * 1000, t)
    assert out.tolist() == np.tile(expect, blocks).tolist()


def test_barrier_reductions_with_warps_that_exited(mod):
    rng = np.random.default_rng(8)
    blocks, bs, rounds = 4, 160, 5
    x = rng.integers(0, 7, blocks * bs, dtype=np.int32)
    live = np.array([160, 70, 64, 1], np.int32)  # threads of each block that stay
    out = np.full(blocks * bs, -1, np.int32)
    mod.kernel("barrier_reductions")(blocks, bs, (x, live, out, rounds))
    expect = []
    for b in range(blocks):
        xs = x[b * bs:b * bs + live[b]]
        acc = sum(int((xs > r).sum()) for r in range(rounds))
        acc += 1000 * int((xs == 3).any()) + 10000 * int((xs >= 1).all())
        expect += [acc] * int(live[b]) + [-1] * int(bs - live[b])
    assert out.tolist() == expect


def test_local_array_lives_across_barriers(mod):
    bs, k = 100, 5
    x = np.arange(bs, dtype=np.int32) * 3 - 40
    out = np.zeros(bs, np.int32)
    mod.kernel("local_across_barrier")(1, bs, (x, out, k))
    vals = [[int(x[t]) * (j + 1) for j in range(12)] for t in range(bs)]
    s1 = [vals[t][(t + k) % 12] for t in range(bs)]
    r = [s1[(t + 1) % bs] for t in range(bs)]
    s2 = [vals[t][(t * 7 + k) % 12] + r[t] for t in range(bs)]
    expect = [s2[(t + 5) % bs] + vals[t][k % 12] for t in range(bs)]
    assert out.tolist() == expect


def test_warp_synchronous_code_under_divergence(mod):
    rng = np.random.default_rng(7)
    n = 64
    v = rng.integers(0, 100, n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    mod.kernel("warp_divergent")(1, n, (v, out))
    expect = []
    for t in range(n):
        w, lane = t // 32 * 32, t % 32
        if lane < 16:
            expect.append(int(v[w:w + 16].sum()))
        elif lane % 2 == 0:
            expect.append(int(v[w + 16 + ((lane + 2) & 15)]))
        else:
            odd = [i for i in range(16, 32) if i % 2]
            ballot = sum(1 for i in odd if v[w + i] > 50)
            src = lane + 2
            down = int(v[w + src]) if src < 32 else int(v[t])
            expect.append(ballot * 1000 + down)
    assert out.tolist() == expect


def test_recursive_device_functions(mod):
    n = 64
    out = np.zeros(n, np.int32)
    fibs = np.zeros(n, np.uint64)
    mod.kernel("recursion")(2, 32, (out, fibs))

    def ack(d, x):
        return x + 1 if d == 0 else ack(d - 1, (x * 2 + d) & 0xFFFFFFFF) + (x & 3)

    @functools.lru_cache(None)
    def fib(k):
        return k if k < 2 else fib(k - 1) + fib(k - 2)

    assert out.tolist() == [np.int32(np.uint32(ack(t % 9, t) & 0xFFFFFFFF)) for t in range(n)]
    assert fibs.tolist() == [fib(t % 18) for t in range(n)]


@pytest.mark.skipif(ON_GPU, reason="a trap leaves a real GPU's context unusable")
def test_trap_is_an_error_not_a_crash(mod):
    out = np.zeros(256, np.int32)
    k = mod.kernel("traps")
    with pytest.raises(cuport.BackendError) as e:
        k(4, 64, (out, 77))
    assert "trap" in str(e.value)
    assert "traps" in str(e.value)
    # the module stays usable after the failed launch
    k(4, 64, (out, -1))
    assert (out == np.arange(256)).all()


@pytest.mark.skipif(ON_GPU, reason="a fault leaves a real GPU's context unusable")
def test_bad_pointer_is_an_illegal_address_not_a_crash(mod):
    if getattr(mod, "in_process", False):
        pytest.skip("a Vulkan driver that runs kernels in this process (lavapipe) crashes on a wild pointer")
    k = mod.kernel("traps")
    with pytest.raises(cuport.BackendError) as e:
        k(4, 64, (0x10, -1))  # out = 0x10: never allocated
    assert e.value.code == 700  # CUDA_ERROR_ILLEGAL_ADDRESS
    assert "traps" in str(e.value) and "0x" in str(e.value)
    out = np.zeros(256, np.int32)
    k(4, 64, (out, -1))  # the process and the module live on
    assert (out == np.arange(256)).all()


def test_scan_reads_below_shared_address_zero_only_where_executed(mod):
    x = np.random.default_rng(3).integers(-50, 50, 4 * 256).astype(np.int32)
    out = np.zeros_like(x)
    mod.kernel("hillis_steele")(4, 256, (x, out))
    assert (out == np.cumsum(x.reshape(4, 256), axis=1).reshape(-1)).all()


# What an H200 printed for each mode (tests/kernels/kernels.cu, shfl_nonparticipants)
H200_SHFL = {
    0: [0] * 8 + [-7] * 24,
    1: list(range(1016, 1024)) + list(range(1009, 1032)) + [1031],
    2: [0] * 12 + [1012, 1013, 1014, 1015] + [-1] * 16,
    3: [0, -7] * 16,
    4: [1016, 1017, 1018, 1019] + [0] * 12 + [1016, 1017, 1018, 1019],
    5: [0, 0, 0, 0, -7, -7, -7, -7] + [0] * 8 + list(range(1008, 1024)),
}


@pytest.mark.parametrize("off", [0xFFFFFFF0, 0xFFFFFFE8])
def test_lane_indices_that_wrap_around(mod, off):
    out = np.zeros(64, dtype=np.uint32)
    mod.kernel("index_wraps")(1, 64, (out, np.uint32(off), np.uint32(16)))
    t = np.arange(64, dtype=np.uint64)
    i = (t + off) % 2**32
    ref = np.zeros(64, dtype=np.uint32)
    ref[i[i < 16]] = t[i < 16]
    assert (out == ref).all()
    assert (ref != 0).sum() == 16


@pytest.mark.parametrize("mode", sorted(H200_SHFL))
def test_shuffle_from_lanes_that_do_not_take_part(mod, mode):
    n = 20 if mode == 4 else 32
    out = np.full(32, -1, np.int32)
    mod.kernel("shfl_nonparticipants")(1, n, (out, mode))
    assert out[:n].tolist() == H200_SHFL[mode][:n]


def test_warp_spinning_on_another_warp(mod):
    out = np.zeros(4 * 64, np.int32)
    mod.kernel("spin_on_other_warp")(4, 64, (out,))
    for blk in range(4):
        assert out[blk * 64:blk * 64 + 32].tolist() == [1000 + blk + t for t in range(32)]


def test_blocks_waiting_on_earlier_blocks(mod):
    """CUB-style decoupled look-back: block `t` spins until block `t - 1` publishes."""
    nb, bs = 97, 64
    rng = np.random.default_rng(11)
    x = rng.integers(-5, 6, nb * bs, dtype=np.int32)
    ticket = np.zeros(1, np.uint32)
    ready = np.zeros(nb, np.int32)
    prefix = np.zeros(nb, np.int32)
    mod.kernel("chained_tickets")(nb, bs, (ticket, ready, prefix, x))
    assert prefix.tolist() == np.cumsum(x.reshape(nb, bs).sum(1)).tolist()
    assert ready.all() and ticket[0] == nb
