"""Host time of queued operations under cuport settings, A/B in one run (issue 7/9).

    python bench/launch_ab.py [--runs 7] [--reps 3000] [--device vulkan] [--program NAME]
                              [NAME='ENV=V ...' ...]

bench/programs/queued_overhead.cu (built with nvcc, kept in ~/.cache/cuport-bench) runs
under `cuport run` once per setting per round, the settings alternating round by round (a
shared or noisy machine drifts between rounds, not between settings); printed per operation
and setting: the median over rounds of the microseconds per operation (wall clock) and of
the process's and the calling thread's CPU microseconds (on a CPU Vulkan driver and on
cuport's CPU backend the process's include the kernels' own execution). --program
grid_overhead runs bench/programs/grid_overhead.cu instead: empty grids of 1 to 256 blocks
(`--device cpu 'w2=CUPORT_THREADS=2' 'w16=CUPORT_THREADS=16'`: what waking workers costs). Settings default to the launch path before and after the submitter thread,
device-queue event records, pinned copies in the device's queue and synchronization2 barriers:
    before: CUPORT_VK_SUBMIT=eager CUPORT_VK_EVENT_MARKS=0 CUPORT_VK_PINNED_QUEUE=0 CUPORT_VK_BARRIER2=0
    after:  (cuport's defaults)
Each NAME='ENV=V ...' argument replaces them; CUPORT_ settings of the caller's environment
apply to every run (CUPORT_VK_COPIES=1: a discrete GPU's copy paths on lavapipe). Nothing is
asserted: this measures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import program  # noqa: E402

DEFAULT = {"before": "CUPORT_VK_SUBMIT=eager CUPORT_VK_EVENT_MARKS=0 CUPORT_VK_PINNED_QUEUE=0 "
                     "CUPORT_VK_BARRIER2=0", "after": ""}
LINE = re.compile(r"(.*) ([0-9.]+) us \(cpu ([0-9.]+) us, calling thread ([0-9.]+) us\)$")


def run_once(exe: Path, reps: int, device: str, settings: str, cache: str
             ) -> dict[str, tuple[float, float, float]]:
    env = dict(os.environ, CUPORT_DEVICE=device, CUPORT_CACHE_DIR=cache)
    env.update(kv.split("=", 1) for kv in settings.split())
    p = subprocess.run([sys.executable, "-m", "cuport.cli", "run", str(exe), str(reps)], env=env,
                       capture_output=True, text=True, cwd=HERE.parent)
    if p.returncode != 0:
        raise RuntimeError(f"{settings or 'defaults'}: {p.stdout[-500:]}{p.stderr[-500:]}")
    return {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4)))
            for m in map(LINE.match, p.stdout.splitlines()) if m}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3000)
    ap.add_argument("--device", default="vulkan")
    ap.add_argument("--program", default="queued_overhead", help="a program of bench/programs")
    ap.add_argument("settings", nargs="*", help="NAME='ENV=V ...'")
    args = ap.parse_args()
    settings = dict(s.split("=", 1) for s in args.settings) if args.settings else DEFAULT
    exe = program(args.program, ["-O2", "-arch=sm_90"])
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="cuport-bench-cache-") as cache:
        run_once(exe, 50, args.device, "", cache)  # compiles the kernels
        for _ in range(args.runs):
            for name, env in settings.items():
                for op, value in run_once(exe, args.reps, args.device, env, cache).items():
                    rows.setdefault((op, name), []).append(value)
    print(f"{'operation':<44}{'setting':<10}{'us/op':>9}{'process CPU':>13}{'calling thread':>16}"
          f"   (medians of {args.runs} runs of {args.reps})")
    for op in dict.fromkeys(op for op, _ in rows):
        for name in settings:
            got = rows.get((op, name), [])
            if got:
                print(f"{op:<44}{name:<10}{statistics.median(w for w, _, _ in got):9.2f}"
                      f"{statistics.median(p for _, p, _ in got):13.2f}"
                      f"{statistics.median(c for _, _, c in got):16.2f}")
    for name, env in settings.items():
        print(f"  {name}: {env or '(defaults)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
