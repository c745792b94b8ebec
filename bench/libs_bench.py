"""cuport's library stand-ins against the CPU libraries they call, on the same machine.

    python bench/libs_bench.py        (runs itself under `cuport run`)

SGEMM 2048^3 through cuport's libcublas (cublasSgemm_v2 via ctypes, device buffers from
cuport's driver) against the same OpenBLAS (scipy-openblas64) called directly on numpy
arrays, and numpy.matmul (numpy's own OpenBLAS) for reference; a 2^22-point
complex FFT through cuport's libcufft against pocketfft called directly
(scipy.fft.fft with every core). Prints each time and the ratio direct/cuport (target
>= 0.9); best of 5 after a warm-up.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time

import numpy as np


def best(fn, reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    if "CUPORT_BENCH_CHILD" not in os.environ:
        env = dict(os.environ, CUPORT_BENCH_CHILD="1", CUPORT_DEVICE="cpu")  # (the CPU libraries are measured)
        return subprocess.call([sys.executable, "-m", "cuport.cli", "run", sys.executable,
                                __file__], env=env)
    import scipy.fft

    cuda = ctypes.CDLL("libcuda.so.1")
    cublas = ctypes.CDLL("libcublas.so.13")
    cufft = ctypes.CDLL("libcufft.so.12")
    assert cuda.cuInit(0) == 0
    ctx = ctypes.c_void_p()
    dev = ctypes.c_int()
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    cuda.cuCtxSetCurrent(ctx)

    def dalloc(nbytes: int) -> int:
        p = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)) == 0
        return p.value

    n = 2048
    rng = np.random.default_rng(0)
    a = np.asfortranarray(rng.standard_normal((n, n), np.float32))
    b = np.asfortranarray(rng.standard_normal((n, n), np.float32))
    da, db, dc = (dalloc(n * n * 4) for _ in range(3))
    ctypes.memmove(da, a.ctypes.data, a.nbytes)
    ctypes.memmove(db, b.ctypes.data, b.nbytes)
    h = ctypes.c_void_p()
    assert cublas.cublasCreate_v2(ctypes.byref(h)) == 0
    one, zero = ctypes.c_float(1), ctypes.c_float(0)

    def cuport_sgemm():
        assert cublas.cublasSgemm_v2(h, 0, 0, n, n, n, ctypes.byref(one), ctypes.c_uint64(da), n,
                                     ctypes.c_uint64(db), n, ctypes.byref(zero),
                                     ctypes.c_uint64(dc), n) == 0
        assert cuda.cuCtxSynchronize() == 0

    from cuport.libs import openblas

    out = np.empty((n, n), np.float32, order="F")
    sgemm = openblas.cblas("sgemm")

    def direct_sgemm():
        sgemm(openblas.COL_MAJOR, 111, 111, n, n, n, 1.0, a.ctypes.data, n, b.ctypes.data, n,
              0.0, out.ctypes.data, n)

    t_cuport = best(cuport_sgemm)
    t_direct = best(direct_sgemm)
    t_numpy = best(lambda: np.matmul(a, b, out=out))
    flops = 2 * n ** 3
    print(f"SGEMM {n}^3: cuport {t_cuport * 1e3:.1f} ms ({flops / t_cuport / 1e9:.0f} GFLOP/s), "
          f"OpenBLAS direct {t_direct * 1e3:.1f} ms; ratio {t_direct / t_cuport:.2f} "
          f"(numpy.matmul {t_numpy * 1e3:.1f} ms)")

    m = 1 << 22
    x = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(np.complex64)
    dx, dy = dalloc(m * 8), dalloc(m * 8)
    ctypes.memmove(dx, x.ctypes.data, x.nbytes)
    plan = ctypes.c_int()
    assert cufft.cufftPlan1d(ctypes.byref(plan), m, 0x29, 1) == 0  # CUFFT_C2C

    def cuport_fft():
        assert cufft.cufftExecC2C(plan, ctypes.c_uint64(dx), ctypes.c_uint64(dy), -1) == 0
        assert cuda.cuCtxSynchronize() == 0

    workers = os.cpu_count()
    t_cuport = best(cuport_fft)
    t_direct = best(lambda: scipy.fft.fft(x, workers=workers))
    print(f"C2C FFT 2^22: cuport {t_cuport * 1e3:.1f} ms, pocketfft direct {t_direct * 1e3:.1f} ms;"
          f" ratio {t_direct / t_cuport:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
