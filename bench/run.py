"""cuport against hand-written C/OpenMP on the same machine, in the same run.

    python bench/run.py            # all workloads
    python bench/run.py sgemm      # one

For each workload: the CUDA kernel (bench/kernels/*.cu, PTX from `nvcc -ptx`) launched
through cuport's Python API, and the C/OpenMP version (bench/omp/*.c, gcc -O3
-march=native -fopenmp) on the same data; both are timed as the best of several
repetitions after a warm-up. Printed: times, cuport/OpenMP ratio (1.0 = as fast as
OpenMP, higher = slower), and cuport's first-launch compile time and cached load time.
Nothing here is asserted: this measures, tests check correctness elsewhere.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import cuport  # noqa: E402
from cuport.backends.cpu import pool  # noqa: E402


def build(tmp: Path) -> dict:
    out = {}
    for cu in sorted((HERE / "kernels").glob("*.cu")):
        ptx = tmp / (cu.stem + ".ptx")
        subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_75", "-o", str(ptx), str(cu)], check=True)
        out[cu.stem] = ptx.read_text()
    for c in sorted((HERE / "omp").glob("*.c")):
        so = tmp / f"lib{c.stem}.so"
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-o", str(so), str(c)],
                       check=True)
        out["omp_" + c.stem] = ctypes.CDLL(str(so))
    return out


def best_of(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def load_timed(ptx: str, kernel: str, launch) -> tuple[float, float]:
    """Seconds for the first launch with an empty cache, and with a warm disk cache."""
    cache_dir = tempfile.mkdtemp(prefix="cuport-bench-cache-")
    old = os.environ.get("CUPORT_CACHE_DIR")
    os.environ["CUPORT_CACHE_DIR"] = cache_dir
    try:
        t = time.perf_counter()
        launch(cuport.Module(ptx).kernel(kernel))
        cold = time.perf_counter() - t
        t = time.perf_counter()
        launch(cuport.Module(ptx).kernel(kernel))
        warm = time.perf_counter() - t
    finally:
        if old is None:
            os.environ.pop("CUPORT_CACHE_DIR", None)
        else:
            os.environ["CUPORT_CACHE_DIR"] = old
        shutil.rmtree(cache_dir, ignore_errors=True)
    return cold, warm


def bench_triad(b: dict) -> dict:
    n = 1 << 24
    rng = np.random.default_rng(0)
    bb = rng.random(n, dtype=np.float32)
    cc = rng.random(n, dtype=np.float32)
    a = np.zeros(n, np.float32)
    s = 3.0
    k = cuport.Module(b["triad"]).kernel("_Z5triadPfPKfS1_fi")

    def run():
        k((n + 255) // 256, 256, (a, bb, cc, s, n))

    t_cu = best_of(run, 5)
    assert np.allclose(a, bb + np.float32(s) * cc)
    f = b["omp_triad"].triad
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_int, ctypes.c_int]
    t_omp = min(f(a.ctypes.data, bb.ctypes.data, cc.ctypes.data, s, n, 5) for _ in range(3))
    cold, warm = load_timed(b["triad"], "_Z5triadPfPKfS1_fi",
                            lambda kk: kk((n + 255) // 256, 256, (a, bb, cc, s, n)))
    return {"name": "triad (16M floats)", "cuport": t_cu, "omp": t_omp, "unit": f"{12 * n / t_cu / 1e9:.1f} GB/s",
            "unit_omp": f"{12 * n / t_omp / 1e9:.1f} GB/s", "cold": cold, "warm": warm}


def bench_sgemm(b: dict) -> dict:
    n = 1024
    rng = np.random.default_rng(0)
    A = rng.random((n, n), dtype=np.float32)
    B = rng.random((n, n), dtype=np.float32)
    C = np.zeros((n, n), np.float32)
    k = cuport.Module(b["sgemm"]).kernel("_Z5sgemmPKfS0_Pfi")
    g = (n + 15) // 16

    def run():
        k((g, g), (16, 16), (A, B, C, n))

    t_cu = best_of(run, 3)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.abs(C - ref).max() < 1e-2, "sgemm result wrong"
    f = b["omp_sgemm"].sgemm
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int]
    C2 = np.zeros_like(C)
    t_omp = min(f(A.ctypes.data, B.ctypes.data, C2.ctypes.data, n, 3) for _ in range(2))
    cold, warm = load_timed(b["sgemm"], "_Z5sgemmPKfS0_Pfi", lambda kk: kk((g, g), (16, 16), (A, B, C, n)))
    flops = 2 * n ** 3
    return {"name": f"sgemm {n}x{n}", "cuport": t_cu, "omp": t_omp, "unit": f"{flops / t_cu / 1e9:.1f} GFLOP/s",
            "unit_omp": f"{flops / t_omp / 1e9:.1f} GFLOP/s", "cold": cold, "warm": warm}


def bench_block_scan(b: dict) -> dict:
    n = 1 << 24
    x = np.random.default_rng(0).integers(-100, 100, n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    name = "_Z10block_scanPKiPii"
    k = cuport.Module(b["block_scan"]).kernel(name)
    blocks = (n + 1023) // 1024

    def run():
        k(blocks, 1024, (x, out, n))

    t_cu = best_of(run, 3)
    ref = np.cumsum(x.reshape(-1, 1024), axis=1, dtype=np.int32).reshape(-1)
    assert (out == ref).all(), "block_scan result wrong"
    f = b["omp_block_scan"].block_scan
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_int]
    t_omp = min(f(x.ctypes.data, out.ctypes.data, n, 5) for _ in range(3))
    cold, warm = load_timed(b["block_scan"], name, lambda kk: kk(blocks, 1024, (x, out, n)))
    return {"name": "block scan (16M ints)", "cuport": t_cu, "omp": t_omp,
            "unit": f"{8 * n / t_cu / 1e9:.1f} GB/s", "unit_omp": f"{8 * n / t_omp / 1e9:.1f} GB/s",
            "cold": cold, "warm": warm}


WORKLOADS = {"triad": bench_triad, "sgemm": bench_sgemm, "block_scan": bench_block_scan}


def main(argv: list[str]) -> int:
    names = argv or list(WORKLOADS)
    os.environ.setdefault("OMP_NUM_THREADS", str(pool.default_workers()))
    with tempfile.TemporaryDirectory() as tmp:
        built = build(Path(tmp))
        print(f"{'workload':<22}{'cuport':>12}{'OpenMP':>12}{'ratio':>8}   {'cuport rate':>16}{'OpenMP rate':>16}"
              f"{'compile':>10}{'cached':>9}")
        for name in names:
            r = WORKLOADS[name](built)
            print(f"{r['name']:<22}{r['cuport'] * 1e3:>10.2f}ms{r['omp'] * 1e3:>10.2f}ms"
                  f"{r['cuport'] / r['omp']:>8.2f}   {r['unit']:>16}{r['unit_omp']:>16}"
                  f"{r['cold']:>9.2f}s{r['warm']:>8.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
