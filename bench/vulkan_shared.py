"""What keeping shared memory in device memory costs on the Vulkan backend (slices.py).

    python bench/vulkan_shared.py [--device vulkan:0] [--reps 5]

1. The same shared-tile kernels with their tiles in workgroup memory and, as for a device
   with none (DeviceCaps.workgroup_memory = 0), in device memory: milliseconds per launch.
2. A kernel with 40 KiB of shared memory in device memory, dispatched in chunks of at most
   N blocks (CUPORT_VK_SHARED_SLOTS): what a chunk boundary costs (slices.py WAVES).
The kernels are tests/vulkan/big_shared.cu's (nvcc -ptx). Best of --reps runs of --launches
launches each; nothing is asserted (a busy machine makes any single number noisy).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def ptx() -> str:
    if shutil.which("nvcc") is None:
        sys.exit("nvcc is needed to build tests/vulkan/big_shared.cu")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "big_shared.ptx"
        subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-O3", "-o", str(out),
                        str(ROOT / "tests" / "vulkan" / "big_shared.cu")], check=True)
        return out.read_text()


def timed(be, k, grid, block, params: bytes, launches: int, reps: int) -> tuple[float, float]:
    """Best milliseconds per launch: wall clock, and this process' CPU time (on a CPU
    driver such as lavapipe, the work itself, which other processes' load disturbs less)."""
    k.launch(grid, block, 0, params)  # compile, warm
    be.drain()
    best, best_cpu = float("inf"), float("inf")
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(launches):
            k.launch(grid, block, 0, params)
        failed = be.drain()
        if failed is not None:
            raise failed[1]
        best = min(best, (time.perf_counter() - t0) / launches * 1e3)
        best_cpu = min(best_cpu, (time.process_time() - c0) / launches * 1e3)
    return best, best_cpu


def device_array(be, a: np.ndarray) -> int:
    p = be.allocate(a.nbytes)
    be.copy_htod(p, a.ctypes.data, a.nbytes)
    return p


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="vulkan:0")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--n", type=int, default=512, help="sgemm_tiles' matrix size")
    ap.add_argument("--blocks", type=int, default=512, help="tile40k's blocks")
    args = ap.parse_args()
    from cuport.api import pack_params
    from cuport.backends import get_backend

    kind, _, idx = args.device.partition(":")
    be = get_backend(kind, int(idx or 0))
    text = ptx()
    print(f"{be.info.name}: {be.info.limits.max_shared_memory // 1024} KiB workgroup memory")
    n = args.n
    rng = np.random.default_rng(1)
    a, b = (device_array(be, rng.random((n, n), dtype=np.float32)) for _ in range(2))
    c = device_array(be, np.zeros((n, n), np.float32))
    caps = be.caps
    print("1. the same kernel, its shared memory in workgroup memory / in device memory")
    for name, grid, block, params in [
        ("sgemm_tiles", (n // 32, n // 32, 1), (32, 8, 1), (a, b, c, n)),
    ]:
        times = []
        for limit in (caps.workgroup_memory, 0):
            be.caps = dataclasses.replace(caps, workgroup_memory=limit)
            k = be.load_module([text]).kernel(name)
            times.append(timed(be, k, grid, block, pack_params(k.info, params), args.launches, args.reps))
        be.caps = caps
        (w0, c0), (w1, c1) = times
        print(f"   {name} {grid} x {block}: wall {w0:.2f} / {w1:.2f} ms ({w1 / w0:.2f}x), "
              f"CPU {c0:.2f} / {c1:.2f} ms ({c1 / c0:.2f}x)")
    blocks = args.blocks
    print(f"2. 40 KiB in device memory (tile40k, {blocks} blocks), chunks of at most N blocks")
    x = device_array(be, rng.random(blocks * 10240, dtype=np.float32))
    y = device_array(be, np.zeros(blocks * 10240, np.float32))
    be.caps = dataclasses.replace(caps, workgroup_memory=min(caps.workgroup_memory, 32 * 1024))
    k = be.load_module([text]).kernel("tile40k")
    params = pack_params(k.info, (x, y))
    for slots in [str(n) for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096) if n < blocks] + [str(blocks)]:
        os.environ["CUPORT_VK_SHARED_SLOTS"] = slots
        wall, cpu = timed(be, k, (blocks, 1, 1), (256, 1, 1), params, args.launches, args.reps)
        print(f"   N = {slots:>4}: wall {wall:.2f} ms, CPU {cpu:.2f} ms "
              f"({-(-blocks // int(slots))} dispatches)")
    os.environ.pop("CUPORT_VK_SHARED_SLOTS")
    be.caps = caps
    return 0


if __name__ == "__main__":
    sys.exit(main())
