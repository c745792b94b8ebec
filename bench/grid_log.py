"""Where a program's kernel time goes on the CPU backend, grid by grid (issue 9).

    python bench/grid_log.py [--runs 3] ./app [ARGS...]   # runs it under `cuport run`
    python bench/grid_log.py --log FILE                    # a CUPORT_GRID_LOG file

The program runs once to fill its kernel cache (CUPORT_CACHE_DIR as set, else cuport's own),
then --runs times with CUPORT_GRID_LOG set: runtime.c writes a line per grid (its kernel,
grid, the workers asked for and those that took part, wall time, the CPU time of the
workers' shares, how often a block reported that all its warps wait on other blocks (spin loops'
yield points) and how often a worker whose blocks all waited gave its CPU away). Printed per
kernel and grid size: launches, workers that took part, the medians over runs of the summed
wall and CPU milliseconds and of the two counts; then the totals.
CUPORT_THREADS sets the worker count as usual.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def short(name: str) -> str:
    """A kernel's name without its namespaces and template arguments (the last identifier of
    a mangled nested name: cub::...::DeviceRadixSortOnesweepKernel<...> as the second)."""
    if not name.startswith("_ZN"):
        m = re.match(r"_Z(\d+)", name)
        return name[m.end():m.end() + int(m.group(1))] if m else name[:40]
    at, last = 3, name
    while (m := re.match(r"(\d+)", name[at:])) is not None:
        n = int(m.group(1))
        start = at + len(m.group(1))
        last, at = name[start:start + n], start + n
    return last[:40]


def read(path: Path) -> dict[tuple[str, str, int], list[float]]:
    """(kernel, grid, blocks) -> [launches, workers that ran (summed), wall ms, cpu ms,
    waits, idle]."""
    out: dict[tuple[str, str, int], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0, 0])
    for line in path.read_text().splitlines():
        _seq, name, grid, blocks, _asked, ran, wall, cpu, waits, idle = line.split("\t")
        row = out[(short(name), grid, int(blocks))]
        row[0] += 1
        row[1] += int(ran)
        row[2] += int(wall) / 1e6
        row[3] += int(cpu) / 1e6
        row[4] += int(waits)
        row[5] += int(idle)
    return out


def report(runs: list[dict[tuple[str, str, int], list[float]]]) -> None:
    keys = sorted({k for r in runs for k in r}, key=lambda k: -statistics.median(
        r[k][2] if k in r else 0.0 for r in runs))
    print(f"{'kernel':40s} {'grid':>12s} {'n':>4s} {'ran':>5s} {'wall ms':>9s} {'cpu ms':>9s} "
          f"{'waits':>7s} {'idle':>7s}   (medians of {len(runs)} runs)")
    for k in keys:
        rows = [r[k] for r in runs if k in r]
        n = rows[0][0]
        print(f"{k[0]:40s} {k[1]:>12s} {n:4d} {statistics.median(r[1] / r[0] for r in rows):5.1f} "
              f"{statistics.median(r[2] for r in rows):9.2f} {statistics.median(r[3] for r in rows):9.2f} "
              f"{statistics.median(r[4] for r in rows):7.0f} {statistics.median(r[5] for r in rows):7.0f}")
    tot = [[sum(v[i] for v in r.values()) for i in (2, 3, 4, 5)] for r in runs]
    print(f"all grids: wall {statistics.median(t[0] for t in tot):.1f} ms, CPU "
          f"{statistics.median(t[1] for t in tot):.1f} ms, waits {statistics.median(t[2] for t in tot):.0f}, "
          f"idle {statistics.median(t[3] for t in tot):.0f}")


def main(args: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--log", type=Path, help="summarise this CUPORT_GRID_LOG file")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(args)
    if a.log:
        report([read(a.log)])
        return 0
    if not a.program:
        ap.error("a program to run, or --log FILE")
    cmd = [sys.executable, "-m", "cuport.cli", "run", *a.program]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)  # (fills the kernel cache)
    runs = []
    with tempfile.TemporaryDirectory(prefix="cuport-grid-log-") as tmp:
        for i in range(a.runs):
            log = Path(tmp) / f"run{i}"
            subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True,
                           env=dict(os.environ, CUPORT_GRID_LOG=str(log)))
            runs.append(read(log))
    report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
