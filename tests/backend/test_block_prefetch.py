"""Prefetching a 2-D tile's rows, and a barrier kernel's segments, some blocks ahead
(emit._prefetch_ahead, from passes/shapes.block_strides): how registers move from a block to
the next along x, which accesses prefetch and how far, and that a tiled matrix product's and
a segmented scan's answers do not change."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler, emit, prefetch_spread
from cuport.passes import shapes

pytestmark = needs_nvcc

SOURCE = r"""
// a tile of T x T floats per block: its rows are T floats (one 64-byte run for T = 16) of
// rows n apart, and the next block along x reads the next T floats of each
#define T 16
extern "C" __global__ void tile_copy(const float* in, float* out, int n) {
  int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
  if (x < n && y < n) out[y * n + x] = in[y * n + x] * 2.0f;
}

// blockIdx.x picks rows, not columns: the next block's address is 16 rows further
extern "C" __global__ void row_blocks(const float* in, float* out, int n) {
  int x = threadIdx.x, y = blockIdx.x * T + threadIdx.y;
  if (x < n && y < n) out[y * n + x] = in[y * n + x] + 1.0f;
}

// one thread per element of a 1-D array: a warp's addresses are contiguous, nothing to do
extern "C" __global__ void scale(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 3.0f;
}

// bench/kernels/sgemm.cu: B's tile is read down a column strip, the loop's address moving by
// 16 rows per step and by 16 floats per block along x
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int n) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += T) {
    As[ty][tx] = (row < n && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
    Bs[ty][tx] = (col < n && k0 + ty < n) ? B[(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}

// bench/kernels/block_scan.cu: each block loads a 1024-int segment, scans it in shared memory
// between barriers and stores it; the next block's segment is 4 KiB further
extern "C" __global__ void block_scan(const int* in, int* out, int n) {
  __shared__ int buf[2][1024];
  int t = threadIdx.x, i = blockIdx.x * 1024 + t;
  int p = 0;
  buf[0][t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < 1024; off <<= 1) {
    buf[1 - p][t] = buf[p][t] + (t >= off ? buf[p][t - off] : 0);
    p = 1 - p;
    __syncthreads();
  }
  if (i < n) out[i] = buf[p][t];
}

// three segments in and one out, one region between: eight lines a warp for one host
// region's warp, more than prefetch_spread spreads
extern "C" __global__ void many_segments(const int* a, const int* b, const int* c, int* out) {
  __shared__ int s[1024];
  int t = threadIdx.x, i = blockIdx.x * 1024 + t;
  s[t] = a[i] + b[i] + c[i];
  __syncthreads();
  int v = s[1023 - t];
  __syncthreads();
  out[i] = v + s[t ^ 1];
}

// the same segments summed by a loop over them: a stream the CPU's prefetchers follow
extern "C" __global__ void segment_sums(const int* in, int* out, int n, int reps) {
  __shared__ int s[256];
  int t = threadIdx.x, acc = 0;
  for (int r = 0; r < reps; r++) acc += in[(blockIdx.x * reps + r) * 256 + t];
  s[t] = acc;
  __syncthreads();
  out[blockIdx.x * 256 + t] = s[255 - t];
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "block_prefetch", SOURCE)


def _compiled(ptx: str, kernel: str, block, step: str):
    return compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block), until=step)


def _address_strides(ptx: str, kernel: str, block) -> list[int]:
    """The block strides of the global accesses' address registers, in program order."""
    mc = _compiled(ptx, kernel, block, "predicate")
    strides = shapes.block_strides(mc.kernel_cfg)
    out = []
    for b in mc.kernel_cfg.blocks:
        for ins in b.instrs:
            if ins.op in ("ld", "st") and "global" in ins.mods:
                mem = next(a for a in ins.args if hasattr(a, "offset"))
                out.append(strides.get(mem.base.name, 0))
    return out


def _prefetches(ptx: str, kernel: str, block) -> list[tuple[int, int]]:
    """(read 0 / write 1, byte offset from the run's address) of each prefetch in the IR."""
    mc = _compiled(ptx, kernel, block, "emit")
    text = str(mc.llmod)
    out = []
    for m in re.finditer(r"getelementptr i8, ptr %\"?[\w.]+\"?, i64 (-?\d+)\n\s*call void @\"?llvm\.prefetch\.p0\"?"
                         r"\(ptr %\"?[\w.]+\"?, i32 (\d)", text):
        out.append((int(m.group(2)), int(m.group(1))))
    return out


def test_block_strides(ptx):
    # tile_copy: 16 floats per block along x, for the load and the store
    assert _address_strides(ptx, "tile_copy", (16, 16, 1)) == [64, 64]
    # row_blocks: 16 rows of n floats per block: no constant
    assert _address_strides(ptx, "row_blocks", (16, 16, 1)) == [0, 0]
    # scale: blockIdx.x * blockDim.x, %ntid.x no constant to the analysis either
    assert _address_strides(ptx, "scale", (256, 1, 1)) == [0, 0]
    # sgemm: A's tile does not move along x, B's and C's do
    assert _address_strides(ptx, "sgemm", (16, 16, 1)) == [0, 64, 64]


def test_tile_rows_prefetch_blocks_ahead(ptx, monkeypatch):
    ahead = 64 * emit.PREFETCH_BLOCKS
    # the load's two runs (rows y and y + 1 of a warp), then the store's, for writing
    assert sorted(_prefetches(ptx, "tile_copy", (16, 16, 1))) == [(0, ahead)] * 2 + [(1, ahead)] * 2
    monkeypatch.setenv("CUPORT_NO_PREFETCH", "1")
    assert _prefetches(ptx, "tile_copy", (16, 16, 1)) == []
    monkeypatch.delenv("CUPORT_NO_PREFETCH")
    # a warp's 32 lanes in one row: the CPU's own prefetchers follow it
    assert _prefetches(ptx, "tile_copy", (32, 8, 1)) == []
    assert _prefetches(ptx, "row_blocks", (16, 16, 1)) == []
    assert _prefetches(ptx, "scale", (256, 1, 1)) == []


def test_sgemm_with_prefetches_matches_host(ptx):
    # B's tile (read) and C (written); the loads before the first barrier and the store are
    # emitted twice (region loops: reached from the entry and from the second barrier)
    assert set(_prefetches(ptx, "sgemm", (16, 16, 1))) == {(0, 64 * emit.PREFETCH_BLOCKS),
                                                           (1, 64 * emit.PREFETCH_BLOCKS)}
    for n in (48, 100):
        rng = np.random.default_rng(n)
        a = rng.integers(-8, 8, (n, n)).astype(np.float32)
        b = rng.integers(-8, 8, (n, n)).astype(np.float32)
        c = np.zeros((n, n), np.float32)
        g = (n + 15) // 16
        cuport.Module(ptx).kernel("sgemm")((g, g), (16, 16), (a, b, c, n))
        assert c.tolist() == (a.astype(np.float64) @ b).tolist()  # small integers: exact


def test_barrier_segments_prefetch_every_line_ahead(ptx, monkeypatch):
    # block_scan's load and store, a warp's 32 ints each (two 64-byte lines): four lines,
    # each prefetched for reading by the warps of one of the first 4 step regions, none at
    # the accesses (prefetch_spread.py)
    ahead = 4096 * prefetch_spread.SPREAD_BLOCKS
    assert sorted(_prefetches(ptx, "block_scan", (1024, 1, 1))) == [(0, ahead)] * 2 + [(0, ahead + 64)] * 2
    # not spread: at the accesses, RUN_PREFETCH_BLOCKS ahead, the store's for writing
    monkeypatch.setenv("CUPORT_NO_SPREAD", "1")
    ahead = 4096 * emit.RUN_PREFETCH_BLOCKS
    assert sorted(_prefetches(ptx, "block_scan", (1024, 1, 1))) == [(0, ahead), (0, ahead + 64),
                                                                    (1, ahead), (1, ahead + 64)]
    monkeypatch.delenv("CUPORT_NO_SPREAD")
    # eight lines a warp, one region (of three) without accesses: at the accesses
    assert sorted(_prefetches(ptx, "many_segments", (1024, 1, 1))) == [(0, ahead)] * 3 + [(0, ahead + 64)] * 3 + [
        (1, ahead), (1, ahead + 64)]
    # two regions, none between the accesses to spread over; the loop's loads stream: only
    # the store after the barrier prefetches, at the access
    assert sorted(_prefetches(ptx, "segment_sums", (256, 1, 1))) == [(1, 1024 * emit.RUN_PREFETCH_BLOCKS),
                                                                     (1, 1024 * emit.RUN_PREFETCH_BLOCKS + 64)]


@pytest.mark.parametrize("n", [1 << 14, 3 * 1024 + 517])
def test_block_scan_with_prefetches_matches_host(ptx, n):
    # the last blocks prefetch past the arrays' ends (a hint: never a fault)
    x = np.random.default_rng(n).integers(-100, 100, n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    cuport.Module(ptx).kernel("block_scan")((n + 1023) // 1024, 1024, (x, out, n))
    pad = np.zeros(-n % 1024, np.int32)
    ref = np.cumsum(np.concatenate([x, pad]).reshape(-1, 1024), axis=1, dtype=np.int32).reshape(-1)[:n]
    assert out.tolist() == ref.tolist()
