"""Record on a real NVIDIA GPU what tests/driver compares cuport with.

    OUT=/some/dir python3 tests/driver/record_gpu.py      (from the repository root)

Needs nvcc and gcc and an NVIDIA driver; takes well under a minute. Writes under $OUT:
- misuse-h200.txt: tests/driver/c/misuse.c's `CASE CODE` lines (driver calls with handles
  of another or a destroyed context), for tests/driver/recorded/misuse-h200.txt. Some of
  these calls are undefined behaviour and NVIDIA's driver may crash on them: the program
  announces each call (`begin CASE`), so a run that dies names the call it died in; that
  case is recorded as `CASE crash SIGNAME` (or `CASE hang` after RUN_SECONDS) and the
  program is run again without it (MISUSE_SKIP), until it gets to the end;
- bad_address-h200.txt: `CASE RESULT` of tests/driver/c/bad_address.cu (loads and stores
  at address 0 and far out of bounds), for tests/driver/recorded/bad_address-h200.txt; a
  case whose program fails is recorded as `CASE exit N` or `CASE crash SIGNAME`.
Every run's output goes to record_driver.log beside them. A step that fails does not stop
the others.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BAD_ADDRESS_CASES = ["store0", "load0", "param0", "far1", "far32", "scatter"]
RUN_SECONDS = 120
MAX_RUNS = 20  # of misuse: one more per crashing call


class Log:
    def __init__(self, path: Path) -> None:
        self.file = path.open("w")

    def __call__(self, text: str) -> None:
        self.file.write(text.rstrip("\n") + "\n")
        self.file.flush()
        print(text.rstrip("\n"), file=sys.stderr, flush=True)


def run(cmd: list[str], log: Log, env: dict[str, str] | None = None) -> tuple[int | str, str]:
    """(exit status, or "crash SIGNAME" / "hang"; stdout), logged."""
    log(f"$ {' '.join(cmd)}" + (f"  (MISUSE_SKIP={env['MISUSE_SKIP']})" if env and
                                env.get("MISUSE_SKIP") else ""))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_SECONDS, env=env)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        log(out + f"-- hang: no end after {RUN_SECONDS} s")
        return "hang", out
    status: int | str = r.returncode
    if r.returncode < 0:
        status = f"crash {signal.Signals(-r.returncode).name}"
    log(r.stdout + (f"-- stderr:\n{r.stderr}" if r.stderr else "") + f"-- {status}")
    return status, r.stdout


def link_cuda(home: Path, source: Path, exe: Path, log: Log) -> bool:
    """gcc with -lcuda: the toolkit's stub, else the driver's libcuda.so(.1)."""
    stubs = [home / "lib64" / "stubs", home / "targets" / "x86_64-linux" / "lib" / "stubs"]
    for flags in ([f"-L{d}" for d in stubs if d.exists()] + ["-lcuda"], ["-lcuda"],
                  ["-l:libcuda.so.1"]):
        status, _ = run(["gcc", "-O1", "-Wall", f"-I{home / 'include'}", str(source),
                         "-o", str(exe), *flags, "-lpthread"], log)
        if status == 0:
            return True
    return False


def misuse_lines(exe: Path, ptx: Path, log: Log) -> list[str]:
    """misuse.c's results, a crashing or hanging call recorded as such and skipped."""
    failed: dict[str, str] = {}
    for _ in range(MAX_RUNS):
        env = dict(os.environ, MISUSE_SKIP=",".join(failed))
        status, out = run([str(exe), str(ptx)], log, env)
        lines = out.splitlines()
        results = [ln for ln in lines if not ln.startswith("begin ")]
        if status == 0 and results[-1:] == ["done"]:
            return [f"{ln.split()[0]} {failed[ln.split()[0]]}" if ln.endswith(" skipped")
                    else ln for ln in results]
        begun = [ln.split()[1] for ln in lines if ln.startswith("begin ")]
        answered = {ln.split()[0] for ln in results}
        pending = [c for c in begun if c not in answered]
        if not pending or not isinstance(status, str):
            return results + [f"# stopped: {status} outside any call"]
        failed[pending[-1]] = str(status)
    return [f"# stopped: more than {MAX_RUNS} runs"]


def main() -> None:
    out = Path(os.environ.get("OUT") or sys.exit("set OUT to the folder to write to"))
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "record_driver.log")
    nvcc = shutil.which("nvcc") or sys.exit("nvcc is not on PATH")
    homes = [Path(h) for h in (os.environ.get("CUDA_HOME"), "/usr/local/cuda") if h]
    home = next((h for h in homes if (h / "include" / "cuda.h").exists()),
                Path(nvcc).resolve().parents[1])
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        ptx, misuse = tmp / "kernels.ptx", tmp / "misuse"
        if run([nvcc, "-ptx", "-o", str(ptx), str(HERE / "c" / "kernels.cu")], log)[0] == 0 \
                and link_cuda(home, HERE / "c" / "misuse.c", misuse, log):
            lines = misuse_lines(misuse, ptx, log)
            (out / "misuse-h200.txt").write_text("\n".join(lines) + "\n")
        bad = tmp / "bad_address"
        if run([nvcc, "-O3", "-o", str(bad), str(HERE / "c" / "bad_address.cu")], log)[0] == 0:
            lines = []
            for case in BAD_ADDRESS_CASES:
                status, stdout = run([str(bad), case], log)
                last = (stdout.splitlines() or [""])[-1]
                lines.append(f"{case} {last}" if status == 0 else
                             f"{case} {status if isinstance(status, str) else f'exit {status}'}")
            (out / "bad_address-h200.txt").write_text("\n".join(lines) + "\n")
    for name in ("misuse-h200.txt", "bad_address-h200.txt"):
        if (out / name).exists():
            print(f"== {name}\n{(out / name).read_text()}")
        else:
            print(f"== {name}: not written (see record_driver.log)")


if __name__ == "__main__":
    main()
