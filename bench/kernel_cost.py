"""What a launch of bench/run.py's kernels costs on one core of the CPU backend (issue 9).

    python bench/kernel_cost.py count jacobi sgemm   # JIT instructions per launch (valgrind)
    python bench/kernel_cost.py time jacobi          # CPU ms per launch, best of 7
    python bench/kernel_cost.py profile jacobi       # the worker's AVX2 code, counted per block
    python bench/kernel_cost.py step jacobi          # this host's code (AVX-512), counted per block
    python bench/kernel_cost.py asm jacobi           # the worker's assembly for this host
    python bench/kernel_cost.py sample jacobi        # this host's code, perf's cpu-clock samples

`count` runs the kernel 3 times (the first compiles, under valgrind: the code is AVX2's,
valgrind's CPU has no AVX-512) under `valgrind --tool=callgrind` with one worker, at the
sizes DESIGN.md's rounds count at (jacobi 1024^2, reduce 2^22 in 1024 blocks of 256,
block_scan 2^20, sgemm 256^3, texconv 1024x512), and prints the instructions of the largest function without
a symbol (the kernel's worker: the block runner and the warps' code) per launch. `time`
prints the process's CPU time of one launch, best of 7, with one worker, at bench/run.py's
sizes (jacobi 4096^2, reduce 2^26, block_scan 2^24, sgemm 1024^3, texconv 2048x1024):
CPU time, so that other
tenants of a shared machine count less. `profile` runs `count`'s launches with every
instruction counted (callgrind --dump-instr) and prints the worker's disassembly (objdump),
and that of the functions beside it in the object (a texture sampler), with each
instruction's count per block of the grid: a warp's hot path read off directly (an
interior 16x16 block's is the instructions counted 8 times). `step` does the same for
the code this host runs (AVX-512 where it has it, which valgrind cannot run): it
single-steps one launch's worker with ptrace, from its entry to its return, at small sizes
(jacobi 256^2, reduce 2^16, block_scan 2^14, sgemm 32^3, texconv 128x64; about 15,000
steps a second).
`sample` runs `time`'s launches under `perf record -e cpu-clock` (a VM without performance
counters has that clock) and prints the worker's disassembly with each instruction's share of
the worker's samples, in per mille: where the time goes at the timed sizes, which counts of
instructions do not show (a store-bound loop, a cache miss). `asm` prints the assembly `cuport ptx --dump-after codegen` gives at the launch's block
shape. CUPORT_CPU_FEATURES=-avx512f gives AVX2 code on an AVX-512 host (`step`, `asm`);
kernels come from the disk cache, whose key holds the compiler's sources but not other
CUPORT_ settings (CUPORT_CACHE=0 when comparing those).
PYTHONPATH=/path/to/other/cuport measures another tree's compiler with this script. Each
run but `step` checks the kernel's results.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
COUNT_SIZES = {"jacobi": 1024, "reduce": 1 << 22, "block_scan": 1 << 20, "sgemm": 256, "texconv": 512}
#: (mangled name, block shape, blocks in the grid at size n)
KERNELS = {"jacobi": ("_Z6jacobiPKfPfi", (16, 16), lambda n: (n // 16) ** 2),
           "reduce": ("_Z6reducePKfPfi", (256,), lambda n: 1024),
           "block_scan": ("_Z10block_scanPKiPii", (1024,), lambda n: (n + 1023) // 1024),
           "sgemm": ("_Z5sgemmPKfS0_Pfi", (16, 16), lambda n: ((n + 15) // 16) ** 2),
           "texconv": ("_Z7texconvyPKfPfii", (16, 16), lambda n: (2 * n // 16) * (n // 16))}
STEP_SIZES = {"jacobi": 256, "reduce": 1 << 16, "block_scan": 1 << 14, "sgemm": 32, "texconv": 64}
TIME_SIZES = {"jacobi": 4096, "reduce": 1 << 26, "block_scan": 1 << 24, "sgemm": 1024, "texconv": 1024}


def ptx_of(name: str) -> str:
    with tempfile.TemporaryDirectory() as d:
        ptx = Path(d) / "k.ptx"
        subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_75", "-o", str(ptx), str(HERE / "kernels" / f"{name}.cu")],
                       check=True)
        return ptx.read_text()


def kernel(name: str, n: int):
    """(launch, check) for bench kernel `name` at size n."""
    import cuport

    mod = cuport.Module(ptx_of(name))
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
    if name == "texconv":  # a (2n)x n image, as bench/run.py's (2048x1024 at n = 1024)
        sys.path.insert(0, str(HERE))
        from run import float_texture

        w, h = 2 * n, n
        img, taps = rng.random((h, w), dtype=np.float32), rng.random(17, dtype=np.float32)
        dst, desc = np.zeros_like(img), float_texture(img)
        k = mod.kernel("_Z7texconvyPKfPfii")
        wide = np.pad(img.astype(np.float64), ((0, 0), (8, 8)), mode="edge")
        ref = sum(wide[:, 8 + j:8 + j + w] * taps[8 - j] for j in range(-8, 9))
        g = (w // 16, h // 16)
        args = (ctypes.addressof(desc), taps, dst, w, h)
        keep = (img, desc)  # (the descriptor holds the image's address, not the array)
        return (lambda: k(g, (16, 16), args) or keep,
                lambda: np.allclose(dst, ref, rtol=1e-5))
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


def _keep_objects(where: Path) -> None:
    """Write each object the JIT links (worker.o) and its worker's address (worker.addr)
    under `where`: profile maps callgrind's addresses onto them."""
    from cuport.backends.cpu import jit

    real = jit.link

    def link(obj: bytes, symbols: dict):
        linked = real(obj, symbols)
        (where / "worker.o").write_bytes(obj)
        (where / "worker.addr").write_text(str(linked.worker_addr))
        return linked
    jit.link = link


def _costs(out: Path) -> dict[int, int]:
    """Instructions per address from a callgrind file written with --dump-instr=yes
    --compress-pos=no, whose cost lines are `address line cost` (a line after `calls=` is
    the call's inclusive cost: skipped)."""
    costs: dict[int, int] = {}
    after_call = False
    for line in out.read_text().splitlines():
        if line.startswith("calls="):
            after_call = True
            continue
        if line.startswith("0x"):
            if not after_call:  # (positions: instr line; then the cost)
                addr, _, cost = line.split()[:3]
                costs[int(addr, 16)] = costs.get(int(addr, 16), 0) + int(cost)
        after_call = False
    return costs


def profile(name: str) -> None:
    n = COUNT_SIZES[name]
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        out = d / "cg.out"
        env = dict(os.environ, CUPORT_THREADS="1", CUPORT_COMPILE_WORKERS="0", KERNEL_COST_OBJECTS=str(d))
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--compress-pos=no",
                        f"--callgrind-out-file={out}", sys.executable, __file__, "_run", name, str(n)],
                       env=env, check=True, capture_output=True)
        costs = _costs(out)
        base = int((d / "worker.addr").read_text())
        _annotate(name, n, d / "worker.o", base, costs, KERNELS[name][2](n), 3, "AVX2 code, callgrind")


class _Regs(ctypes.Structure):
    """x86-64 Linux user_regs_struct (PTRACE_GETREGS)."""

    _fields_ = [(f, ctypes.c_ulong) for f in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
        "fs_base gs_base ds es fs gs").split()]


def _step_child(name: str, n: int) -> None:
    """(the traced child of `step`) compile and link, say so, wait for the tracer's word,
    then launch once more: that launch's worker is the one single-stepped."""
    launch, _ = kernel(name, n)
    launch()
    print("ready", flush=True)
    sys.stdin.readline()
    launch()


def step(name: str, n: int) -> None:
    """Single-step one launch's worker (one worker thread) with ptrace from its entry to its
    return, counting each instruction: the host's own code (AVX-512 here), which valgrind
    cannot run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    SEIZE, INTERRUPT, CONT, SINGLESTEP, GETREGS, SETREGS, PEEK, POKE = 0x4206, 0x4207, 7, 9, 12, 13, 1, 4
    WALL, TRACECLONE = 0x40000000, 8

    def pt(req, tid, addr=0, data=0):
        r = libc.ptrace(req, tid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
        if r == -1 and ctypes.get_errno() and req != PEEK:
            raise OSError(ctypes.get_errno(), f"ptrace {req} on {tid}")
        return r

    def wait(tid=-1):
        st = ctypes.c_int()
        t = libc.waitpid(tid, ctypes.byref(st), WALL)
        return t, st.value

    def regs(tid):
        r = _Regs()
        pt(GETREGS, tid, 0, ctypes.addressof(r))
        return r

    counts: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        env = dict(os.environ, CUPORT_THREADS="1", CUPORT_COMPILE_WORKERS="0", KERNEL_COST_OBJECTS=str(d))
        child = subprocess.Popen([sys.executable, __file__, "_step", name, str(n)], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if child.stdout.readline().strip() != "ready":
                raise SystemExit("step: the child did not start")
            bp = int((d / "worker.addr").read_text())
            tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
            for t in tids:
                pt(SEIZE, t, 0, TRACECLONE)
            pt(INTERRUPT, child.pid)
            wait(child.pid)
            word = pt(PEEK, child.pid, bp)
            pt(POKE, child.pid, bp, (word & ~0xFF) | 0xCC)
            pt(CONT, child.pid)
            child.stdin.write("go\n")
            child.stdin.flush()
            while True:
                t, st = wait()
                if st & 0xFF != 0x7F:
                    raise SystemExit(f"step: thread {t} ended before the worker ran")
                sig = (st >> 8) & 0xFF
                if sig == signal.SIGTRAP and st >> 16 == 0 and regs(t).rip == bp + 1:
                    break
                pt(CONT, t, 0, 0 if sig == signal.SIGTRAP or st >> 16 else sig)
            pt(POKE, t, bp, word)
            r = regs(t)
            r.rip = bp
            pt(SETREGS, t, 0, ctypes.addressof(r))
            entry_sp = r.rsp
            ret = pt(PEEK, t, entry_sp) & (2**64 - 1)
            rip = bp
            while not (rip == ret and r.rsp == entry_sp + 8):
                counts[rip] = counts.get(rip, 0) + 1
                pt(SINGLESTEP, t)
                _, st = wait(t)
                r = regs(t)
                rip = r.rip
        finally:
            child.kill()
            while wait()[0] > 0:  # (the tracer reaps the traced threads, then the child)
                pass
            child.returncode = -signal.SIGKILL
        _annotate(name, n, d / "worker.o", bp, counts, KERNELS[name][2](n), 1, "this host's code, ptrace")


def _annotate(name: str, n: int, obj: Path, base: int, costs: dict[int, int], blocks: int, launches: int,
              what: str) -> None:
    """Print the worker's disassembly (objdump) with each instruction's count per block of
    the grid (`costs`: by address, where the worker's code starts at `base`)."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "att", str(obj)],
                         capture_output=True, text=True, check=True).stdout
    sym = re.search(r"^([0-9a-f]+) <worker>:", dis, re.M)
    start = int(sym.group(1), 16)
    total = 0
    print(f"{name} {n}: the worker's instructions per block of the grid ({what}; 0: not run), "
          "then those of the functions beside it that ran (a texture sampler)")
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if not m:
            if line.endswith(">:"):
                print(line)
            continue
        c = costs.get(base + int(m.group(1), 16) - start, 0) / launches
        total += c
        print(f"{c / blocks:9.2f}  {m.group(1):>6}  {m.group(2)}")
    print(f"{total / blocks:9.2f}  per block; {total / 1e6:.3f}M per launch")


def sample(name: str) -> None:
    """perf's cpu-clock samples of `time`'s launches, mapped onto the worker's code."""
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        env = dict(os.environ, CUPORT_THREADS="1", CUPORT_COMPILE_WORKERS="0", KERNEL_COST_OBJECTS=str(d),
                   KERNEL_COST_REPS="40")
        data = d / "perf.data"
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", str(data), sys.executable,
                        __file__, "_run", name, str(TIME_SIZES[name])], env=env, check=True, capture_output=True)
        ips = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip"], capture_output=True, text=True,
                             check=True).stdout.split()
        costs: dict[int, int] = {}
        for ip in ips:
            costs[int(ip, 16)] = costs.get(int(ip, 16), 0) + 1
        base = int((d / "worker.addr").read_text())
        size = _worker_size(d / "worker.o")
        inside = sum(c for a, c in costs.items() if base <= a < base + size)
        print(f"{name}: {inside} of {len(ips)} samples in the worker")
        _annotate(name, TIME_SIZES[name], d / "worker.o", base, {a: c * 1000 for a, c in costs.items()},
                  max(inside, 1), 1, "this host's code, perf cpu-clock samples, per mille")


def _worker_size(obj: Path) -> int:
    out = subprocess.run(["nm", "-S", str(obj)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^[0-9a-f]+ ([0-9a-f]+) \S+ worker$", out, re.M)
    return int(m.group(1), 16) if m else 1 << 20


def asm(name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        ptx = Path(d) / "k.ptx"
        ptx.write_text(ptx_of(name))
        kname, block, _ = KERNELS[name]
        subprocess.run([sys.executable, "-m", "cuport.cli", "ptx", "--dump-after", "codegen", "--kernel", kname,
                        "--block", ",".join(map(str, block)), str(ptx)], check=True)


if __name__ == "__main__":
    what, names = sys.argv[1], sys.argv[2:]
    if what in ("_run", "_step") and os.environ.get("KERNEL_COST_OBJECTS"):
        _keep_objects(Path(os.environ["KERNEL_COST_OBJECTS"]))
    if what == "_step":
        _step_child(names[0], int(names[1]))
    if what == "_run":  # (under valgrind: two launches after the first)
        run(names[0], int(names[1]), int(os.environ.get("KERNEL_COST_REPS", "2")), False)
    for name in names if what in ("count", "time", "profile", "asm", "step", "sample") else []:
        if what == "count":
            count(name)
        elif what == "profile":
            profile(name)
        elif what == "asm":
            asm(name)
        elif what == "sample":
            sample(name)
        elif what == "step":
            step(name, STEP_SIZES[name])
        else:
            os.environ["CUPORT_THREADS"] = "1"
            run(name, TIME_SIZES[name], 7, True)
