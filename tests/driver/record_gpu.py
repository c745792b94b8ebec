"""Record on a real NVIDIA GPU what tests/driver compares cuport with.

    OUT=/some/dir python3 tests/driver/record_gpu.py      (from the repository root)

Needs nvcc and gcc and an NVIDIA driver; takes well under a minute. Writes under $OUT:
- misuse-h200.txt: tests/driver/c/misuse.c's `CASE CODE` lines (driver calls with handles
  of another or a destroyed context), for tests/driver/recorded/misuse-h200.txt;
- bad_address-h200.txt: `CASE RESULT` of tests/driver/c/bad_address.cu (loads and stores
  at address 0 and far out of bounds), for tests/driver/recorded/bad_address-h200.txt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BAD_ADDRESS_CASES = ["store0", "load0", "param0", "far1", "far32", "scatter"]


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def link_cuda(home: Path, tmp: Path, source: Path, exe: Path) -> None:
    """gcc with -lcuda: the toolkit's stub, else the driver's libcuda.so(.1)."""
    stubs = [home / "lib64" / "stubs", home / "targets" / "x86_64-linux" / "lib" / "stubs"]
    for flags in ([f"-L{d}" for d in stubs if d.exists()] + ["-lcuda"], ["-lcuda"],
                  ["-l:libcuda.so.1"]):
        r = subprocess.run(["gcc", "-O1", "-Wall", f"-I{home / 'include'}", str(source),
                            "-o", str(exe), *flags, "-lpthread"], capture_output=True, text=True)
        if r.returncode == 0:
            return
    sys.exit(f"cannot link {source.name} with libcuda:\n{r.stderr}")


def main() -> None:
    out = Path(os.environ.get("OUT") or sys.exit("set OUT to the folder to write to"))
    out.mkdir(parents=True, exist_ok=True)
    nvcc = shutil.which("nvcc") or sys.exit("nvcc is not on PATH")
    home = Path(nvcc).resolve().parents[1]
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        ptx = tmp / "kernels.ptx"
        sh([nvcc, "-ptx", "-o", str(ptx), str(HERE / "c" / "kernels.cu")])
        misuse = tmp / "misuse"
        link_cuda(home, tmp, HERE / "c" / "misuse.c", misuse)
        r = sh([str(misuse), str(ptx)])
        (out / "misuse-h200.txt").write_text(r.stdout)
        bad = tmp / "bad_address"
        sh([nvcc, "-O3", "-o", str(bad), str(HERE / "c" / "bad_address.cu")])
        lines = []
        for case in BAD_ADDRESS_CASES:
            r = sh([str(bad), case])
            lines.append(f"{case} {r.stdout.splitlines()[-1]}")
        (out / "bad_address-h200.txt").write_text("\n".join(lines) + "\n")
    print((out / "misuse-h200.txt").read_text() + (out / "bad_address-h200.txt").read_text())


if __name__ == "__main__":
    main()
