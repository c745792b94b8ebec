"""The same CUDA binaries natively on an NVIDIA GPU and through cuport's Vulkan backend on
the same GPU, in the same run.

    python bench/gpu.py                    # native (if NVIDIA's driver is there) and vulkan
    python bench/gpu.py --devices vulkan   # cuport only (e.g. lavapipe, for a smoke run)

Each program in bench/gpu/ times one kernel over repeated launches with CUDA events and the
first launch (compile included under cuport) with the host clock, and checks its result
(PASS). Printed per workload: native and cuport milliseconds per launch, native time /
cuport time (1.0 = as fast as native CUDA, lower = slower), first-launch seconds, then the
geomean. A second cuport run shows the cached first launch. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
WORKLOADS = ["triad", "sgemm", "stencil", "reduction", "scan"]
LINE = re.compile(r"BENCH (\w+) ms_per_launch=([\d.]+) first_launch_s=([\d.]+)")


def build(tmp: Path, name: str) -> Path:
    exe = tmp / name
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(exe), str(HERE / "gpu" / f"{name}.cu")],
                   check=True)
    return exe


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float] | str:
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    m = LINE.search(r.stdout)
    if r.returncode != 0 or m is None or "PASS" not in r.stdout:
        return f"failed ({r.returncode}): {(r.stdout + r.stderr).strip()[-300:]}"
    return float(m.group(2)), float(m.group(3))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", default="native,vulkan",
                    help="comma-separated: native (NVIDIA's driver), vulkan, cpu")
    ap.add_argument("--cuport-env", action="append", default=[], metavar="NAME=VALUE",
                    help="a CUPORT_ setting for the cuport runs (repeatable), e.g. "
                         "CUPORT_VK_FLUSH32=0 to see what the f32-subnormal emulation costs")
    ap.add_argument("--reps", type=int, default=0,
                    help="timed launches per figure (BENCH_REPS; default: each program's own)")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    devices = args.devices.split(",")
    if "native" in devices and shutil.which("nvidia-smi") is None:
        devices.remove("native")
    cuport = [sys.executable, "-m", "cuport.cli", "run"]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")}
    if args.reps:
        base_env["BENCH_REPS"] = str(args.reps)
    extra = dict(kv.split("=", 1) for kv in args.cuport_env)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cache = tmp / "cache"
        rows = []
        for w in args.workloads:
            exe = build(tmp, w)
            row = {"workload": w}
            for dev in devices:
                if dev == "native":
                    row[dev] = run([str(exe)], base_env)
                    continue
                env = dict(base_env, **extra, CUPORT_DEVICE=dev, CUPORT_CACHE_DIR=str(cache))
                row[dev] = run([*cuport, str(exe)], env)
                row[dev + "_cached"] = run([*cuport, str(exe)], env)
            rows.append(row)
            print(_line(row, devices), flush=True)
    ratios = [r["native"][0] / r["vulkan"][0] for r in rows
              if isinstance(r.get("native"), tuple) and isinstance(r.get("vulkan"), tuple)]
    if ratios:
        print(f"geomean native/cuport-vulkan: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} "
              f"over {len(ratios)} workloads (1.0 = native speed), worst {min(ratios):.3f}")
    return 0


def _line(row: dict, devices: list[str]) -> str:
    parts = [f"{row['workload']:<10}"]
    for dev in devices:
        v = row.get(dev)
        if isinstance(v, tuple):
            cached = row.get(dev + "_cached")
            c = f", cached first {cached[1]:.3f} s" if isinstance(cached, tuple) else ""
            parts.append(f"{dev}: {v[0]:.4f} ms/launch (first launch {v[1]:.3f} s{c})")
        else:
            parts.append(f"{dev}: {v}")
    if isinstance(row.get("native"), tuple) and isinstance(row.get("vulkan"), tuple):
        parts.append(f"native/cuport = {row['native'][0] / row['vulkan'][0]:.3f}")
    return " | ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
