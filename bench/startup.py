"""Where a CUDA program's cached run spends its time under `cuport run` (issue 9: Thrust's
cached run within a second).

    python bench/startup.py                  # bench/programs/thrust_cub.cu and tests/programs/vector_add.cu
    python bench/startup.py ./app [ARGS...]  # a program of your own
    python bench/startup.py --runs 5 ...

Each program runs once with an empty kernel cache of its own (compiling what it launches)
and then --runs times with that cache. For the cached runs it prints the medians of: the
wall time of `cuport run`, the CPU time of the program's process (cuport's Python, the
program's own work and the kernels on every worker), and the CPU time of the program's main
thread split by what its Python stack held (a sampler thread reads the thread's CPU clock
every millisecond): imports, the driver's set-up, the module (PTX) load, reading and
verifying cached kernels, linking them, waiting for kernels, other Python, and C (the
program's own work, or a wait outside Python). "before Python" is the thread's CPU time
until cuport's interpreter was up (the program's work before its first CUDA call, loading
libcuda.so.1, starting Python). The sampler comes in through a .pth file on the path
`cuport run` hands to the program's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent

#: the sampler, run inside the program's interpreter; it writes one JSON line at exit
SAMPLER = r'''
import ctypes, json, os, sys, threading, time
PHASES = (  # (phase, file suffix, function); the outermost frame that matches names it
    ("wait for kernels", "launch_queue.py", "wait"),
    ("module load (PTX)", "facts.py", "load_ptx"),
    ("cached kernel: read, verify", "backends/cache.py", "load"),
    ("cached kernel: JIT link", "cpu/jit.py", "link"),
    ("kernel compile", "cpu/compiler.py", "compile_object"),
    ("driver set-up (attach)", "capi/runtime.py", "attach"),
    ("imports", "<frozen importlib._bootstrap>", "_find_and_load"),
)
MAIN = threading.main_thread().ident
CLOCK = time.pthread_getcpuclockid(MAIN)
cpu, t0 = {}, time.monotonic()

def phase(frame):
    stack = []
    while frame is not None:
        stack.append(frame.f_code)
        frame = frame.f_back
    for code in reversed(stack):
        for name, suffix, function in PHASES:
            if code.co_name == function and code.co_filename.endswith(suffix):
                return name
    return "other Python"

def sample():
    last = time.clock_gettime(CLOCK)
    while True:
        time.sleep(0.001)
        frame = sys._current_frames().get(MAIN)
        now = time.clock_gettime(CLOCK)
        name = "C (the program's work, waits)" if frame is None else phase(frame)
        cpu[name] = cpu.get(name, 0.0) + now - last
        last = now

threading.Thread(target=sample, daemon=True).start()
started = time.clock_gettime(CLOCK)

@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def report(_):
    total = time.clock_gettime(CLOCK)
    out = dict(cpu, **{"before Python": started, "main thread": total,
                       "process": time.process_time()})
    with open(os.environ["CUPORT_STARTUP_OUT"], "a") as f:
        f.write(json.dumps(out) + "\n")

ctypes.CDLL("libc.so.6").__cxa_atexit(report, None, None)  # (no Python exit in a C program)
'''


def run(argv: list[str], cache: str, hook: Path | None, out: Path | None) -> float:
    env = dict(os.environ, CUPORT_CACHE_DIR=cache)
    if hook is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(hook), str(ROOT), env.get("PYTHONPATH", "")])
        env["CUPORT_STARTUP_OUT"] = str(out)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cuport.cli", "run", *argv], env=env, cwd=ROOT,
                       capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({p.returncode}): {p.stdout[-400:]}{p.stderr[-400:]}")
    return dt


def measure(argv: list[str], runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cuport-startup-") as tmp:
        hook, cache, out = Path(tmp) / "hook", str(Path(tmp) / "cache"), Path(tmp) / "samples"
        hook.mkdir()
        (hook / "cuport_startup_sampler.py").write_text(SAMPLER)
        (hook / "cuport_startup_sampler.pth").write_text("import cuport_startup_sampler\n")
        first = run(argv, cache, None, None)
        walls = [run(argv, cache, hook, out) for _ in range(runs)]
        samples = [json.loads(line) for line in out.read_text().splitlines()]
    print(f"\n{' '.join(argv)}: first run {first:.2f} s; cached runs (median of {runs}): "
          f"wall {statistics.median(walls):.3f} s")
    keys = ["process", "main thread", "before Python"]
    keys += sorted({k for s in samples for k in s} - set(keys),
                   key=lambda k: -statistics.median(s.get(k, 0.0) for s in samples))
    for k in keys:
        label = {"process": "CPU, the program's process", "main thread": "CPU, its main thread",
                 "before Python": "  before Python"}.get(k, f"  {k}")
        print(f"  {label:38s} {statistics.median(s.get(k, 0.0) for s in samples):7.3f} s")


def main(args: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(args)
    if a.program:
        measure(a.program, a.runs)
        return 0
    sys.path.insert(0, str(HERE))
    from run import program  # (bench/run.py's builds, kept in ~/.cache/cuport-bench)

    thrust = program("thrust_cub", ["-O3", "-gencode", "arch=compute_90,code=compute_90"])
    with tempfile.TemporaryDirectory() as tmp:
        vadd = Path(tmp) / "vector_add"
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", str(vadd),
                        str(ROOT / "tests" / "programs" / "vector_add.cu")], check=True)
        measure([str(vadd)], a.runs)
    measure([str(thrust)], a.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
