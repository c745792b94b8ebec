"""atom and red where threads interact: many blocks on one counter, CAS loops, histograms.

The one-thread operation table (inc/dec wrap, min/max, bit operations, cas, f16/bf16
rounding, the ftz of global f32 adds) is cases/atomics.py. Here the kernels are CUDA C++
built with nvcc, plus hand-written PTX for `red` and generic atomics; grids are large
enough that several worker threads run blocks at the same time.
"""

from __future__ import annotations

import numpy as np
import pytest
from cases.atomics import CASES
from nvcc import module_of, ptx_module, run
from runner import check

RNG = np.random.default_rng(99)


def test_atomic_operation_table():
    errors = check(CASES, "atomics")
    assert not errors, "\n".join(errors[:40])


CUDA = r"""
#include <cuda_fp16.h>

extern "C" __global__ void counters(unsigned* c32, unsigned long long* c64, float* cf, double* cd,
                                    unsigned* tickets, const unsigned* vals) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    tickets[t] = atomicAdd(c32, 1u);                     // the whole warp on one address
    atomicAdd(c32 + 1, vals[t]);                          // per-lane values, one address
    atomicAdd(c32 + 2 + (t % 3), 1u);                     // three addresses within a warp
    atomicAdd(c64, (unsigned long long)vals[t] << 20);    // crosses 2^32
    atomicAdd(cf, 1.0f);
    atomicAdd(cf + 1, (float)(t % 7));
    atomicAdd(cd, (double)vals[t]);
    atomicAdd(cd + 1, 0.5);
}

__device__ float atomic_max_float(float* addr, float value) {
    int* word = (int*)addr;
    int old = *word, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(word, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

extern "C" __global__ void float_max(const float* x, float* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) atomic_max_float(out + (t & 1), x[t]);
}

extern "C" __global__ void exchanges(unsigned* slot, unsigned* olds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    olds[t] = atomicExch(slot, (unsigned)t);
}

extern "C" __global__ void minmax(const int* x, int* si, unsigned* ui, long long* sl, unsigned long long* ul) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[t];
    atomicMin(si, v);
    atomicMax(si + 1, v);
    atomicMin(ui, (unsigned)v);
    atomicMax(ui + 1, (unsigned)v);
    atomicMin(sl, (long long)v * 1000003);
    atomicMax(sl + 1, (long long)v * 1000003);
    atomicMin(ul, (unsigned long long)(long long)v);
    atomicMax(ul + 1, (unsigned long long)(long long)v);
}

extern "C" __global__ void wraps(unsigned* c, unsigned* olds, unsigned limit) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    olds[2 * t] = atomicInc(c, limit);
    olds[2 * t + 1] = atomicDec(c + 1, limit);
}

extern "C" __global__ void bitops(unsigned* w, unsigned long long* w64) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicOr(w, 1u << (t % 32));
    atomicAnd(w + 1, ~(1u << (t % 29)));
    atomicXor(w + 2, (unsigned)t * 2654435761u);
    atomicOr(w64, 1ull << (t % 64));
    atomicXor(w64 + 1, (unsigned long long)t * 0x9E3779B97F4A7C15ull);
}

extern "C" __global__ void cas_counter(unsigned long long* c, int iters) {
    for (int i = 0; i < iters; ++i) {
        unsigned long long old = *(volatile unsigned long long*)c, seen;
        do {
            seen = old;
            old = atomicCAS(c, seen, seen + 3);
        } while (old != seen);
    }
}

extern "C" __global__ void histogram(const unsigned char* data, int n, unsigned* hist) {
    __shared__ unsigned bins[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[data[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&hist[i], bins[i]);
}

extern "C" __global__ void shared_ticket(unsigned* out) {
    __shared__ unsigned n;
    __shared__ float f;
    if (threadIdx.x == 0) { n = 0; f = 0.0f; }
    __syncthreads();
    unsigned mine = atomicAdd(&n, 2u);
    atomicAdd(&f, 0.25f);
    out[blockIdx.x * blockDim.x + threadIdx.x] = mine;
    __syncthreads();
    if (threadIdx.x == 0) out[gridDim.x * blockDim.x + blockIdx.x] = (unsigned)(f * 4.0f);
}

extern "C" __global__ void half2_add(__half2* acc, const __half2* v, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) atomicAdd(acc, v[t & 1]);
}

__device__ __noinline__ void bump(unsigned* p, unsigned v) { atomicAdd(p, v); }

extern "C" __global__ void generic_atomics(unsigned* g, unsigned* out) {
    __shared__ unsigned s;
    if (threadIdx.x == 0) s = 0;
    __syncthreads();
    bump(&s, 1u);          // generic address of shared memory
    bump(g, 2u);           // generic address of global memory
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""


@pytest.fixture(scope="module")
def cuda():
    return module_of(CUDA)


def test_counters_of_many_blocks_are_exact(cuda):
    grid, block = 64, 256
    n = grid * block
    vals = RNG.integers(0, 5000, n).astype(np.uint32)
    c32 = np.zeros(5, dtype=np.uint32)
    c64 = np.array([2**32 - 7], dtype=np.uint64)
    cf = np.zeros(2, dtype=np.float32)
    cd = np.zeros(2, dtype=np.float64)
    tickets = np.zeros(n, dtype=np.uint32)
    run(cuda, "counters", grid, block, c32, c64, cf, cd, tickets, vals)
    assert c32[0] == n
    assert sorted(tickets.tolist()) == list(range(n)), "every ticket handed out exactly once"
    assert c32[1] == int(vals.sum()) & 0xFFFFFFFF
    assert c32[2:].tolist() == [len(range(k, n, 3)) for k in range(3)]
    assert int(c64[0]) == (2**32 - 7 + (int(vals.astype(np.uint64).sum()) << 20)) % 2**64
    assert cf[0] == n and cf[1] == sum(t % 7 for t in range(n))
    assert cd[0] == float(vals.sum()) and cd[1] == n / 2


def test_float_atomic_max_by_cas_loop(cuda):
    n = 20000
    x = (RNG.standard_normal(n) * 100).astype(np.float32)
    out = np.full(2, -np.inf, dtype=np.float32)
    run(cuda, "float_max", (n + 255) // 256, 256, x, out, np.int32(n))
    assert out[0] == x[0::2].max() and out[1] == x[1::2].max()


def test_exchange_hands_every_value_on_once(cuda):
    grid, block = 32, 128
    n = grid * block
    slot = np.array([0xFFFFFFFF], dtype=np.uint32)
    olds = np.zeros(n, dtype=np.uint32)
    run(cuda, "exchanges", grid, block, slot, olds)
    assert sorted(olds.tolist() + [int(slot[0])]) == sorted(list(range(n)) + [0xFFFFFFFF])


def test_min_max_signed_unsigned_64(cuda):
    grid, block = 16, 256
    x = RNG.integers(-(2**31), 2**31, grid * block).astype(np.int32)
    si = np.array([2**31 - 1, -(2**31)], dtype=np.int32)
    ui = np.array([2**32 - 1, 0], dtype=np.uint32)
    sl = np.array([2**63 - 1, -(2**63)], dtype=np.int64)
    ul = np.array([2**64 - 1, 0], dtype=np.uint64)
    run(cuda, "minmax", grid, block, x, si, ui, sl, ul)
    assert si.tolist() == [x.min(), x.max()]
    assert ui.tolist() == [x.view(np.uint32).min(), x.view(np.uint32).max()]
    big = x.astype(np.int64) * 1000003
    assert sl.tolist() == [big.min(), big.max()]
    assert ul.tolist() == [x.astype(np.int64).view(np.uint64).min(), x.astype(np.int64).view(np.uint64).max()]


@pytest.mark.parametrize("limit", [0, 9, 1000, 0xFFFFFFFF])
def test_inc_dec_wrap_across_the_grid(cuda, limit):
    grid, block = 8, 128
    n = grid * block
    c = np.zeros(2, dtype=np.uint32)
    olds = np.zeros(2 * n, dtype=np.uint32)
    run(cuda, "wraps", grid, block, c, olds, np.uint32(limit))
    m = limit + 1
    assert int(c[0]) == n % m
    assert int(c[1]) == (-n) % m
    # the old values are the first n terms of each wrapping sequence, in some order
    assert sorted(olds[0::2].tolist()) == sorted(k % m for k in range(n))
    assert sorted(olds[1::2].tolist()) == sorted((-k) % m for k in range(n))


def test_and_or_xor_masks(cuda):
    grid, block = 8, 96
    n = grid * block
    w = np.array([0, 0xFFFFFFFF, 0x5A5A5A5A], dtype=np.uint32)
    w64 = np.array([0, 7], dtype=np.uint64)
    run(cuda, "bitops", grid, block, w, w64)
    x = 0x5A5A5A5A
    for t in range(n):
        x ^= (t * 2654435761) & 0xFFFFFFFF
    x64 = 7
    for t in range(n):
        x64 ^= (t * 0x9E3779B97F4A7C15) % 2**64
    assert w.tolist() == [0xFFFFFFFF, 0xFFFFFFFF & ~((1 << 29) - 1), x]
    assert w64.tolist() == [2**64 - 1, x64]


def test_cas_loop_counter(cuda):
    c = np.zeros(1, dtype=np.uint64)
    run(cuda, "cas_counter", 16, 64, c, np.int32(20))
    assert int(c[0]) == 3 * 16 * 64 * 20


@pytest.mark.parametrize("spread", ["uniform", "skewed"])
def test_shared_memory_histogram(cuda, spread):
    n = 300_001
    if spread == "uniform":
        data = RNG.integers(0, 256, n).astype(np.uint8)
    else:  # most lanes of a warp hit the same bin
        data = np.where(RNG.random(n) < 0.9, 7, RNG.integers(0, 256, n)).astype(np.uint8)
    hist = np.zeros(256, dtype=np.uint32)
    run(cuda, "histogram", 40, 192, data, np.int32(n), hist)
    assert hist.tolist() == np.bincount(data, minlength=256).tolist()


def test_shared_tickets_and_float_add(cuda):
    grid, block = 6, 160
    out = np.zeros(grid * block + grid, dtype=np.uint32)
    run(cuda, "shared_ticket", grid, block, out)
    for g in range(grid):
        assert sorted(out[g * block:(g + 1) * block].tolist()) == list(range(0, 2 * block, 2))
    assert out[grid * block:].tolist() == [block] * grid


def test_half2_atomic_add(cuda):
    acc = np.zeros(2, dtype=np.float16)
    v = np.array([1.0, 0.5, 0.25, 2.0], dtype=np.float16)
    run(cuda, "half2_add", 4, 128, acc, v, np.int32(500))
    assert acc.tolist() == [250 * 1.0 + 250 * 0.25, 250 * 0.5 + 250 * 2.0]


def test_generic_atomics_on_shared_and_global(cuda):
    grid, block = 10, 96
    g = np.zeros(1, dtype=np.uint32)
    out = np.zeros(grid, dtype=np.uint32)
    run(cuda, "generic_atomics", grid, block, g, out)
    assert g[0] == 2 * grid * block
    assert out.tolist() == [block] * grid


RED = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry reds(.param .u64 pg, .param .u64 pv, .param .u64 pout)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    .reg .f64 %fd<2>;
    .reg .pred %p<3>;
    .shared .align 8 .b8 sh[16];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 st.shared.u32 [sh], 0;
    @%p1 st.shared.u32 [sh+4], 0xFFFFFFFF;
    @%p1 st.shared.u32 [sh+8], 0;
    bar.sync 0;
    ld.param.u64 %rd1, [pg];
    ld.param.u64 %rd2, [pv];
    mul.wide.u32 %rd3, %r4, 4;
    add.u64 %rd2, %rd2, %rd3;
    ld.global.u32 %r5, [%rd2];
    red.global.add.u32 [%rd1], %r5;
    red.global.add.u32 [%rd1+4], 1;
    red.relaxed.gpu.global.max.s32 [%rd1+8], %r5;
    and.b32 %r6, %r1, 3;
    mul.wide.u32 %rd4, %r6, 4;
    add.u64 %rd5, %rd1, %rd4;
    red.global.inc.u32 [%rd5+16], 4;
    cvt.rn.f64.u32 %fd1, %r5;
    red.global.add.f64 [%rd1+32], %fd1;
    and.b32 %r7, %r1, 1;
    setp.eq.u32 %p2, %r7, 1;
    @%p2 red.shared.add.u32 [sh], 3;
    red.shared.and.release.cta.b32 [sh+4], %r5;
    mov.u64 %rd6, sh;
    cvta.shared.u64 %rd7, %rd6;
    red.add.u32 [%rd7+8], 1;
    bar.sync 0;
    @!%p1 bra DONE;
    ld.shared.u32 %r8, [sh];
    ld.shared.u32 %r9, [sh+4];
    ld.shared.u32 %r10, [sh+8];
    ld.param.u64 %rd8, [pout];
    mul.wide.u32 %rd9, %r2, 12;
    add.u64 %rd8, %rd8, %rd9;
    st.global.u32 [%rd8], %r8;
    st.global.u32 [%rd8+4], %r9;
    st.global.u32 [%rd8+8], %r10;
DONE:
    ret;
}
"""


def test_red_global_shared_generic():
    """red: totals over the grid, a guard that halves the lanes, a release-ordered and."""
    grid, block = 12, 100
    n = grid * block
    v = RNG.integers(-1000, 1000, n).astype(np.int32).view(np.uint32)
    v[5] = 0x7FFFFFF0
    mem = np.zeros(5, dtype=np.uint64)  # 40 bytes: u32 x 8 then f64
    mem32 = mem.view(np.uint32)
    mem32[2] = 0x80000000
    out = np.zeros(3 * grid, dtype=np.uint32)
    run(ptx_module(RED), "reds", grid, block, mem, v, out)
    assert mem32[0] == int(v.astype(np.uint64).sum()) & 0xFFFFFFFF
    assert mem32[1] == n
    assert mem32[2] == v.view(np.int32).max()
    lanes = [len([t for t in range(block) if t % 4 == k]) * grid for k in range(4)]
    assert mem32[4:8].tolist() == [c % 5 for c in lanes]
    assert mem.view(np.float64)[4] == float(v.astype(np.uint64).sum())
    for b in range(grid):
        blk = v[b * block:(b + 1) * block]
        assert out[3 * b:3 * b + 3].tolist() == [3 * (block // 2), int(np.bitwise_and.reduce(blk)), block]


WIDE = """
.version 8.3
.target sm_90
.address_size 64
.visible .entry wide(.param .u64 pslots, .param .u64 pold, .param .u64 pctr)
{
    .reg .b128 %q<8>;
    .reg .b64 %rd<20>;
    .reg .b32 %r<4>;
    .reg .pred %p<3>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r1, %r2, %r3, %r1;
    cvt.u64.u32 %rd1, %r1;
    shl.b64 %rd2, %rd1, 4;
    ld.param.u64 %rd3, [pslots];
    add.u64 %rd3, %rd3, %rd2;
    ld.param.u64 %rd4, [pold];
    shl.b64 %rd16, %rd1, 5;
    add.u64 %rd4, %rd4, %rd16;
    // cas on the thread's own slot: odd threads compare with a wrong value
    ld.global.v2.u64 {%rd5, %rd6}, [%rd3];
    and.b64 %rd7, %rd1, 1;
    xor.b64 %rd6, %rd6, %rd7;
    mov.b128 %q1, {%rd5, %rd6};
    mov.b128 %q2, {%rd1, %rd2};
    atom.global.cas.b128 %q3, [%rd3], %q1, %q2;
    st.global.b128 [%rd4], %q3;
    // a 128-bit counter every thread bumps with a CAS loop: low half += 1, high half += id
    ld.param.u64 %rd8, [pctr];
    mov.u64 %rd15, 0;
    mov.b128 %q4, {%rd15, %rd15};
LOOP:
    mov.b128 {%rd9, %rd10}, %q4;
    add.u64 %rd11, %rd9, 1;
    add.u64 %rd12, %rd10, %rd1;
    mov.b128 %q5, {%rd11, %rd12};
    atom.global.cas.b128 %q6, [%rd8], %q4, %q5;
    mov.b128 {%rd13, %rd14}, %q6;
    setp.ne.u64 %p1, %rd13, %rd9;
    setp.ne.or.u64 %p1, %rd14, %rd10, %p1;
    mov.b128 %q4, %q6;
    @%p1 bra LOOP;
    // exchange: the counter's second slot collects one id, every old value comes back
    mov.b128 %q7, {%rd1, %rd2};
    atom.global.exch.b128 %q7, [%rd8+16], %q7;
    st.global.b128 [%rd4+16], %q7;
    ret;
}
"""


def test_128_bit_cas_and_exchange():
    grid, block = 8, 64
    n = grid * block
    slots = RNG.integers(0, 2**63, (n, 2), dtype=np.uint64)
    before = slots.copy()
    old = np.zeros((n, 4), dtype=np.uint64)
    ctr = np.array([[0, 0], [2**64 - 1, 7]], dtype=np.uint64)
    run(ptx_module(WIDE), "wide", grid, block, slots, old, ctr)
    ids = np.arange(n, dtype=np.uint64)
    assert (old[:, :2] == before).all(), "cas returns the old value"
    even = ids % 2 == 0
    assert (slots[even] == np.stack([ids, ids << np.uint64(4)], axis=1)[even]).all()
    assert (slots[~even] == before[~even]).all()
    assert ctr[0].tolist() == [n, int(ids.sum())]
    got = sorted(map(tuple, old[:, 2:].tolist())) + [tuple(ctr[1].tolist())]
    want = sorted([(int(i), int(i) << 4) for i in ids] + [(2**64 - 1, 7)])
    assert sorted(got) == want
