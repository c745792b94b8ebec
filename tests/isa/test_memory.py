"""Loads and stores: the one-thread table (cases/memory.py) and kernels where lanes,
warps and blocks share memory."""

from __future__ import annotations

import numpy as np
import pytest
from cases.memory import CASES
from nvcc import module_of, ptx_module, run
from runner import check


def test_memory_operation_table():
    errors = check(CASES, "memory")
    assert not errors, "\n".join(errors[:40])


# ---------------------------------------------------------------- kernels where lanes share memory

RNG = np.random.default_rng(7)

CUDA = r"""
extern "C" __global__ void vec_copy(const float4* a, float4* b, const int2* c, int2* d, const double2* e,
                                    double2* f, const uchar4* g, uchar4* h, const short2* s, short2* u, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        b[t] = __ldg(a + t);                 // contiguous, read-only path
        d[n - 1 - t] = c[t];                 // reversed: gathers and scatters
        f[(t * 7) % n] = e[t];
        h[t] = g[(t * 5) % n];
        u[t] = s[t ^ 1];
    }
}

extern "C" __global__ void volatile_warp_sum(const int* in, int* out) {
    __shared__ int s[64];
    volatile int* v = s;
    int t = threadIdx.x;
    v[t] = in[blockIdx.x * 32 + t];
    v[t + 32] = 0;
    v[t] += v[t + 16];
    v[t] += v[t + 8];
    v[t] += v[t + 4];
    v[t] += v[t + 2];
    v[t] += v[t + 1];
    if (t == 0) out[blockIdx.x] = v[0];
}

__device__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// a single-pass scan over blocks: block k waits for block k-1's flag (block ids come from a
// ticket, so a waited-for block has always started); the wait loops must re-read memory
extern "C" __global__ void chained_scan(const unsigned* in, unsigned* out, unsigned* flags, unsigned* sums,
                                        unsigned* ticket, int use_volatile, unsigned* spins_out) {
    __shared__ unsigned bid, total, prefix;
    if (threadIdx.x == 0) {
        bid = atomicAdd(ticket, 1u);
        total = 0;
    }
    __syncthreads();
    unsigned b = bid;
    atomicAdd(&total, in[b * blockDim.x + threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned p = 0, spins = 0;
        if (b > 0) {
            if (use_volatile) {
                while (((volatile unsigned*)flags)[b - 1] == 0)
                    if (++spins > (1u << 27)) break;
                p = ((volatile unsigned*)sums)[b - 1];
            } else {
                while (ld_acquire(flags + b - 1) == 0)
                    if (++spins > (1u << 27)) break;
                p = sums[b - 1];
            }
        }
        spins_out[b] = spins;
        sums[b] = p + total;
        if (use_volatile) {
            __threadfence();
            ((volatile unsigned*)flags)[b] = 1;
        } else {
            st_release(flags + b, 1);
        }
        prefix = p;
    }
    __syncthreads();
    out[b * blockDim.x + threadIdx.x] = prefix;
}

extern "C" __global__ void ordered_vectors(const unsigned* p, unsigned* q, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned a, b, c, d;
    asm volatile("ld.relaxed.gpu.global.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(p + 2 * t));
    asm volatile("st.relaxed.gpu.global.v2.u32 [%0], {%1, %2};" ::"l"(q + 2 * (n - 1 - t)), "r"(b), "r"(a));
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p + 4 * (t / 2)));
    if (t & 1) {
        asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};"
                     ::"l"(q + 2 * n + 4 * t), "r"(d), "r"(c), "r"(b), "r"(a));
    } else {
        asm volatile("st.release.sys.global.v2.u32 [%0], {%1, %2};" ::"l"(q + 2 * n + 4 * t), "r"(c), "r"(d));
    }
}

__constant__ int cdata[8];

__device__ __noinline__ void fill(int* p, int n, int v) {
    for (int i = 0; i < n; ++i) p[i] = v + i;
}

__device__ __noinline__ int sum_of(const int* p, int n, int* flags) {
    int s = 0;
    for (int i = 0; i < n; ++i) s += p[i];
    flags[0] = __isGlobal(p);
    flags[1] = __isShared(p);
    flags[2] = __isLocal(p);
    flags[3] = __isConstant(p);
    return s;
}

extern "C" __global__ void generic_spaces(int* g, int* out) {
    __shared__ int sh[64 * 8];
    int loc[8];
    int t = threadIdx.x;
    int* o = out + 15 * t;
    fill(sh + 8 * t, 8, 100 * t);     // generic stores to shared memory
    fill(loc, 8, 1000 * t);           // ... to this thread's local memory
    fill(g + 8 * t, 8, 7 * t);        // ... to global memory
    o[0] = sum_of(sh + 8 * t, 8, o + 3);
    o[1] = sum_of(loc, 8, o + 7);
    o[2] = sum_of(g + 8 * t, 8, o + 11);
    sum_of(cdata, 8, o + 11);         // only the flags: constant memory
}
"""


@pytest.fixture(scope="module")
def cuda():
    return module_of(CUDA)


# n coprime with the scatter stride 7: with 77, threads t and t + 11 stored to one element,
# whose winner depended on which block ran last (CI saw the other one once)
@pytest.mark.parametrize("n,block", [(256, 128), (79, 64), (1000, 96)])
def test_vector_loads_and_stores(cuda, n, block):
    a = RNG.standard_normal((n, 4)).astype(np.float32)
    c = RNG.integers(-(2**31), 2**31, (n, 2)).astype(np.int32)
    e = RNG.standard_normal((n, 2))
    g = RNG.integers(0, 256, (n, 4)).astype(np.uint8)
    s = RNG.integers(-(2**15), 2**15, (n + 1, 2)).astype(np.int16)
    b, d, f, h, u = (np.zeros_like(x) for x in (a, c, e, g, s))
    run(cuda, "vec_copy", (n + block - 1) // block, block, a, b, c, d, e, f, g, h, s, u, np.int32(n))
    assert (b == a).all()
    assert (d == c[::-1]).all()
    want_f = np.zeros_like(e)
    want_f[(np.arange(n) * 7) % n] = e
    assert (f == want_f).all()
    assert (h == g[(np.arange(n) * 5) % n]).all()
    assert (u[:n] == s[np.arange(n) ^ 1]).all()


def test_volatile_warp_synchronous_sum(cuda):
    x = RNG.integers(-1000, 1000, 32 * 20).astype(np.int32)
    out = np.zeros(20, dtype=np.int32)
    run(cuda, "volatile_warp_sum", 20, 32, x, out)
    assert out.tolist() == x.reshape(20, 32).sum(axis=1).tolist()


@pytest.mark.parametrize("use_volatile", [1, 0])
def test_chained_scan_waits_on_flags(cuda, use_volatile):
    """Volatile / acquire loads in a spin loop see the other block's release store."""
    grid, block = 96, 64
    x = RNG.integers(0, 1000, grid * block).astype(np.uint32)
    out = np.zeros_like(x)
    flags = np.zeros(grid, dtype=np.uint32)
    sums = np.zeros(grid, dtype=np.uint32)
    ticket = np.zeros(1, dtype=np.uint32)
    spins = np.zeros(grid, dtype=np.uint32)
    run(cuda, "chained_scan", grid, block, x, out, flags, sums, ticket, np.int32(use_volatile), spins)
    assert (spins <= (1 << 27)).all(), "a wait loop never saw the flag change"
    block_sums = x.reshape(grid, block).sum(axis=1)
    want = np.repeat(np.concatenate([[0], np.cumsum(block_sums)[:-1]]), block).astype(np.uint32)
    assert (out == want).all()
    assert (sums == np.cumsum(block_sums).astype(np.uint32)).all()


def test_relaxed_and_volatile_vector_accesses(cuda):
    n = 100
    p = RNG.integers(0, 2**32, 2 * n + 4 * n, dtype=np.uint64).astype(np.uint32)
    q = np.zeros(2 * n + 4 * n, dtype=np.uint32)
    run(cuda, "ordered_vectors", 2, 64, p, q, np.int32(n))
    pairs = p[:2 * n].reshape(n, 2)
    assert (q[:2 * n].reshape(n, 2) == pairs[::-1, ::-1]).all()
    tail = q[2 * n:].reshape(n, 4)
    for t in range(n):
        quad = p[4 * (t // 2):4 * (t // 2) + 4]
        if t & 1:
            assert tail[t].tolist() == quad[::-1].tolist()
        else:
            assert tail[t].tolist() == [quad[2], quad[3], 0, 0]


def test_generic_addresses_of_every_space(cuda):
    n = 48
    g = np.zeros(8 * n, dtype=np.int32)
    out = np.zeros(15 * n, dtype=np.int32)
    run(cuda, "generic_spaces", 1, n, g, out)
    out = out.reshape(n, 15)
    for t in range(n):
        assert out[t, :3].tolist() == [800 * t + 28, 8000 * t + 28, 56 * t + 28]
        assert out[t, 3:7].tolist() == [0, 1, 0, 0], "shared"
        assert out[t, 7:11].tolist() == [0, 0, 1, 0], "local"
        assert out[t, 11:15].tolist() == [0, 0, 0, 1], "constant (global flags overwritten)"
    assert g.reshape(n, 8).tolist() == [[7 * t + i for i in range(8)] for t in range(n)]


WIDE = """
.version 8.6
.target sm_100
.address_size 64
.visible .entry wide(.param .u64 pa, .param .u64 pb)
{
    .reg .b128 %q<3>;
    .reg .b64 %rd<12>;
    .reg .b32 %r<12>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 32;
    ld.param.u64 %rd2, [pa];
    add.u64 %rd2, %rd2, %rd1;
    ld.param.u64 %rd3, [pb];
    add.u64 %rd3, %rd3, %rd1;
    ld.global.b128 %q1, [%rd2];
    mov.b128 {%rd4, %rd5}, %q1;
    mov.b128 %q2, {%rd5, %rd4};
    st.global.b128 [%rd3+16], %q2;
    ld.global.v8.b32 {%r2, %r3, %r4, %r5, _, _, %r6, %r7}, [%rd2];
    st.global.v4.b32 [%rd3], {%r7, %r6, %r5, %r4};
    ret;
}
"""


def test_b128_and_v8_accesses():
    n = 64
    a = RNG.integers(0, 2**32, (n, 8), dtype=np.uint64).astype(np.uint32)
    b = np.zeros_like(a)
    run(ptx_module(WIDE), "wide", 1, n, a, b)
    assert (b[:, 4:6] == a[:, 2:4]).all() and (b[:, 6:8] == a[:, 0:2]).all()
    assert (b[:, :4] == a[:, [7, 6, 3, 2]]).all()
