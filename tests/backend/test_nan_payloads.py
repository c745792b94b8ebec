"""f32 NaNs made canonical where a read shows them (passes/nan_payloads.py): results of f32
arithmetic read only by f32 arithmetic and comparisons keep the host's NaN, and every value a
program can see (stores, bits moved to integers, conversions, shuffles) holds the GPU's
canonical NaN 0x7fffffff, as when each operation makes its NaN canonical. On the CPU and on
the first Vulkan device (lavapipe in CI: its f32 NaNs are x86's, as the CPU backend's)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.passes import nan_payloads
from cuport.ptx import ir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

pytestmark = needs_nvcc

SOURCE = r"""
extern "C" __global__ void chains(const float* a, const float* b, float* out, unsigned* bits,
                                  double* wide, int* flags, float p0, float p1) {
  int i = threadIdx.x;
  float x = a[i], y = b[i];
  float s = x + y;               // inf + -inf: the host's NaN is 0xffc00000
  float p = s * y;               // s read blind
  if (i & 1) p = p - x;          // a guarded write in split code
  float q = fmaf(p, x, s);
  out[4 * i] = q;                // shown by a store
  bits[i] = __float_as_uint(p);  // by a move to integer bits
  wide[i] = (double)s;           // by a conversion (which keeps a payload)
  flags[i] = (s != s) + 2 * (q < x) + 4 * (p == p);
  float acc = 0.0f;
  for (int k = 0; k < 8; k++) acc += a[(i + k) % 64] + b[k];
  out[4 * i + 1] = acc;          // once, after the loop
  out[4 * i + 2] = __shfl_down_sync(~0u, s, 1);  // by a shuffle
  float u = p0 + p1;             // uniform: one value for the warp
  out[4 * i + 3] = u * p0 + s;
}
"""

CANON = 0x7FFFFFFF


DEVICES = pytest.mark.parametrize("device", devices())


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "nans", SOURCE)


def _f32(bits) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


def _canon(v: np.ndarray) -> np.ndarray:
    """The bits of f32 values with every NaN the GPU's canonical one."""
    out = np.asarray(v, np.float32).view(np.uint32).copy()
    out[np.isnan(np.asarray(v, np.float32))] = CANON
    return out


def test_the_kernel_defers_its_arithmetic_nans(ptx):
    fn = facts.load_ptx([ptx]).functions["chains"]
    assert len(nan_payloads.deferred(fn)) >= 5  # (s, p, q's parts, the accumulator, u)


@DEVICES
@pytest.mark.parametrize("p0, p1", [(1.5, 2.0), (np.inf, -np.inf)])
def test_every_shown_nan_is_canonical(ptx, p0, p1, device):
    n = 64
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, n).astype(np.float32)
    b = rng.integers(-8, 8, n).astype(np.float32)
    a[16], b[16] = np.inf, -np.inf
    a[17:20] = _f32([0x7FC00001, 0xFFC12345, 0x7F800001])  # payloads, a signalling NaN
    b[20] = _f32([0x7FBFFFFF])[0]
    a[33], b[33] = -np.inf, np.inf
    out = np.zeros(4 * n, np.float32)
    bits = np.zeros(n, np.uint32)
    wide = np.zeros(n, np.float64)
    flags = np.zeros(n, np.int32)
    cuport.Module(ptx, device=device).kernel("chains")(1, n, (a, b, out, bits, wide, flags, np.float32(p0), np.float32(p1)))

    with np.errstate(invalid="ignore"):
        s = a + b
        p = s * b
        odd = np.arange(n) & 1 == 1
        p[odd] = p[odd] - a[odd]
        q = (p.astype(np.float64) * a + s).astype(np.float32)  # (exact here: small integers or NaN)
        acc = np.zeros(n, np.float32)
        for k in range(8):
            acc = acc + (a[(np.arange(n) + k) % n] + b[k])
        shuf = np.where(np.arange(n) % 32 < 31, s[np.minimum(np.arange(n) + 1, n - 1)], s)
        u = np.float32(p0) + np.float32(p1)
        last = u * np.float32(p0) + s
    o = out.reshape(n, 4).view(np.uint32)
    assert o[:, 0].tolist() == _canon(q).tolist()
    assert bits.tolist() == _canon(p).tolist()
    # cvt.f64.f32 keeps a NaN's payload: the canonical NaN widened
    expect_wide = np.where(np.isnan(s), 0x7FFFFFFFE0000000, s.astype(np.float64).view(np.uint64))
    assert wide.view(np.uint64).tolist() == expect_wide.tolist()
    assert flags.tolist() == (np.isnan(s) + 2 * (q < a) + 4 * (p == p)).tolist()
    assert o[:, 1].tolist() == _canon(acc).tolist()
    assert o[:, 2].tolist() == _canon(shuf).tolist()
    assert o[:, 3].tolist() == _canon(last).tolist()


MINMAX = r"""
extern "C" __global__ void minmax_chain(const float* a, const float* b, float* out, int n) {
  int i = threadIdx.x;
  float s = a[i] + b[i];           // inf + -inf: the host's NaN is 0xffc00000
  float y = fmaxf(s, b[i]);        // s read blind by max; two NaNs: the canonical NaN
  for (int k = 0; k < n; k++)
    y = y * 0.5f + a[k];           // y written by max and by fma
  out[3 * i] = y;
  out[3 * i + 1] = fminf(s, a[i]) * 2.0f;
  out[3 * i + 2] = fmaxf(s, s);    // (nvcc folds it into s)
}
"""


@DEVICES
def test_min_max_keep_nans_deferred(tmp_path_factory, device):
    """f32 min/max ignore a NaN operand and give the canonical NaN for two: a register they
    write (a payoff max(x, 0) a tree then steps with fma, as binomial option pricers do)
    keeps the host's NaN like arithmetic's, and they read their operands blind."""
    ptx = ptx_of_source(tmp_path_factory, "minmax", MINMAX)
    fn = facts.load_ptx([ptx]).functions["minmax_chain"]
    maxed = {ins.args[0].name for ins in fn.body if isinstance(ins, ir.Instr) and ins.op == "max"}
    assert maxed and maxed <= nan_payloads.deferred(fn)
    n = 64
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 8, n).astype(np.float32)
    b = rng.integers(-8, 8, n).astype(np.float32)
    a[3], b[3] = np.inf, -np.inf  # s NaN, b a number: max gives b
    a[4:6] = _f32([0x7FC00001, 0xFFC12345])  # s NaN with a payload, b a number
    a[6], b[6] = np.inf, _f32([0xFFC00005])[0]  # s and b NaN: the canonical NaN
    a[7], b[7] = _f32([0x7F800001])[0], _f32([0x7FA00000])[0]  # two signalling NaNs
    out = np.zeros(3 * n, np.float32)
    for steps in (0, 5):
        cuport.Module(ptx, device=device).kernel("minmax_chain")(1, n, (a, b, out, np.int32(steps)))
        with np.errstate(invalid="ignore"):
            s = a + b
            y = np.where(np.isnan(s), b, np.where(np.isnan(b), s, np.maximum(s, b)))
            for k in range(steps):
                y = (y.astype(np.float64) * 0.5 + a[k]).astype(np.float32)  # (exact here)
            m = np.where(np.isnan(s), a, np.where(np.isnan(a), s, np.minimum(s, a))) * np.float32(2)
        o = out.reshape(n, 3).view(np.uint32)
        assert o[:, 0].tolist() == _canon(y).tolist()
        assert o[:, 1].tolist() == _canon(m).tolist()
        assert o[:, 2].tolist() == _canon(s).tolist()
