"""Warp collectives where lanes interact: shfl, vote, match, redux, activemask, elect.

Kernels come from CUDA C++ (nvcc -ptx, as programs ship them) and from hand-written PTX
for operand values nvcc never emits (odd clamps, stray segment-mask bits, legacy forms).
Every result is checked against the models in cases/warp.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from cases.warp import (
    B_VALUES,
    C_VALUES,
    M32,
    PARTS,
    ballot_ref,
    cuda_shfl_ref,
    match_all_ref,
    match_any_ref,
    redux_ref,
    shfl_ref,
)
from nvcc import module_of, ptx_module, run

RNG = np.random.default_rng(1234)
FULL = 0xFFFFFFFF

# ---------------------------------------------------------------- hand-written PTX

_HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def _shfl_kernel(mode: str) -> str:
    """d|p = shfl.sync.<mode>(a[lane], b[lane], c, membermask) for lanes whose bit is in `run`."""
    return _HEAD + f"""
.visible .entry shfl_{mode}(.param .u64 pa, .param .u64 pb, .param .u32 pc, .param .u32 pm,
                            .param .u32 prun, .param .u64 pout)
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 4;
    ld.param.u64 %rd2, [pa];
    add.u64 %rd2, %rd2, %rd1;
    ld.global.u32 %r2, [%rd2];
    ld.param.u64 %rd3, [pb];
    add.u64 %rd3, %rd3, %rd1;
    ld.global.u32 %r3, [%rd3];
    ld.param.u32 %r4, [pc];
    ld.param.u32 %r5, [pm];
    ld.param.u32 %r8, [prun];
    and.b32 %r9, %r1, 31;
    shr.u32 %r8, %r8, %r9;
    and.b32 %r8, %r8, 1;
    setp.eq.u32 %p2, %r8, 0;
    mov.u32 %r6, 0xDEAD;
    mov.u32 %r7, 7;
    @%p2 bra SKIP;
    shfl.sync.{mode}.b32 %r6|%p1, %r2, %r3, %r4, %r5;
    selp.u32 %r7, 1, 0, %p1;
SKIP:
    ld.param.u64 %rd4, [pout];
    mul.wide.u32 %rd5, %r1, 8;
    add.u64 %rd4, %rd4, %rd5;
    st.global.v2.u32 [%rd4], {{%r6, %r7}};
    ret;
}}
"""


MODES = ("up", "down", "bfly", "idx")


@pytest.fixture(scope="module")
def shfl_mods():
    return {m: ptx_module(_shfl_kernel(m)) for m in MODES}


def _run_shfl(mod, mode, a, b, c, member, run_mask=FULL):
    out = np.zeros(64, dtype=np.uint32)
    run(mod, f"shfl_{mode}", 1, 32, a, b, np.uint32(c), np.uint32(member), np.uint32(run_mask), out)
    return out[0::2].tolist(), out[1::2].tolist()


@pytest.mark.parametrize("mode", MODES)
def test_shfl_operand_sweep(shfl_mods, mode):
    """Every mode against the ISA pseudocode, over clamps, segment masks and b values
    (uniform ones, larger than 31, and per-lane random ones)."""
    a = RNG.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    bs = [np.full(32, bv, dtype=np.uint32) for bv in B_VALUES]
    bs += [RNG.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(3)]
    errors = []
    for c in C_VALUES:
        for b in bs:
            d, p = _run_shfl(shfl_mods[mode], mode, a, b, c, FULL)
            wd, wp = shfl_ref(mode, a.tolist(), b.tolist(), c)
            if d != wd or p != wp:
                errors.append(f"{mode} c={c:#x} b={b[:4].tolist()}...: got {d[:8]}.. p={p}, want {wd[:8]}.. p={wp}")
    assert not errors, "\n".join(errors[:10])


@pytest.mark.parametrize("mode", MODES)
def test_shfl_partial_warp_under_divergence(shfl_mods, mode):
    """Only the lanes of `run` reach the shfl (a branch skips the others); the member mask
    names the same lanes; a lane whose source is outside reads its own value."""
    a = RNG.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    for part in PARTS:
        for c in (0x1F, 0x181F, 0x0):
            b = np.full(32, 1 if mode != "idx" else 3, dtype=np.uint32)
            d, p = _run_shfl(shfl_mods[mode], mode, a, b, c, part, part)
            wd, wp = shfl_ref(mode, a.tolist(), b.tolist(), c, part)
            for lane in range(32):
                if (part >> lane) & 1:
                    assert (d[lane], p[lane]) == (wd[lane], wp[lane]), (mode, hex(part), hex(c), lane)
                else:
                    assert (d[lane], p[lane]) == (0xDEAD, 7), "a lane that skipped the shfl was written"


LEGACY = """
.version 6.0
.target sm_60
.address_size 64
.visible .entry legacy(.param .u64 pin, .param .u64 pout)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .reg .pred %p<4>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 4;
    ld.param.u64 %rd2, [pin];
    add.u64 %rd2, %rd2, %rd1;
    ld.global.u32 %r2, [%rd2];
    setp.gt.u32 %p1, %r2, 100;
    vote.ballot.b32 %r3, %p1;
    vote.any.pred %p2, !%p1;
    selp.u32 %r4, 1, 0, %p2;
    shfl.down.b32 %r5, %r2, 1, 0x1f;
    shfl.bfly.b32 %r6|%p3, %r2, 0x1, 0x1c1f;
    selp.u32 %r7, 1, 0, %p3;
    ld.param.u64 %rd3, [pout];
    mul.wide.u32 %rd4, %r1, 20;
    add.u64 %rd3, %rd3, %rd4;
    st.global.u32 [%rd3], %r3;
    st.global.u32 [%rd3+4], %r4;
    st.global.u32 [%rd3+8], %r5;
    st.global.u32 [%rd3+12], %r6;
    st.global.u32 [%rd3+16], %r7;
    ret;
}
"""


def test_legacy_vote_and_shfl_without_sync():
    """vote.ballot.b32 / vote.any.pred with a negated predicate / shfl without .sync (sm_60 PTX)."""
    a = RNG.integers(0, 200, 32).astype(np.uint32)
    out = np.zeros(32 * 5, dtype=np.uint32)
    run(ptx_module(LEGACY), "legacy", 1, 32, a, out)
    out = out.reshape(32, 5)
    pred = [int(x) > 100 for x in a]
    assert (out[:, 0] == ballot_ref(pred, FULL)).all()
    assert (out[:, 1] == int(not all(pred))).all()
    d, _ = shfl_ref("down", a.tolist(), [1] * 32, 0x1F)
    assert out[:, 2].tolist() == d
    d, p = shfl_ref("bfly", a.tolist(), [1] * 32, 0x1C1F)
    assert out[:, 3].tolist() == d and out[:, 4].tolist() == p


# ---------------------------------------------------------------- CUDA C++ (nvcc)

CUDA = r"""
extern "C" __global__ void shfl_width(const int* in, int* out, int delta, int width) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int v = in[t];
    out[4 * t + 0] = __shfl_sync(0xffffffffu, v, delta, width);
    out[4 * t + 1] = __shfl_up_sync(0xffffffffu, v, delta, width);
    out[4 * t + 2] = __shfl_down_sync(0xffffffffu, v, delta, width);
    out[4 * t + 3] = __shfl_xor_sync(0xffffffffu, v, delta, width);
}

extern "C" __global__ void shfl_idx_lanes(const int* in, const int* src, int* out, int width) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    out[t] = __shfl_sync(0xffffffffu, in[t], src[t], width);
}

extern "C" __global__ void shfl_double(const double* in, double* out, int delta) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    double v = in[t];
    out[3 * t + 0] = __shfl_down_sync(0xffffffffu, v, delta);
    out[3 * t + 1] = __shfl_xor_sync(0xffffffffu, v, delta);
    out[3 * t + 2] = __shfl_sync(0xffffffffu, v, 31 - (t & 31));
}

extern "C" __global__ void shfl_diverged(const int* in, int* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int lane = threadIdx.x & 31;
    int v = in[t];
    int r;
    if (lane < 16) {
        r = __shfl_down_sync(0x0000ffffu, v, 1, 16);
    } else {
        r = __shfl_up_sync(0xffff0000u, v, 2, 16);
    }
    out[t] = r;
}

extern "C" __global__ void warp_sum(const float* in, float* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    float v = in[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    out[t] = v;
}

extern "C" __global__ void warp_scan(const int* in, int* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int lane = threadIdx.x & 31;
    int v = in[t];
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    out[t] = v;
}

extern "C" __global__ void votes(const int* in, unsigned* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int lane = threadIdx.x & 31;
    int v = in[t];
    unsigned* o = out + 8 * t;
    o[0] = __ballot_sync(0xffffffffu, v > 0);
    o[1] = __all_sync(0xffffffffu, v > 0);
    o[2] = __any_sync(0xffffffffu, v > 0);
    o[3] = __uni_sync(0xffffffffu, v > 0);
    o[7] = __activemask();
    if (lane % 3 == 0) {
        unsigned am = __activemask();
        o[4] = am;
        o[5] = __ballot_sync(am, v > 0);
        o[6] = __all_sync(am, v > 0) + 2 * __any_sync(am, v > 0);
    } else {
        o[4] = o[5] = o[6] = 0xAAAAAAAAu;
    }
}

extern "C" __global__ void vote_exited(const int* in, unsigned* out, int n) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    if (t >= n) return;
    out[2 * t] = __ballot_sync(0xffffffffu, in[t] > 0);
    out[2 * t + 1] = __activemask();
}

extern "C" __global__ void matches(const unsigned long long* in, unsigned* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned long long v = in[t];
    unsigned* o = out + 5 * t;
    o[0] = __match_any_sync(0xffffffffu, v);
    o[1] = __match_any_sync(0xffffffffu, (unsigned)v);
    int p;
    o[2] = __match_all_sync(0xffffffffu, (unsigned)(v >> 40), &p);
    o[3] = p;
    o[4] = __match_all_sync(0xffffffffu, v, &p) + (p << 31);
}

extern "C" __global__ void reduxes(const unsigned* in, unsigned* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int lane = threadIdx.x & 31;
    unsigned v = in[t];
    unsigned* o = out + 10 * t;
    o[0] = __reduce_add_sync(0xffffffffu, v);
    o[1] = __reduce_min_sync(0xffffffffu, v);
    o[2] = __reduce_max_sync(0xffffffffu, v);
    o[3] = (unsigned)__reduce_min_sync(0xffffffffu, (int)v);
    o[4] = (unsigned)__reduce_max_sync(0xffffffffu, (int)v);
    o[5] = __reduce_and_sync(0xffffffffu, v);
    o[6] = __reduce_or_sync(0xffffffffu, v);
    o[7] = __reduce_xor_sync(0xffffffffu, v);
    if (lane < 20) {
        o[8] = __reduce_add_sync(__activemask(), v);
    } else {
        o[8] = 0;
    }
    if (lane >= 16) {
        o[9] = (unsigned)__reduce_max_sync(0xffff0000u, (int)v);
    } else {
        o[9] = 0;
    }
}
"""


@pytest.fixture(scope="module")
def cuda():
    return module_of(CUDA)


@pytest.mark.parametrize("width", [32, 16, 8, 4, 2, 1])
def test_cuda_shfl_widths(cuda, width):
    """__shfl*_sync with each width (nvcc's segment mask in `c`), deltas below the width."""
    n = 64
    a = RNG.integers(-(2**31), 2**31, n).astype(np.int32)
    for delta in sorted({0, 1, width // 2, width - 1}):
        out = np.zeros(4 * n, dtype=np.int32)
        run(cuda, "shfl_width", 1, n, a, out, np.int32(delta), np.int32(width))
        out = out.reshape(n, 4)
        args = [delta] * n
        for k, fn in enumerate(("idx", "up", "down", "xor")):
            want = cuda_shfl_ref(fn, a.tolist(), args, width)
            assert out[:, k].tolist() == want, (fn, width, delta)


def test_cuda_shfl_idx_per_lane_sources(cuda):
    n = 96
    a = RNG.integers(-(2**31), 2**31, n).astype(np.int32)
    for width in (32, 8):
        src = RNG.integers(-40, 40, n).astype(np.int32)
        out = np.zeros(n, dtype=np.int32)
        run(cuda, "shfl_idx_lanes", 1, n, a, src, out, np.int32(width))
        assert out.tolist() == cuda_shfl_ref("idx", a.tolist(), src.tolist(), width)


def test_shfl_of_double_takes_two_shuffles(cuda):
    n = 64
    a = RNG.standard_normal(n) * 1e300
    for delta in (1, 7, 16):
        out = np.zeros(3 * n)
        run(cuda, "shfl_double", 1, n, a, out, np.int32(delta))
        out = out.reshape(n, 3)
        assert out[:, 0].tolist() == cuda_shfl_ref("down", a.tolist(), [delta] * n, 32)
        assert out[:, 1].tolist() == cuda_shfl_ref("xor", a.tolist(), [delta] * n, 32)
        want = [a[(t // 32) * 32 + 31 - t % 32] for t in range(n)]
        assert out[:, 2].tolist() == want


def test_shfl_in_both_branches_with_partial_masks(cuda):
    n = 64
    a = RNG.integers(0, 2**31, n).astype(np.int32)
    out = np.zeros(n, dtype=np.int32)
    run(cuda, "shfl_diverged", 1, n, a, out)
    want = []
    for t in range(n):
        lane = t % 32
        if lane < 16:
            want.append(a[t + 1] if lane < 15 else a[t])
        else:
            want.append(a[t - 2] if lane >= 18 else a[t])
    assert out.tolist() == want


def test_warp_reduction_and_scan(cuda):
    n = 128
    x = RNG.integers(-1000, 1000, n).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    run(cuda, "warp_sum", 2, 64, x, out)
    for w in range(n // 32):
        assert (out[32 * w:32 * w + 32] == x[32 * w:32 * w + 32].sum()).all()
    xi = RNG.integers(-1000, 1000, n).astype(np.int32)
    outi = np.zeros(n, dtype=np.int32)
    run(cuda, "warp_scan", 1, n, xi, outi)
    want = np.concatenate([np.cumsum(xi[32 * w:32 * w + 32]) for w in range(n // 32)])
    assert outi.tolist() == want.tolist()


@pytest.mark.parametrize("pattern", ["random", "all", "none", "one"])
def test_vote_and_ballot(cuda, pattern):
    n = 64
    if pattern == "random":
        v = RNG.integers(-5, 5, n).astype(np.int32)
    elif pattern == "all":
        v = np.ones(n, dtype=np.int32)
    elif pattern == "none":
        v = np.zeros(n, dtype=np.int32)
    else:
        v = np.zeros(n, dtype=np.int32)
        v[37] = 1
    out = np.zeros(8 * n, dtype=np.uint32)
    run(cuda, "votes", 1, n, v, out)
    out = out.reshape(n, 8)
    for w in range(n // 32):
        pred = [bool(x > 0) for x in v[32 * w:32 * w + 32]]
        rows = out[32 * w:32 * w + 32]
        bal = ballot_ref(pred, FULL)
        assert (rows[:, 0] == bal).all()
        assert (rows[:, 1] == int(all(pred))).all()
        assert (rows[:, 2] == int(any(pred))).all()
        assert (rows[:, 3] == int(all(pred) or not any(pred))).all()
        assert (rows[:, 7] == FULL).all()
        am = sum(1 << i for i in range(0, 32, 3))
        sub = [pred[i] for i in range(0, 32, 3)]
        for lane in range(32):
            if lane % 3:
                assert rows[lane, 4:7].tolist() == [0xAAAAAAAA] * 3
            else:
                assert rows[lane, 4] == am
                assert rows[lane, 5] == ballot_ref(pred, am)
                assert rows[lane, 6] == int(all(sub)) + 2 * int(any(sub))


@pytest.mark.parametrize("n,block", [(20, 32), (50, 64), (48, 48)])
def test_exited_and_missing_lanes_do_not_vote(cuda, n, block):
    """Lanes that returned early, and lanes a partial last warp lacks, are not counted."""
    v = np.ones(block, dtype=np.int32)
    out = np.full(2 * block, 0xEEEEEEEE, dtype=np.uint32)
    run(cuda, "vote_exited", 1, block, v, out, np.int32(n))
    out = out.reshape(block, 2)
    for t in range(block):
        if t >= n:
            assert out[t].tolist() == [0xEEEEEEEE] * 2
            continue
        w = t // 32
        live = min(n, 32 * w + 32) - 32 * w
        mask = (1 << live) - 1
        assert out[t].tolist() == [mask, mask], t


def test_match_any_and_all(cuda):
    n = 64
    base = RNG.integers(0, 2**63, 5, dtype=np.uint64)
    # duplicates; values that differ only in the high word (the 32-bit match must merge them)
    v = np.array([base[i % 5] + (np.uint64(i % 2) << np.uint64(33)) for i in range(n)], dtype=np.uint64)
    v[32:] = np.uint64(0x1234_5678_9ABC_DEF0)  # second warp: every value equal
    out = np.zeros(5 * n, dtype=np.uint32)
    run(cuda, "matches", 1, n, v, out)
    out = out.reshape(n, 5)
    for w in range(2):
        vals = [int(x) for x in v[32 * w:32 * w + 32]]
        rows = out[32 * w:32 * w + 32]
        assert rows[:, 0].tolist() == match_any_ref(vals, FULL)
        assert rows[:, 1].tolist() == match_any_ref([x & M32 for x in vals], FULL)
        d, p = match_all_ref([x >> 40 for x in vals], FULL)
        assert (rows[:, 2] == d).all() and (rows[:, 3] == p).all()
        d, p = match_all_ref(vals, FULL)
        assert (rows[:, 4] == ((d + (p << 31)) & M32)).all()


@pytest.mark.parametrize("kind", ["random", "signs", "equal"])
def test_redux(cuda, kind):
    n = 64
    if kind == "random":
        v = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    elif kind == "signs":
        v = RNG.integers(-(2**31), 2**31, n).astype(np.int32).view(np.uint32)
        v[3] = 0x80000000
        v[40] = 0x7FFFFFFF
    else:
        v = np.full(n, 0xF0F0F0F0, dtype=np.uint32)
    out = np.zeros(10 * n, dtype=np.uint32)
    run(cuda, "reduxes", 1, n, v, out)
    out = out.reshape(n, 10)
    for w in range(2):
        vals = [int(x) for x in v[32 * w:32 * w + 32]]
        rows = out[32 * w:32 * w + 32]
        for k, op in enumerate(("add", "minu", "maxu", "mins", "maxs", "and", "or", "xor")):
            assert (rows[:, k] == redux_ref(op, vals, FULL)).all(), op
        assert rows[:20, 8].tolist() == [redux_ref("add", vals, (1 << 20) - 1)] * 20
        assert rows[16:, 9].tolist() == [redux_ref("maxs", vals, 0xFFFF0000)] * 16


ELECT = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry elect(.param .u64 pout, .param .u32 pm)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [pm];
    and.b32 %r3, %r1, 1;
    setp.eq.u32 %p2, %r3, 1;
    mov.u32 %r4, 99;
    mov.u32 %r5, 99;
    @%p2 bra SKIP;
    elect.sync %r4|%p1, %r2;
    selp.u32 %r5, 1, 0, %p1;
SKIP:
    ld.param.u64 %rd1, [pout];
    mul.wide.u32 %rd2, %r1, 8;
    add.u64 %rd1, %rd1, %rd2;
    st.global.v2.u32 [%rd1], {%r4, %r5};
    ret;
}
"""


@pytest.mark.parametrize("member", [0x55555555, 0x55555540])
def test_elect_picks_one_executing_member(member):
    out = np.zeros(64, dtype=np.uint32)
    run(ptx_module(ELECT), "elect", 1, 32, out, np.uint32(member))
    out = out.reshape(32, 2)
    leader = (member & -member).bit_length() - 1
    for lane in range(32):
        if lane % 2:
            assert out[lane].tolist() == [99, 99]
        elif (member >> lane) & 1:
            assert out[lane].tolist() == [leader, int(lane == leader)]


def test_one_warp_case_table():
    """shfl/vote/match/redux with one warp of rows (recordable on a GPU: cases/warp.py)."""
    from cases.warp import CASES
    from runner import check

    errors = check(CASES, "warp")
    assert not errors, "\n".join(errors[:40])
