"""A float result written to some lanes only is blended as floats (emit._blend): x86 then
makes `acc += x` in a loop that lanes leave one by one a masked add. The lanes that do not
add keep their register's bits exactly: -0.0 stays -0.0 (an unmasked add of the masked
load's zero would make it +0.0), and a NaN's payload stays where no arithmetic reads it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler

pytestmark = needs_nvcc

SOURCE = r"""
// bench/kernels/reduce.cu's grid-stride loop with a bound per lane, its sum from -0.0: lanes
// leave the loop one by one, and some never enter it
extern "C" __global__ void lane_sums(const float* in, const int* ends, float* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = -0.0f;
  for (int i = t; i < ends[t]; i += gridDim.x * blockDim.x) acc += in[i];
  out[t] = acc;
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "float_blend", SOURCE)


def test_loop_blend_is_a_float_select(ptx):
    mc = compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), "lane_sums", (256, 1, 1)),
                               until="emit")
    text = str(mc.llmod)
    assert re.search(r"select\s+<32 x i1> %[^,]+, <32 x float>", text)


@pytest.mark.parametrize("seed", [0, 1])
def test_lanes_that_leave_keep_their_bits(ptx, seed):
    rng = np.random.default_rng(seed)
    n = 1024
    trips = rng.integers(0, 9, n).astype(np.int32)
    trips[::5] = 0  # (these lanes never add: their -0.0 comes back as it was)
    ends = (np.arange(n) + n * (trips - 1) + 1).astype(np.int32)  # (lane t adds x[k, t], k < trips[t])
    x = rng.integers(-64, 64, (8, n)).astype(np.float32) / np.float32(4)  # exact sums
    x[:, ::3] = -0.0  # (-0.0 + -0.0 stays -0.0)
    x.view(np.uint32)[2, ::13] = 0x7FC00123  # (a NaN with a payload: the sum's NaN is CUDA's)
    out = np.zeros(n, np.float32)
    cuport.Module(ptx).kernel("lane_sums")(n // 256, 256, (x, ends, out))
    ref = np.full(n, -0.0, np.float32)
    for k in range(8):
        ref = np.where(k < trips, ref + x[k], ref).astype(np.float32)
    ref.view(np.uint32)[np.isnan(ref)] = 0x7FFFFFFF
    assert (trips == 0).any() and np.isnan(ref).any() and np.signbit(ref[trips > 0]).any()
    assert out.view(np.uint32).tolist() == ref.view(np.uint32).tolist()
