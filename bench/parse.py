"""How fast the PTX frontend parses large modules (the compiler issue asks for a 1 MB
module in a couple of seconds at most).

    python bench/parse.py [file.ptx ...]

Without arguments it builds a module of about 1.1 MB from the bench kernels (nvcc -ptx),
repeating their entry points under new names, and times `cuport.ptx.parser.parse`.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

from cuport.ptx.parser import parse  # noqa: E402


def synthetic(target_bytes: int = 1_100_000) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_75", "-o", str(ptx), str(HERE / "kernels" / "sgemm.cu")],
                       check=True)
        src = ptx.read_text()
    entry = re.search(r"\.visible \.entry .*?\n}\n", src, re.S).group(0)
    name = re.search(r"\.entry (\S+)\(", entry).group(1)
    parts = [".version 9.0\n.target sm_75\n.address_size 64\n"]
    i = 0
    while sum(map(len, parts)) < target_bytes:
        parts.append(entry.replace(name, f"{name}_{i}").replace("_ZZ", f"_ZZ{i}_"))
        i += 1
    return "".join(parts)


def main(argv: list[str]) -> int:
    texts = [(p, Path(p).read_text()) for p in argv] or [("synthetic", synthetic())]
    for name, text in texts:
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            m = parse(text)
            best = min(best, time.perf_counter() - t)
        print(f"{name}: {len(text) / 1e6:.2f} MB, {text.count(chr(10))} lines, "
              f"{len(m.functions)} functions: parsed in {best:.2f} s ({len(text) / best / 1e6:.2f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
