"""Host time of queued operations under cuport settings, A/B in one run (issue 7/9).

    python bench/launch_ab.py [--runs 7] [--reps 3000] [--device vulkan] [--program NAME]
                              [--tree LABEL=DIR ...] [NAME='ENV=V ...' ...]

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
apply to every run (CUPORT_VK_COPIES=1: a discrete GPU's copy paths on lavapipe). --tree
LABEL=DIR (repeatable) also runs every setting with the cuport of another checkout DIR (a
commit before a change: `git worktree add DIR COMMIT`, or `git archive COMMIT | tar -x -C
DIR`), in the same rounds, its rows named NAME@LABEL: a change's before and after on one
machine under the same drift. Nothing is asserted: this measures.

The per-launch host cost of the Vulkan backend (an empty kernel and a 4-argument one
launched back to back, on a stream of the program's and on the legacy stream) is the
"launch" rows; on a CPU Vulkan driver (lavapipe) the calling thread's CPU column is the
launch path's own cost, as the process's and the wall clock include the kernels' execution
on the same cores.
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


def run_once(exe: Path, reps: int, device: str, settings: str, cache: str,
             tree: Path = HERE.parent) -> dict[str, tuple[float, float, float]]:
    env = dict(os.environ, CUPORT_DEVICE=device, CUPORT_CACHE_DIR=cache)
    env.update(kv.split("=", 1) for kv in settings.split())
    # (`python -m` puts the working directory first on sys.path: `tree`'s cuport is imported,
    # and `cuport run` hands that path to the program's interpreter)
    p = subprocess.run([sys.executable, "-m", "cuport.cli", "run", str(exe), str(reps)], env=env,
                       capture_output=True, text=True, cwd=tree)
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
    ap.add_argument("--tree", action="append", default=[],
                    help="LABEL=DIR: every setting also with the cuport checkout DIR")
    ap.add_argument("settings", nargs="*", help="NAME='ENV=V ...'")
    args = ap.parse_args()
    chosen = dict(s.split("=", 1) for s in args.settings) if args.settings else DEFAULT
    trees = {"": HERE.parent, **{label: Path(d).resolve() for label, d in
                                 (t.split("=", 1) for t in args.tree)}}
    # (name as printed, environment, checkout)
    runs = [(name + (f"@{label}" if label else ""), env, tree)
            for label, tree in trees.items() for name, env in chosen.items()]
    settings = {name: env for name, env, _ in runs}
    exe = program(args.program, ["-O2", "-arch=sm_90"])
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="cuport-bench-cache-") as cache:
        for tree in trees.values():
            run_once(exe, 50, args.device, "", cache, tree)  # compiles the kernels
        for _ in range(args.runs):
            for name, env, tree in runs:
                for op, value in run_once(exe, args.reps, args.device, env, cache, tree).items():
                    rows.setdefault((op, name), []).append(value)
    width = max(10, *(len(n) + 2 for n in settings))
    print(f"{'operation':<44}{'setting':<{width}}{'us/op':>9}{'process CPU':>13}{'calling thread':>16}"
          f"   (medians of {args.runs} runs of {args.reps})")
    for op in dict.fromkeys(op for op, _ in rows):
        for name in settings:
            got = rows.get((op, name), [])
            if got:
                print(f"{op:<44}{name:<{width}}{statistics.median(w for w, _, _ in got):9.2f}"
                      f"{statistics.median(p for _, p, _ in got):13.2f}"
                      f"{statistics.median(c for _, _, c in got):16.2f}")
    for name, env, tree in runs:
        print(f"  {name}: {env or '(defaults)'}" + (f" [{tree}]" if tree != HERE.parent else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
