"""Accesses only a few known lanes of a warp can make (passes/lane_bounds.py: halos under
`if (threadIdx.x == 0)`), done as a scalar access per lane (emit._sparse_load/_sparse_store),
and lane masks as vectors (emit.mask_vec) both where the host has AVX-512 mask registers and
where it has not (AVX2: lane bits tested in a splat): the pass's lanes for nvcc's halo code,
and kernels' answers against host computations, for block shapes whose %tid.x is lane % ntid.x,
lane modulo 32, or unknown, partial warps included."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import jacobi_ref, jacobi_source, needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler, emit, jit
from cuport.passes import lane_bounds

pytestmark = needs_nvcc

SOURCE = jacobi_source("jacobi") + r"""

// each row of a BX x BY block: its first and last thread add the row's neighbours in `in`
// (global, from a row of the block's own shared copy) to their own element; the others
// copy theirs. Guards mix a lane test with data (x > 0, x + 1 < n)
#define EDGES(NAME, BX, BY)                                                                \
extern "C" __global__ void NAME(const int* in, int* out, int n) {                          \
  __shared__ int s[BY][BX];                                                                \
  int tx = threadIdx.x, ty = threadIdx.y;                                                  \
  int x = blockIdx.x * BX + tx, y = blockIdx.y * BY + ty;                                  \
  int v = x < n ? in[y * n + x] : 0;                                                       \
  s[ty][tx] = v;                                                                           \
  __syncthreads();                                                                         \
  if (x >= n) return;                                                                      \
  if (tx == 0 && x > 0) v += in[y * n + x - 1] * 3;                                        \
  if (tx == BX - 1 && x + 1 < n) v += in[y * n + x + 1] * 5;                               \
  if (ty == 0) v += s[BY - 1][tx] * 7;                                                     \
  out[y * n + x] = v;                                                                      \
}
EDGES(edges16x16, 16, 16)
EDGES(edges8x8, 8, 8)
EDGES(edges4x8, 4, 8)
EDGES(edges64x2, 64, 2)
EDGES(edges16x3, 16, 3)
EDGES(edges24x2, 24, 2)

// %laneid: one lane of each warp loads its neighbour's element, another one 31 lanes back,
// and one lane stores into a second array
extern "C" __global__ void one_lane(const int* in, int* out, int* extra) {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = t;
  if (lane == 5) v = in[t + 1] * 2;
  if ((threadIdx.x & 31) == 31) out[t] = v + in[t - 31];
  else out[t] = v;
  if (lane == 9) extra[t] = v * 3;
}
"""

SHAPES = {"edges16x16": (16, 16), "edges8x8": (8, 8), "edges4x8": (4, 8), "edges64x2": (64, 2),
          "edges16x3": (16, 3), "edges24x2": (24, 2)}


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "sparse_lanes", SOURCE)


@pytest.fixture(params=[True, False], ids=["mask-registers", "no-mask-registers"])
def masks(request, monkeypatch):
    """Kernels compiled with AVX-512's mask registers and as for a host without them (the
    code runs on either: only the way masks are made differs); no kernel cache, so that
    each is compiled the way asked for."""
    monkeypatch.setattr(jit, "mask_registers", lambda: request.param)
    monkeypatch.setenv("CUPORT_CACHE", "0")
    return request.param


@pytest.fixture
def sparse_counts(monkeypatch):
    """How many loads and stores were emitted as scalar accesses per lane."""
    counts = {"ld": 0, "st": 0}
    real_ld, real_st = emit.FunctionEmitter._sparse_load, emit.FunctionEmitter._sparse_store

    def ld(self, *a, **k):
        counts["ld"] += 1
        return real_ld(self, *a, **k)

    def st(self, *a, **k):
        counts["st"] += 1
        return real_st(self, *a, **k)
    monkeypatch.setattr(emit.FunctionEmitter, "_sparse_load", ld)
    monkeypatch.setattr(emit.FunctionEmitter, "_sparse_store", st)
    return counts


def _bounds(ptx: str, kernel: str, block) -> tuple[lane_bounds.LaneBounds, list]:
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
    compiler.run_pipeline(mc, until="predicate")
    g = mc.kernel_cfg
    return lane_bounds.analyze(g, block), [(b.index, i) for b in g.blocks for i in b.instrs]


def _lanes(mask: int) -> list[int]:
    return [i for i in range(32) if mask >> i & 1]


def test_jacobi_halo_lanes(ptx):
    lb, instrs = _bounds(ptx, "jacobi", (16, 16, 1))
    halo = {}
    for blk, ins in instrs:
        if ins.op in ("ld", "st") and ins.mods[0] in ("global", "shared") and ins.guard is not None:
            halo.setdefault(ins.op + "." + ins.mods[0], []).append(_lanes(lb.lanes(blk, ins)))
    # the loads of the four sides and their stores into the tile: x sides in lanes 0 and 16
    # (tx == 0) and 15 and 31 (tx == 15), y sides in the first and second half of the warp
    # (ty == 0 modulo 2, ty == 15)
    x_sides = [[0, 16], [15, 31]]
    y_sides = [list(range(16)), list(range(16, 32))]
    assert halo["ld.global"][1:] == x_sides + y_sides
    assert halo["st.shared"] == x_sides + y_sides


def test_lane_congruences():
    # ntid.x 64: %tid.x is the lane modulo 32, so tid.x == 0 may hold in lane 0 only, and
    # tid.x & 31 is the lane itself; ntid.x 24: nothing is known
    assert lane_bounds.special_lanes("%tid.x", (64, 2, 1)) == lane_bounds.Known(tuple(range(32)), 5)
    assert lane_bounds.special_lanes("%tid.x", (24, 2, 1)) is None
    assert lane_bounds.special_lanes("%tid.y", (4, 8, 1)).vals == tuple(i // 4 for i in range(32))


def _edges_ref(x: np.ndarray, bx: int, by: int, n: int, rows: int) -> np.ndarray:
    out = np.zeros_like(x)
    for y in range(rows):
        for xx in range(n):
            tx, ty = xx % bx, y % by
            v = int(x[y, xx])
            if tx == 0 and xx > 0:
                v += int(x[y, xx - 1]) * 3
            if tx == bx - 1 and xx + 1 < n:
                v += int(x[y, xx + 1]) * 5
            if ty == 0:
                yy = y - ty + by - 1  # the block's last row (its shared copy holds 0 past n)
                v += (int(x[yy, xx]) if xx < n else 0) * 7
            out[y, xx] = v
    return out


@pytest.mark.parametrize("kernel", sorted(SHAPES))
def test_edges_match_host(ptx, kernel, masks, sparse_counts):
    bx, by = SHAPES[kernel]
    n = 2 * bx + bx // 2 + 1  # a partial block column, with every row of it present
    gx, gy = (n + bx - 1) // bx, 3
    rows = gy * by
    x = np.random.default_rng(bx * 100 + by).integers(-1000, 1000, (rows, n), dtype=np.int32)
    out = np.full((rows, n), -7, np.int32)
    cuport.Module(ptx).kernel(kernel)((gx, gy), (bx, by), (x, out, n))
    assert out.tolist() == _edges_ref(x, bx, by, n, rows).tolist()
    # the first and last thread of each row are 1 (lane 0 modulo 32), 2 (16 wide) or 4 lanes
    # of a warp (8 wide): scalar accesses; 4 wide, the last thread's are 8 lanes; 24 wide,
    # %tid.x is no function of the lane: warp-wide code
    expect_ld = {"edges16x16": 2, "edges8x8": 2, "edges64x2": 2, "edges16x3": 2, "edges4x8": 1,
                 "edges24x2": 0}[kernel]
    assert sparse_counts["ld"] == expect_ld


def test_jacobi_matches_host(ptx, masks, sparse_counts):
    for n in (16, 40, 64):
        u = np.random.default_rng(n).random((n, n), dtype=np.float32)
        v = np.zeros_like(u)
        g = (n + 15) // 16
        cuport.Module(ptx).kernel("jacobi")((g, g), (16, 16), (u, v, n))
        ref = jacobi_ref(u)
        assert np.array_equal(v, ref), n
    assert sparse_counts["ld"] >= 2 and sparse_counts["st"] >= 2


def test_one_lane_matches_host(ptx, masks, sparse_counts):
    nb, block = 3, 96
    x = np.arange(nb * block + 1, dtype=np.int32) * 7 - 50
    out = np.zeros(nb * block, np.int32)
    extra = np.full(nb * block, -1, np.int32)
    cuport.Module(ptx).kernel("one_lane")(nb, block, (x, out, extra))
    expect = []
    for t in range(nb * block):
        v = int(x[t + 1]) * 2 if t % 32 == 5 else t
        expect.append(v + int(x[t - 31]) if t % 32 == 31 else v)
    assert out.tolist() == expect
    assert extra.tolist() == [t * 3 if t % 32 == 9 else -1 for t in range(nb * block)]
    assert sparse_counts["ld"] == 2 and sparse_counts["st"] == 1
