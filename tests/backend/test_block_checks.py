"""Address checks made once per block (lane_forms.hoist_form_checks): a global access whose
lanes are contiguous in runs is one vector per run only where the lanes' 32-bit index does
not wrap and no run wraps around 2^64; a region loop checks the ranges of all its warps at
once, where the leaves move by a fixed step from warp to warp, and each warp checks its own
only where that fails. Checked against host computations: a 16x16 stencil at the grid's
edges (partial blocks, halos), and indices that pass 2^32 inside a block, so that some of
its warps are one vector a run and others gather or fault (in 16x16 blocks; the 1-D kernels,
whose warps are one run each, keep their checks per warp: the same results)."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import jacobi_ref, jacobi_source, needs_nvcc, ptx_of_source

import cuport

pytestmark = needs_nvcc

SOURCE = jacobi_source("jacobi") + r"""

// base + row * w + column in 32 bits, in 16x16 blocks, for the first `count` threads
extern "C" __global__ void wrap2d(const float* in, float* out, unsigned w, unsigned base, unsigned count) {
  unsigned lin = (blockIdx.y * 16 + threadIdx.y) * w + blockIdx.x * 16 + threadIdx.x;
  unsigned i = base + lin;
  if (lin < count) out[i] = in[i] + 1.0f;
}

// the same in 1-D blocks of 256 (the warp's first thread is 32 * its index)
extern "C" __global__ void wrap1d(const float* in, float* out, unsigned base, unsigned count) {
  unsigned lin = blockIdx.x * 256 + threadIdx.x;
  unsigned i = base + lin;
  if (lin < count) out[i] = in[i] + 1.0f;
}
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return cuport.Module(ptx_of_source(tmp_path_factory, "block_checks", SOURCE))


@pytest.mark.parametrize("n", [16, 40, 64, 100])
def test_stencil_edges(module, n):
    """Every cell, the grid's edges and the partial blocks past them included."""
    u = np.random.default_rng(n).random((n, n), dtype=np.float32)
    v = np.full_like(u, -1.0)
    g = (n + 15) // 16
    module.kernel("jacobi")((g, g), (16, 16), (u, v, n))
    assert np.array_equal(v, jacobi_ref(u))


def _shifted(a: np.ndarray, base: int) -> int:
    """The address `p` with p + 4 * base at a[0]: index base + k reads a[k]."""
    return a.ctypes.data - 4 * base


# (the first index past 2^32: in the first block's first warp, in its last warp, in a
# later block's second warp, after the last thread)
@pytest.mark.parametrize("first_wrapped", [5, 250, 300, 512])
def test_index_passes_2_32_in_a_block(module, first_wrapped):
    """The threads whose index is past 2^32 do not run; the others' results."""
    base = 2**32 - first_wrapped
    x = np.random.default_rng(first_wrapped).random(512, dtype=np.float32)
    out = np.full(512, -1.0, np.float32)
    ref = np.full(512, -1.0, np.float32)
    ref[:first_wrapped] = x[:first_wrapped] + 1.0
    module.kernel("wrap2d")((1, 2), (16, 16), (_shifted(x, base), _shifted(out, base), 16, base, first_wrapped))
    assert np.array_equal(out, ref)
    out[:] = -1.0
    module.kernel("wrap1d")(2, 256, (_shifted(x, base), _shifted(out, base), base, first_wrapped))
    assert np.array_equal(out, ref)


def test_rows_far_apart(module):
    """Rows 2^16 floats apart (a row stride the warps' step multiplies): one vector a run."""
    w = 1 << 16
    x = np.zeros(32 * w, np.float32)
    x[::w] = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    module.kernel("wrap2d")((1, 2), (16, 16), (x, out, w, 0, 32 * w))
    rows = (np.arange(32) * w)[:, None] + np.arange(16)
    assert np.array_equal(out[rows], x[rows] + 1.0)


@pytest.mark.parametrize("kernel", ["wrap2d", "wrap1d"])
def test_wrapped_lanes_fault(module, kernel):
    """Threads 300 to 303 (the second block's second warp; in 16x16 blocks its first run)
    have indices past 2^32, 16 GiB below `in`: the launch fails, although their run's first
    lane and every other warp of the block are in range (one vector from there would read
    in[300])."""
    base = 2**32 - 300
    x = np.zeros(512, np.float32)
    out = np.zeros(512, np.float32)
    args = (_shifted(x, base), _shifted(out, base)) + ((16,) if kernel == "wrap2d" else ()) + (base, 304)
    with pytest.raises(cuport.BackendError, match="illegal address"):
        if kernel == "wrap2d":
            module.kernel(kernel)((1, 2), (16, 16), args)
        else:
            module.kernel(kernel)(2, 256, args)
