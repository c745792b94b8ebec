"""Guards the same along each run of ntid.x lanes (a 2-D block's rows: `ty == k`), tested from
one lane per run in scalar code, so that a warp jumps over a predicated stretch
(lane_forms.some_lane_runs); and halo columns' lanes loading
without selects where every one of them executes (emit._sparse_load). Kernels' answers against host computations
for block shapes with 1, 2 and 4 runs a warp and partial warps, grid edges where one run of a
warp is inside the grid and the next is not; both ways of making masks."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import jacobi_ref, jacobi_source, needs_nvcc, ptx_of_source

import cuport
from cuport.backends.cpu import emit, jit, lane_forms

pytestmark = needs_nvcc

SOURCE = jacobi_source("jacobi") + r"""
// a BX x BY tile with the row above it; guards on the row (y < n, ty == k, y >= k) mixed with
// the column (x < n); `if (ty == 0)` and `if (ty == k)` are stretches of two accesses
#define ROWS(NAME, BX, BY)                                                                 \
extern "C" __global__ void NAME(const int* in, int* out, int n, int k) {                   \
  __shared__ int s[BY + 1][BX];                                                            \
  int tx = threadIdx.x, ty = threadIdx.y;                                                  \
  int x = blockIdx.x * BX + tx, y = blockIdx.y * BY + ty;                                  \
  s[ty + 1][tx] = (x < n && y < n) ? in[y * n + x] : -1;                                   \
  if (ty == 0) s[0][tx] = (y > 0 && x < n) ? in[(y - 1) * n + x] : 0;                      \
  if (ty == k) s[ty + 1][tx] = in[(y % n) * n + x % n] * 7;                                \
  __syncthreads();                                                                         \
  if (y < n && x < n) {                                                                    \
    int r = s[ty][tx] + 3 * s[ty + 1][tx];                                                 \
    if (y >= k) r ^= 0x55;                                                                 \
    out[y * n + x] = r;                                                                    \
  }                                                                                        \
}
ROWS(rows16x16, 16, 16)
ROWS(rows8x8, 8, 8)
ROWS(rows16x3, 16, 3)
ROWS(rows4x8, 4, 8)
ROWS(rows32x4, 32, 4)

// a 16x16 block's halo columns read straight back, loaded in the rows above m: the left
// one's default is zero, the right one's is not
extern "C" __global__ void columns(const int* in, int* out, int n, int m) {
  __shared__ int s[16][18];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * 16 + tx, y = blockIdx.y * 16 + ty;
  if (tx == 0) s[ty][0] = (x > 0 && y < m) ? in[y * n + x - 1] : 0;
  if (tx == 15) s[ty][17] = (x + 1 < n && y < m) ? in[y * n + x + 1] : -4;
  __syncthreads();
  if (x < n && y < n) out[y * n + x] = s[ty][0] * 3 + s[ty][17] * 5;
}
"""

SHAPES = {"rows16x16": (16, 16), "rows8x8": (8, 8), "rows16x3": (16, 3), "rows4x8": (4, 8),
          "rows32x4": (32, 4)}


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "run_lanes", SOURCE)


@pytest.fixture(params=[True, False], ids=["mask-registers", "no-mask-registers"])
def masks(request, monkeypatch):
    """Kernels compiled with AVX-512's mask registers and as for a host without them; no
    kernel cache, so that each is compiled the way asked for."""
    monkeypatch.setattr(jit, "mask_registers", lambda: request.param)
    monkeypatch.setenv("CUPORT_CACHE", "0")
    return request.param


@pytest.fixture
def made(monkeypatch):
    """How many stretch tests were made run by run, and how many few-lane loads load
    without selects where all their lanes execute."""
    counts = {"stretch": 0, "all_lanes": 0}
    real_any, real_ld = lane_forms.LaneForms.some_lane_runs, emit.FunctionEmitter._sparse_load

    def any_(self, *a):
        v = real_any(self, *a)
        counts["stretch"] += v is not None
        return v

    def ld(self, *a):
        v = real_ld(self, *a)
        counts["all_lanes"] += getattr(v, "cuport_zero_off", False)
        return v
    monkeypatch.setattr(lane_forms.LaneForms, "some_lane_runs", any_)
    monkeypatch.setattr(emit.FunctionEmitter, "_sparse_load", ld)
    return counts


def _tile(x: np.ndarray, n: int, k: int, top: int, t: int, xx: int) -> int:
    """Row t of the ROWS kernel's shared tile after the barrier, in column xx, for the block
    whose first row is `top`."""
    yy = top + t - 1
    if t == 0:
        return int(x[yy, xx]) if yy >= 0 else 0
    if t - 1 == k:
        return int(x[yy % n, xx % n]) * 7
    return int(x[yy, xx]) if yy < n else -1


def _rows_ref(x: np.ndarray, by: int, n: int, k: int) -> np.ndarray:
    """The ROWS kernel on the host."""
    out = np.full((n, n), -5, np.int64)
    for y in range(n):
        for xx in range(n):
            ty = y % by
            r = _tile(x, n, k, y - ty, ty, xx) + 3 * _tile(x, n, k, y - ty, ty + 1, xx)
            if y >= k:
                r ^= 0x55
            out[y, xx] = r
    return out


@pytest.mark.parametrize("kernel", sorted(SHAPES))
def test_rows_match_host(ptx, kernel, masks, made):
    bx, by = SHAPES[kernel]
    kern = cuport.Module(ptx).kernel(kernel)
    for n, k in ((2 * by + by // 2 + 1, 1), (3 * by - 1, 0), (2 * by + 1, by - 1)):
        gx, gy = (n + bx - 1) // bx, (n + by - 1) // by
        x = np.random.default_rng(n * 7 + k).integers(-1000, 1000, (n, n), dtype=np.int32)
        out = np.full((n, n), -5, np.int32)
        kern((gx, gy), (bx, by), (x, out, n, k))
        assert out.tolist() == _rows_ref(x, by, n, k).tolist(), (n, k)
    # `if (ty == 0)` and `if (ty == k)`; 32 wide, %tid.y is the same in the whole warp, and
    # so are the guards; 16x3, %tid.y has no form (blocks of 48 threads: a warp's rows are no
    # function of the lane)
    assert made["stretch"] == (0 if kernel in ("rows32x4", "rows16x3") else 2)


def test_halo_columns(ptx, masks, made):
    """Rows up to m odd: halo columns where lane 0 loads and lane 16 does not, or neither
    (x == 0, the right edge, the rows past m), or both."""
    kern = cuport.Module(ptx).kernel("columns")
    for n, m in ((17, 9), (41, 41), (32, 21), (47, 1), (50, 35)):
        x = np.random.default_rng(n).integers(-1000, 1000, (n, n), dtype=np.int32)
        out = np.full((n, n), -5, np.int32)
        g = (n + 15) // 16
        kern((g, g), (16, 16), (x, out, n, m))
        ref = np.zeros((n, n), np.int64)
        for yy in range(n):
            for xx in range(n):
                left, right = xx - xx % 16 - 1, xx - xx % 16 + 16
                ref[yy, xx] = (int(x[yy, left]) if left >= 0 and yy < m else 0) * 3 + \
                    (int(x[yy, right]) if right < n and yy < m else -4) * 5
        assert out.tolist() == ref.tolist(), n
    assert made["all_lanes"] == 2  # (lanes 0 and 16, lanes 15 and 31)


def test_jacobi_halo_edges(ptx, masks, made):
    kern = cuport.Module(ptx).kernel("jacobi")
    for n in (17, 41, 32, 47):
        u = np.random.default_rng(n).random((n, n), dtype=np.float32)
        v = np.zeros_like(u)
        g = (n + 15) // 16
        kern((g, g), (16, 16), (u, v, n))
        assert np.array_equal(v, jacobi_ref(u)), n
    # the two halo columns; `if (ty == 0)` and `if (ty == 15)`
    assert made["all_lanes"] == 2
    assert made["stretch"] == 2
