"""What a launch of bench/run.py's kernels costs on one core of the CPU backend (issue 9).

    python bench/kernel_cost.py count jacobi sgemm   # JIT instructions per launch (valgrind)
    python bench/kernel_cost.py time jacobi          # CPU ms per launch, best of 7

`count` runs the kernel 3 times (the first compiles, under valgrind: the code is AVX2's,
valgrind's CPU has no AVX-512) under `valgrind --tool=callgrind` with one worker, at the
sizes DESIGN.md's rounds count at (jacobi 1024^2, reduce 2^22 in 1024 blocks of 256,
block_scan 2^20, sgemm 256^3), and prints the instructions of the largest function without
a symbol (the kernel's worker: the block runner and the warps' code) per launch. `time`
prints the process's CPU time of one launch, best of 7, with one worker, at bench/run.py's
sizes (jacobi 4096^2, reduce 2^26, block_scan 2^24, sgemm 1024^3): CPU time, so that other
tenants of a shared machine count less. PYTHONPATH=/path/to/other/cuport measures another
tree's compiler with this script. Each run checks the kernel's results.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
COUNT_SIZES = {"jacobi": 1024, "reduce": 1 << 22, "block_scan": 1 << 20, "sgemm": 256}
TIME_SIZES = {"jacobi": 4096, "reduce": 1 << 26, "block_scan": 1 << 24, "sgemm": 1024}


def kernel(name: str, n: int):
    """(launch, check) for bench kernel `name` at size n."""
    import cuport

    with tempfile.TemporaryDirectory() as d:
        ptx = Path(d) / "k.ptx"
        subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_75", "-o", str(ptx), str(HERE / "kernels" / f"{name}.cu")],
                       check=True)
        mod = cuport.Module(ptx.read_text())
    rng = np.random.default_rng(0)
    if name == "jacobi":
        u, v = rng.random((n, n), dtype=np.float32), np.zeros((n, n), np.float32)
        k = mod.kernel("_Z6jacobiPKfPfi")
        ref = u.copy()
        ref[1:-1, 1:-1] = np.float32(0.25) * ((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2] + u[1:-1, 2:])
        return lambda: k((n // 16, n // 16), (16, 16), (u, v, n)), lambda: np.array_equal(v, ref)
    if name == "reduce":
        x, partial = rng.random(n, dtype=np.float32), np.zeros(1024, np.float32)
        k = mod.kernel("_Z6reducePKfPfi")
        exact = x.astype(np.float64).sum()
        return lambda: k(1024, 256, (x, partial, n)), lambda: abs(partial.astype(np.float64).sum() - exact) < 1e-4 * exact
    if name == "block_scan":
        x, out = rng.integers(-100, 100, n, dtype=np.int32), np.zeros(n, np.int32)
        k = mod.kernel("_Z10block_scanPKiPii")
        ref = np.cumsum(x.reshape(-1, 1024), axis=1, dtype=np.int32).reshape(-1)
        return lambda: k((n + 1023) // 1024, 1024, (x, out, n)), lambda: (out == ref).all()
    if name == "sgemm":
        a, b, c = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32), np.zeros((n, n), np.float32)
        k = mod.kernel("_Z5sgemmPKfS0_Pfi")
        ref = a.astype(np.float64) @ b.astype(np.float64)
        g = (n + 15) // 16
        return lambda: k((g, g), (16, 16), (a, b, c, n)), lambda: np.abs(c - ref).max() < 1e-2
    raise SystemExit(f"no kernel {name}")


def run(name: str, n: int, reps: int, timed: bool) -> None:
    launch, check = kernel(name, n)
    launch()
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        launch()
        best = min(best, time.process_time() - t)
    if not check():
        raise SystemExit(f"{name}: wrong result")
    if timed:
        print(f"{name} {n}: {best * 1e3:.2f} ms CPU per launch (best of {reps})")


def count(name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        env = dict(os.environ, CUPORT_THREADS="1", CUPORT_COMPILE_WORKERS="0")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                        "_run", name, str(COUNT_SIZES[name])], env=env, check=True, capture_output=True)
        text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)],
                              capture_output=True, text=True, check=True).stdout
    jit = [int(m.group(1).replace(",", "")) for m in re.finditer(r"^\s*([\d,]+) .*\[\?\?\?\]$", text, re.M)]
    print(f"{name} {COUNT_SIZES[name]}: {max(jit) / 3 / 1e6:.3f}M JIT instructions per launch (AVX2)")


if __name__ == "__main__":
    what, names = sys.argv[1], sys.argv[2:]
    if what == "_run":  # (under valgrind: two launches after the first)
        run(names[0], int(names[1]), 2, False)
    for name in names if what in ("count", "time") else []:
        if what == "count":
            count(name)
        else:
            os.environ["CUPORT_THREADS"] = "1"
            run(name, TIME_SIZES[name], 7, True)
