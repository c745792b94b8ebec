"""Shared accesses `s[t - k]` under `t >= k` (lane_forms._rising_wrap): the lanes that do not
execute have addresses below the shared window, whose 32-bit offsets wrap; the others are
still one vector from the wrapped first lane's address less 2^32, which the CPU backend
loads or stores as one vector instead of a gather. Checked against the values PTX gives,
for shifts inside the first warp, at a warp's edge and past it, and a lane that does
execute below the window still fails the launch as before."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport

pytestmark = needs_nvcc

SOURCE = r"""
extern "C" __global__ void shift(const int* x, int* out, int k) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = t >= k ? s[t - k] : -1;
}

extern "C" __global__ void shift_store(const int* x, int* out, int k) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = -7;
  __syncthreads();
  if (t >= k) s[t - k] = x[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[t];
}

// Hillis-Steele as bench/kernels/block_scan.cu, the steps' count a parameter (not unrolled)
extern "C" __global__ void scan(const int* in, int* out, int steps) {
  __shared__ int buf[2][256];
  int t = threadIdx.x, p = 0;
  buf[0][t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int i = 0, off = 1; i < steps; i++, off <<= 1) {
    buf[1 - p][t] = buf[p][t] + (t >= off ? buf[p][t - off] : 0);
    p = 1 - p;
    __syncthreads();
  }
  out[blockIdx.x * 256 + t] = buf[p][t];
}

extern "C" __global__ void unguarded(const int* x, int* out, int k) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[t - k];
}
"""

SHIFTS = [0, 1, 5, 16, 31, 32, 33, 100, 255, 256, 300]


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return cuport.Module(ptx_of_source(tmp_path_factory, "shared_wrap", SOURCE))


def _x() -> np.ndarray:
    return np.random.default_rng(5).integers(-1000, 1000, 512, dtype=np.int32)


@pytest.mark.parametrize("k", SHIFTS)
def test_guarded_load_below_window(module, k):
    x, out = _x(), np.zeros(512, np.int32)
    module.kernel("shift")(2, 256, (x, out, k))
    t = np.arange(256)
    ref = np.where(t >= k, x.reshape(2, 256)[:, np.clip(t - k, 0, 255)], -1)
    assert (out.reshape(2, 256) == ref).all()


@pytest.mark.parametrize("k", SHIFTS)
def test_guarded_store_below_window(module, k):
    x, out = _x(), np.zeros(512, np.int32)
    module.kernel("shift_store")(2, 256, (x, out, k))
    ref = np.full((2, 256), -7, np.int32)
    ref[:, :max(256 - k, 0)] = x.reshape(2, 256)[:, k:]
    assert (out.reshape(2, 256) == ref).all()


@pytest.mark.parametrize("steps", [1, 3, 5, 6, 8])
def test_hillis_steele(module, steps):
    x, out = _x(), np.zeros(512, np.int32)
    module.kernel("scan")(2, 256, (x, out, steps))
    ref = x.reshape(2, 256).copy()
    for i in range(steps):
        off = 1 << i
        ref[:, off:] = ref[:, off:] + ref[:, :-off]
    assert (out.reshape(2, 256) == ref).all()


def test_executing_lane_below_window_fails(module):
    """Lane 0 reads 4 bytes below the window: the launch fails, as it does on a GPU."""
    x, out = _x(), np.zeros(512, np.int32)
    with pytest.raises(cuport.BackendError, match="illegal address"):
        module.kernel("unguarded")(2, 256, (x, out, 1))
