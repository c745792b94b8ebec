"""CuPy, self-checking against numpy: one PASS/FAIL line.

Run on an NVIDIA GPU as is, or on the CPU as `cuport run python cupy_arrays.py` with no
settings: CuPy asks NVRTC for cubins (-arch=sm_90), which cuport's NVRTC shim turns into
PTX; its prebuilt CUB kernels (reductions, sort, scan) and random generators carry PTX
for sm_120 only, which cuport translates although it reports compute capability 9.0.
"""

import sys

import cupy as cp
import numpy as np
from parts import check, failed  # (beside this program)

rng = np.random.default_rng(7)

# elementwise arithmetic and ufuncs, broadcasting, dtype conversion
a_h = rng.standard_normal((300, 257)).astype(np.float32)
b_h = rng.standard_normal(257).astype(np.float32)
a, b = cp.asarray(a_h), cp.asarray(b_h)
check("elementwise", lambda: np.array_equal(cp.asnumpy(a * 2 + b), a_h * 2 + b_h))
check("ufuncs", lambda: np.allclose(cp.asnumpy(cp.exp(a) - cp.sqrt(cp.abs(b))),
                                    np.exp(a_h) - np.sqrt(np.abs(b_h)), rtol=1e-5, atol=1e-6))
i_h = rng.integers(-1000, 1000, 10007).astype(np.int32)
i = cp.asarray(i_h)
check("integer ops", lambda: np.array_equal(cp.asnumpy((i * 7) // 3 % 11 ^ (i >> 2)),
                                            (i_h * 7) // 3 % 11 ^ (i_h >> 2)))
check("astype", lambda: np.array_equal(cp.asnumpy(a.astype(cp.int16)), a_h.astype(np.int16)))

# reductions (CUB): sums are exact for integers, float sums within rounding
check("sum int", lambda: int(i.sum()) == int(i_h.sum()))
check("sum f32", lambda: np.isclose(float(a.sum()), float(a_h.astype(np.float64).sum()), rtol=1e-4))
check("(a*2).sum()", lambda: float((cp.arange(10, dtype=cp.float32) * 2).sum()) == 90.0)
# (max, min and argmax are left out: cuport takes minutes to compile CUB's
# nan-handling max reduction kernel)
check("sum axis", lambda: np.allclose(cp.asnumpy(a.sum(axis=0)), a_h.sum(axis=0), rtol=1e-4,
                                      atol=1e-4))
check("mean/std", lambda: np.isclose(float(a.mean()), float(a_h.mean()), rtol=1e-4, atol=1e-6)
      and np.isclose(float(a.std()), float(a_h.std()), rtol=1e-4))
check("cumsum", lambda: np.array_equal(cp.asnumpy(cp.cumsum(i)), np.cumsum(i_h)))

# sort (CUB radix sort)
f_h = rng.standard_normal(20011).astype(np.float32)
check("sort f32", lambda: np.array_equal(cp.asnumpy(cp.sort(cp.asarray(f_h))), np.sort(f_h)))
# (one sort: cuport takes minutes to compile each of CUB's radix sort instantiations)


# random: the generators' streams differ from numpy's; their statistics must not
def uniform():
    u = cp.asnumpy(cp.random.default_rng(1).random(200000))
    return (0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
            and abs(u.var() - 1 / 12) < 0.002, f"mean {u.mean():.4f}")


def normal():
    return cp.asnumpy(cp.random.default_rng(3).standard_normal(200000, dtype=cp.float32))


def normal_stats():
    n = normal()
    return abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01, f"std {n.std():.4f}"


check("random uniform", uniform)
check("random normal", normal_stats)
check("random seeded", lambda: np.array_equal(normal(), normal()))
# (the legacy cp.random.seed/RandomState API goes through the cuRAND library, whose
# kernels for each architecture are SASS-only fatbins: cuport cannot run them)

# RawKernel: CUDA C++ compiled by NVRTC at run time
x_h = rng.standard_normal(5000).astype(np.float32)
y_h = rng.standard_normal(5000).astype(np.float32)


def raw_kernel():
    saxpy = cp.RawKernel(r"""
    extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) out[i] = __fmul_rn(a, x[i]) + y[i];  // no fma contraction (NVRTC's default)
    }""", "saxpy")
    out = cp.empty(5000, dtype=cp.float32)
    saxpy(((5000 + 255) // 256,), (256,),
          (cp.float32(2.5), cp.asarray(x_h), cp.asarray(y_h), out, cp.int32(5000)))
    return np.array_equal(cp.asnumpy(out), np.float32(2.5) * x_h + y_h)


check("RawKernel", raw_kernel)

# ElementwiseKernel and ReductionKernel
squared_diff = cp.ElementwiseKernel("float32 x, float32 y", "float32 z",
                                    "z = (x - y) * (x - y)", "squared_diff")
check("ElementwiseKernel", lambda: np.array_equal(
    cp.asnumpy(squared_diff(cp.asarray(x_h), cp.asarray(y_h))), (x_h - y_h) * (x_h - y_h)))
l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
check("ReductionKernel", lambda: np.isclose(float(l2(cp.asarray(x_h))),
                                            float(np.linalg.norm(x_h)), rtol=1e-5))

print("PASS" if not failed else f"FAIL: {', '.join(failed)}")
sys.exit(1 if failed else 0)
