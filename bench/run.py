"""cuport against hand-written C/OpenMP on the same machine, in the same run.

    python bench/run.py                 # everything (about 5 minutes on 16 cores)
    python bench/run.py sgemm jacobi    # some
    CUPORT_THREADS=1 python bench/run.py    # one core: OpenMP gets the same thread count

Kernels: each CUDA kernel (bench/kernels/*.cu, PTX from `nvcc -ptx`) is launched through
cuport's Python API and its C/OpenMP version (bench/omp/*.c, gcc -O3 -march=native
-fopenmp) runs on the same data with as many threads as cuport has workers; both are the
best of several repetitions after a warm-up. Printed: times, the ratio cuport/OpenMP (1.0
= as fast as OpenMP, higher = slower), rates, and cuport's first-launch compile time and
cached load time. The geomean is over these ratios.

Programs (bench/programs/*.cu, built with nvcc, run under `cuport run`): the per-operation
overheads a CUDA program sees (overhead.cu) beside the native H200 figures, and a
Thrust/CUB program's first run with an empty kernel cache of its own and its second run
with that cache (thrust_cub.cu). Program builds are kept in ~/.cache/cuport-bench.

Nothing here is asserted beyond the results being right: this measures, tests check
correctness elsewhere.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import re
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
from cuport.backends import cache  # noqa: E402
from cuport.backends.cpu import pool  # noqa: E402
from cuport.isa import texture_layout as T  # noqa: E402

#: the native H200 figures of the overhead probe (issue 9, measured 2026-12-01), in µs
NATIVE_OVERHEAD_US = {"empty launch": 5.4, "4-argument launch": 5.4, "1 KiB copy pair": 16.0,
                      "event record + synchronise": 6.4}
#: issue 9's targets
TARGET_OVERHEAD_US = {"empty launch": 10.0, "1 KiB copy pair": 10.0, "1 KiB memset": 5.0,
                      "event record + synchronise": 5.0}


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


def program(name: str, nvcc_args: list[str]) -> Path:
    """bench/programs/NAME.cu built with nvcc (kept, keyed by its source, the headers beside it
    and nvcc's version)."""
    src = HERE / "programs" / f"{name}.cu"
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    headers = b"".join(h.read_bytes() for h in sorted(src.parent.glob("*.h")))
    key = hashlib.sha256(src.read_bytes() + headers + version.encode() + repr(nvcc_args).encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cuport-bench"
    exe = base / f"{name}-{key}"
    cache.make_private_dirs(base)
    # run a kept binary only where nobody else could have written it or its folder
    why = cache.untrusted_because(base.stat()) or (exe.exists() and cache.untrusted_because(exe.stat()))
    if why:
        raise SystemExit(f"bench: not using {exe}: {why}")
    if not exe.exists():
        tmp = exe.with_suffix(".tmp")
        subprocess.run(["nvcc", *nvcc_args, "-o", str(tmp), str(src)], check=True)
        os.replace(tmp, exe)
    return exe


def best_of(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def omp_fn(b: dict, name: str, argtypes: list) -> ctypes._CFuncPtr:
    f = getattr(b["omp_" + name], name)
    f.restype = ctypes.c_double
    f.argtypes = argtypes
    return f


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


def gbs(nbytes: float, t: float) -> str:
    return f"{nbytes / t / 1e9:.1f} GB/s"


# ---------------------------------------------------------------- kernels


def bench_triad(b: dict) -> dict:
    """STREAM triad, 2^25 floats, 20 launches back to back (launch costs included)."""
    n = 1 << 25
    rng = np.random.default_rng(0)
    bb = rng.random(n, dtype=np.float32)
    cc = rng.random(n, dtype=np.float32)
    a = np.zeros(n, np.float32)
    s = 3.0
    name = "_Z5triadPfPKfS1_fi"
    k = cuport.Module(b["triad"]).kernel(name)

    def run():
        for _ in range(20):
            k((n + 255) // 256, 256, (a, bb, cc, s, n))

    t_cu = best_of(run, 3) / 20
    assert np.array_equal(a, triad_ref(bb, cc, s)), "triad result wrong"
    f = omp_fn(b, "triad", [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_int, ctypes.c_int])
    t_omp = min(f(a.ctypes.data, bb.ctypes.data, cc.ctypes.data, s, n, 20) for _ in range(3))
    cold, warm = load_timed(b["triad"], name, lambda kk: kk((n + 255) // 256, 256, (a, bb, cc, s, n)))
    return {"name": "triad 2^25, 20 launches", "cuport": t_cu, "omp": t_omp,
            "unit": gbs(12 * n, t_cu), "unit_omp": gbs(12 * n, t_omp), "cold": cold, "warm": warm}


def triad_ref(b: np.ndarray, c: np.ndarray, s: float) -> np.ndarray:
    """b + s*c rounded once: nvcc contracts it into one fma, as the GPU computes it (in f64
    the product and sum of two floats in [0, 1) and 3.0 are exact)."""
    return (b.astype(np.float64) + s * c.astype(np.float64)).astype(np.float32)


def bench_triad1(b: dict) -> dict:
    """One launch of a 16M-float triad: wake-up, first touch and work split are all in it."""
    n = 1 << 24
    rng = np.random.default_rng(1)
    bb = rng.random(n, dtype=np.float32)
    cc = rng.random(n, dtype=np.float32)
    a = np.zeros(n, np.float32)
    k = cuport.Module(b["triad"]).kernel("_Z5triadPfPKfS1_fi")
    t_cu = best_of(lambda: k((n + 255) // 256, 256, (a, bb, cc, 3.0, n)), 7)
    assert np.array_equal(a, triad_ref(bb, cc, 3.0)), "triad result wrong"
    f = omp_fn(b, "triad", [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_int, ctypes.c_int])
    t_omp = min(f(a.ctypes.data, bb.ctypes.data, cc.ctypes.data, 3.0, n, 1) for _ in range(7))
    return {"name": "triad 2^24, one launch", "cuport": t_cu, "omp": t_omp,
            "unit": gbs(12 * n, t_cu), "unit_omp": gbs(12 * n, t_omp)}


def bench_sgemm(b: dict) -> dict:
    n = 1024
    rng = np.random.default_rng(0)
    A = rng.random((n, n), dtype=np.float32)
    B = rng.random((n, n), dtype=np.float32)
    C = np.zeros((n, n), np.float32)
    name = "_Z5sgemmPKfS0_Pfi"
    k = cuport.Module(b["sgemm"]).kernel(name)
    g = (n + 15) // 16

    def run():
        k((g, g), (16, 16), (A, B, C, n))

    t_cu = best_of(run, 3)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.abs(C - ref).max() < 1e-2, "sgemm result wrong"
    f = omp_fn(b, "sgemm", [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int])
    C2 = np.zeros_like(C)
    t_omp = min(f(A.ctypes.data, B.ctypes.data, C2.ctypes.data, n, 3) for _ in range(2))
    cold, warm = load_timed(b["sgemm"], name, lambda kk: kk((g, g), (16, 16), (A, B, C, n)))
    flops = 2 * n ** 3
    return {"name": f"sgemm {n}^3, 16x16 tiles", "cuport": t_cu, "omp": t_omp,
            "unit": f"{flops / t_cu / 1e9:.1f} GFLOP/s", "unit_omp": f"{flops / t_omp / 1e9:.1f} GFLOP/s",
            "cold": cold, "warm": warm}


def bench_jacobi(b: dict) -> dict:
    """5-point Jacobi on 4096^2, 20 sweeps; 16x16 blocks with a shared tile and its halo."""
    n = 4096
    rng = np.random.default_rng(0)
    u = rng.random((n, n), dtype=np.float32)
    v = np.zeros_like(u)
    name = "_Z6jacobiPKfPfi"
    k = cuport.Module(b["jacobi"]).kernel(name)
    g = n // 16

    def run():
        src, dst = u, v
        for _ in range(20):
            k((g, g), (16, 16), (src, dst, n))
            src, dst = dst, src

    t_cu = best_of(run, 2) / 20
    k((g, g), (16, 16), (u, v, n))
    ref = u.copy()
    ref[1:-1, 1:-1] = np.float32(0.25) * ((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2] + u[1:-1, 2:])
    assert np.array_equal(v, ref), "jacobi result wrong"
    f = omp_fn(b, "jacobi", [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_int])
    w = np.zeros_like(u)
    t_omp = min(f(u.ctypes.data, w.ctypes.data, n, 20) for _ in range(2))
    cold, warm = load_timed(b["jacobi"], name, lambda kk: kk((g, g), (16, 16), (u, v, n)))
    return {"name": "jacobi 4096^2, 20 sweeps", "cuport": t_cu, "omp": t_omp,
            "unit": gbs(8 * n * n, t_cu), "unit_omp": gbs(8 * n * n, t_omp), "cold": cold, "warm": warm}


def bench_reduce(b: dict) -> dict:
    """Sum of 2^26 floats: a shared-memory tree per block, then shuffles (partial sums)."""
    n = 1 << 26
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    blocks = 1024
    partial = np.zeros(blocks, np.float32)
    name = "_Z6reducePKfPfi"
    k = cuport.Module(b["reduce"]).kernel(name)
    t_cu = best_of(lambda: k(blocks, 256, (x, partial, n)), 5)
    total = float(partial.astype(np.float64).sum())
    exact = float(x.astype(np.float64).sum())
    assert abs(total - exact) < 1e-4 * exact, "reduce result wrong"
    f = omp_fn(b, "reduce", [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p])
    res = ctypes.c_float()
    t_omp = min(f(x.ctypes.data, n, 5, ctypes.byref(res)) for _ in range(3))
    cold, warm = load_timed(b["reduce"], name, lambda kk: kk(blocks, 256, (x, partial, n)))
    return {"name": "reduce 2^26 floats", "cuport": t_cu, "omp": t_omp,
            "unit": gbs(4 * n, t_cu), "unit_omp": gbs(4 * n, t_omp), "cold": cold, "warm": warm}


def bench_block_scan(b: dict) -> dict:
    """Inclusive scan of 1024-int segments, Hillis-Steele in shared memory; the reference
    is a running sum per segment (the algorithm a CPU programmer would write)."""
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
    f = omp_fn(b, "block_scan", [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_int])
    t_omp = min(f(x.ctypes.data, out.ctypes.data, n, 5) for _ in range(3))
    cold, warm = load_timed(b["block_scan"], name, lambda kk: kk(blocks, 1024, (x, out, n)))
    return {"name": "block scan 2^24 ints", "cuport": t_cu, "omp": t_omp,
            "unit": gbs(8 * n, t_cu), "unit_omp": gbs(8 * n, t_omp), "cold": cold, "warm": warm}


def float_texture(img: np.ndarray) -> T.Descriptor:
    """The CPU backend's descriptor (isa/texture_layout.py) of a 2D f32 texture of `img`,
    linearly filtered, unnormalized coordinates (clamped, as the driver makes
    convolutionTexture's "wrap", which CUDA applies to normalized coordinates only)."""
    d = T.Descriptor(magic=T.MAGIC_TEXTURE, decode=T.DECODE_BITS32, channels=1, elem_bytes=4,
                     flags=T.F_FLOAT_RESULT | T.F_LINEAR_FILTER, num_levels=1, layers=1)
    d.address[:] = [T.ADDRESS_CLAMP] * 3
    d.fill[3] = 0x3F800000  # 1.0: alpha of a one-channel float texture
    h, w = img.shape
    d.levels[0] = T.Level(data=img.ctypes.data, row_pitch=4 * w, slice_pitch=4 * w * h, width=w,
                          height=h, depth=1)
    return d


def bench_texconv(b: dict) -> dict:
    """17-tap row convolution of a 2048x1024 float image through a linearly filtered 2D
    texture, 5 launches (cuda-samples' convolutionTexture); OpenMP reads the image."""
    w, h = 2048, 1024
    rng = np.random.default_rng(0)
    img = rng.random((h, w), dtype=np.float32)
    taps = rng.random(17, dtype=np.float32)
    dst = np.zeros_like(img)
    desc = float_texture(img)
    name = "_Z7texconvyPKfPfii"
    k = cuport.Module(b["texconv"]).kernel(name)
    grid = ((w + 15) // 16, (h + 15) // 16)

    def run():
        for _ in range(5):
            k(grid, (16, 16), (ctypes.addressof(desc), taps, dst, w, h))

    t_cu = best_of(run, 2) / 5
    wide = np.pad(img.astype(np.float64), ((0, 0), (8, 8)), mode="edge")
    ref = sum(wide[:, 8 + k:8 + k + w] * taps[8 - k] for k in range(-8, 9))
    assert np.allclose(dst, ref, rtol=1e-5), "texconv result wrong"
    f = omp_fn(b, "texconv", [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3)
    out = np.zeros_like(img)
    t_omp = min(f(img.ctypes.data, taps.ctypes.data, out.ctypes.data, w, h, 5) for _ in range(2))
    cold, warm = load_timed(b["texconv"], name,
                            lambda kk: kk(grid, (16, 16), (ctypes.addressof(desc), taps, dst, w, h)))
    samples = 17 * w * h
    return {"name": "texconv 2048x1024, 17 taps", "cuport": t_cu, "omp": t_omp,
            "unit": f"{samples / t_cu / 1e9:.2f} Gtex/s", "unit_omp": f"{samples / t_omp / 1e9:.2f} Gtex/s",
            "cold": cold, "warm": warm}


KERNELS = {"triad": bench_triad, "triad1": bench_triad1, "sgemm": bench_sgemm,
           "jacobi": bench_jacobi, "reduce": bench_reduce, "block_scan": bench_block_scan,
           "texconv": bench_texconv}


# ---------------------------------------------------------------- programs


def cuport_run(exe: Path, args: list[str], cache_dir: str) -> tuple[float, str]:
    env = dict(os.environ, CUPORT_CACHE_DIR=cache_dir)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cuport.cli", "run", str(exe), *args], env=env,
                       capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{exe.name} failed ({p.returncode}): {p.stdout[-500:]}{p.stderr[-500:]}")
    return dt, p.stdout


def bench_overhead(_b: dict) -> list[dict]:
    exe = program("overhead", ["-O2", "-arch=sm_90"])
    with tempfile.TemporaryDirectory(prefix="cuport-bench-cache-") as cache:
        cuport_run(exe, ["50"], cache)  # compiles the two kernels
        _, out = cuport_run(exe, ["3000"], cache)
    rows = []
    for line in out.splitlines():
        m = re.match(r"(.*) ([0-9.]+) us \(cpu ([0-9.]+) us\)$", line)
        if m:
            what, us = m.group(1), float(m.group(2))
            rows.append({"name": what, "us": us, "cpu": float(m.group(3)),
                         "native": NATIVE_OVERHEAD_US.get(what), "target": TARGET_OVERHEAD_US.get(what)})
    return rows


def bench_thrust(_b: dict) -> dict:
    exe = program("thrust_cub", ["-O3", "-gencode", "arch=compute_90,code=compute_90"])
    with tempfile.TemporaryDirectory(prefix="cuport-bench-cache-") as cache:
        first, out1 = cuport_run(exe, [], cache)
        cached, out2 = cuport_run(exe, [], cache)
    assert out1.startswith("ok") and out2.startswith("ok"), (out1, out2)
    return {"first": first, "cached": cached, "detail": out1.strip()}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv: list[str]) -> int:
    names = argv or [*KERNELS, "overhead", "thrust"]
    # the CPU backend is what this measures; a GPU is the default device where there is one
    # (on the H100 host the programs ran on its Vulkan driver until this was set)
    os.environ["CUPORT_DEVICE"] = "cpu"
    workers = pool.default_workers()
    os.environ.setdefault("OMP_NUM_THREADS", str(workers))
    print(f"{workers} worker threads (CUPORT_THREADS), OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
          f"{os.cpu_count()} CPUs")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        built = build(Path(tmp))
        kernels = [n for n in names if n in KERNELS]
        if kernels:
            print(f"\n{'kernel':<26}{'cuport':>11}{'OpenMP':>11}{'ratio':>7}  {'cuport rate':>15}"
                  f"{'OpenMP rate':>15}{'compile':>9}{'cached':>8}")
        for name in kernels:
            try:
                r = KERNELS[name](built)
            except AssertionError as e:  # a wrong answer is reported, and the rest still run
                print(f"{name:<26}WRONG RESULT: {e}", flush=True)
                continue
            ratio = r["cuport"] / r["omp"]
            ratios.append(ratio)
            comp = f"{r['cold']:>8.2f}s{r['warm']:>7.3f}s" if "cold" in r else ""
            print(f"{r['name']:<26}{r['cuport'] * 1e3:>9.2f}ms{r['omp'] * 1e3:>9.2f}ms{ratio:>7.2f}  "
                  f"{r['unit']:>15}{r['unit_omp']:>15}{comp}", flush=True)
        if ratios:
            print(f"{'geomean cuport/OpenMP':<48}{geomean(ratios):>7.2f}   (worst {max(ratios):.2f})")
        if "overhead" in names:
            print(f"\n{'per operation (overhead.cu)':<30}{'cuport':>10}{'(cpu)':>10}{'H200':>9}{'ratio':>7}"
                  f"{'target':>9}")
            for r in bench_overhead(built):
                native = f"{r['native']:>7.1f}us{r['us'] / r['native']:>7.1f}" if r["native"] else " " * 16
                target = f"{r['target']:>7.1f}us" if r["target"] else ""
                print(f"{r['name']:<30}{r['us']:>8.1f}us{r['cpu']:>8.1f}us{native}{target}", flush=True)
        if "thrust" in names:
            r = bench_thrust(built)
            print(f"\nThrust/CUB program (thrust_cub.cu): first run {r['first']:.1f} s (empty cache), "
                  f"cached run {r['cached']:.2f} s   [{r['detail']}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
