"""numba-cuda kernels, self-checking against numpy: one PASS/FAIL line.

Run on an NVIDIA GPU as is, or on the CPU as `cuport run python numba_kernels.py` (with
numba-cuda, nvidia-cuda-nvrtc and nvidia-nvvm installed and nvidia-nvjitlink not, so
that numba-cuda links its PTX through the driver's cuLink* calls).
"""

import math
import sys

import numpy as np
from numba import cuda, float32, int32
from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32
from parts import check, failed  # (beside this program)

TPB = 16


@cuda.jit
def matmul(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for i in range((A.shape[1] + TPB - 1) // TPB):
        col, row = tx + i * TPB, ty + i * TPB
        sA[ty, tx] = A[y, col] if y < A.shape[0] and col < A.shape[1] else 0
        sB[ty, tx] = B[row, x] if x < B.shape[1] and row < B.shape[0] else 0
        cuda.syncthreads()
        for j in range(TPB):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = acc


@cuda.jit
def histogram(data, bins):
    local = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t < 64:
        local[t] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(local, data[i] % 64, 1)
    cuda.syncthreads()
    if t < 64:
        cuda.atomic.add(bins, t, local[t])


@cuda.jit
def warp_sums(x, out, maxes):
    i = cuda.grid(1)
    v = x[i] if i < x.size else float32(0.0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v
    if i < x.size:
        cuda.atomic.max(maxes, 0, x[i])


@cuda.jit(device=True)
def poly(x):
    return math.sin(x) * math.exp(-x) + math.sqrt(abs(x))


@cuda.jit
def local_arrays(x, out):
    i = cuda.grid(1)
    if i < x.size:
        loc = cuda.local.array(4, float32)
        for k in range(4):
            loc[k] = poly(x[i] + k)
        out[i] = loc[0] + loc[1] * loc[2] - loc[3]


@cuda.jit
def monte_carlo(states, hits):
    i = cuda.grid(1)
    if i < hits.size:
        x = xoroshiro128p_uniform_float32(states, i)
        y = xoroshiro128p_uniform_float32(states, i)
        hits[i] = 1 if x * x + y * y <= 1 else 0


@cuda.jit
def sequential_rows(M):
    # numba-cuda's cooperative-groups test: each row from the mirror-image column of the
    # row before it (another block's), a grid sync after each row (libcudadevrt's
    # cudaCGSynchronize); the kernel is launched cooperatively
    col = cuda.grid(1)
    g = cuda.cg.this_grid()
    for row in range(1, M.shape[0]):
        M[row, col] = M[row - 1, M.shape[1] - col - 1] + 1
        g.sync()


@cuda.reduce
def sum_reduce(a, b):
    return a + b


def tiled_matmul(rng):
    A = rng.random((100, 70), dtype=np.float32)
    B = rng.random((70, 90), dtype=np.float32)
    C = np.zeros((100, 90), dtype=np.float32)
    matmul[(6, 7), (TPB, TPB)](A, B, C)
    err = float(np.abs(C - A @ B).max())
    return err < 1e-4, f"max error {err:.2e}"


def shared_histogram(rng):
    data = rng.integers(0, 1 << 20, 200_000).astype(np.int32)
    bins = np.zeros(64, np.int32)
    histogram[32, 128](data, bins)
    return (bins == np.bincount(data % 64, minlength=64)).all()


def warp_shuffles(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    sums = np.zeros(32, np.float32)
    maxes = np.full(1, -np.inf, np.float32)
    warp_sums[4, 256](x, sums, maxes)
    padded = np.concatenate([x, np.zeros(24, np.float32)]).reshape(32, 32)
    ref = padded.sum(axis=1, dtype=np.float64)
    return np.allclose(sums, ref, atol=1e-4) and maxes[0] == x.max(), f"max {maxes[0]}"


def device_function(rng):
    v = rng.random(1000, dtype=np.float32)
    out = np.zeros_like(v)
    local_arrays[4, 256](v, out)

    def p(t):
        return np.sin(t) * np.exp(-t) + np.sqrt(np.abs(t))

    return np.allclose(out, p(v) + p(v + 1) * p(v + 2) - p(v + 3), rtol=1e-5)


def monte_carlo_pi(rng):
    n = 1 << 16
    states = create_xoroshiro128p_states(n, seed=7)
    hits = cuda.device_array(n, dtype=np.int32)
    monte_carlo[n // 256, 256](states, hits)
    pi = 4 * hits.copy_to_host().mean()
    return abs(pi - math.pi) < 0.05, f"{pi:.5f}"


def grid_sync(rng):
    # as many blocks as can wait for each other (up to 4): a device that runs fewer at once
    # (lavapipe: one a CPU core) gets a smaller grid, as a program sizing its grid would
    kernel = sequential_rows.compile("void(int32[:, ::1])")
    blocks = min(4, kernel.max_cooperative_grid_blocks(32))
    M = np.zeros((64, 32 * blocks), np.int32)
    sequential_rows[blocks, 32](M)
    return (M == np.arange(64)[:, None]).all(), f"{blocks} blocks"


def reduce(rng):
    w = np.arange(1, 100_001, dtype=np.float64)
    total = sum_reduce(w)
    return total == w.sum(), f"{total}"


def main():
    rng = np.random.default_rng(1)
    check("tiled matmul", lambda: tiled_matmul(rng))
    check("shared-memory histogram", lambda: shared_histogram(rng))
    check("warp shuffle sums, atomic max", lambda: warp_shuffles(rng))
    check("device function, local array", lambda: device_function(rng))
    check("xoroshiro128p Monte Carlo pi", lambda: monte_carlo_pi(rng))
    check("grid sync (cooperative groups)", lambda: grid_sync(rng))
    check("cuda.reduce", lambda: reduce(rng))
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
