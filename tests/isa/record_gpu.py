"""Record what a real NVIDIA GPU answers for every instruction case.

Run on a machine with an NVIDIA GPU and CuPy (the device tool's machine):

    python tests/isa/record_gpu.py            # all families
    python tests/isa/record_gpu.py integer    # one family

It writes tests/isa/gpu/<family>.json: case key → result bits per destination. Those files
are the oracle the tests replay on the CPU. Only this file and ptxgen.py are needed there.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from ptxgen import groups, input_rows, kernel_for  # noqa: E402


def families() -> list[str]:
    return sorted(p.stem for p in (HERE / "cases").glob("*.py") if not p.stem.startswith("_"))


def record(family: str) -> dict[str, list[int]]:
    import cupy as cp

    mod = importlib.import_module(f"cases.{family}")
    out: dict[str, list[int]] = {}
    failures = []
    for grp in groups(mod.CASES).values():
        ptx = kernel_for(grp)
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(ptx)
        try:
            m = cp.RawModule(path=f.name)
            k = m.get_function("t")
        except Exception as e:  # an instruction ptxas refuses: note it, keep going
            failures.append(f"{grp[0].instr}: {e}")
            continue
        ins = [cp.asarray(np.array(col, dtype=np.uint64)) for col in input_rows(grp)]
        nd = len(grp[0].dsts)
        res = cp.zeros(len(grp) * nd, dtype=cp.uint64)
        block = min(len(grp), 256)
        k(((len(grp) + block - 1) // block,), (block,), (*ins, res, np.uint32(len(grp))))
        cp.cuda.runtime.deviceSynchronize()
        r = cp.asnumpy(res)
        for i, c in enumerate(grp):
            out[c.key()] = [int(x) for x in r[i * nd:(i + 1) * nd]]
    for msg in failures:
        print(f"{family}: not recorded: {msg}", file=sys.stderr)
    return out


def main(argv: list[str]) -> int:
    fams = argv or families()
    (HERE / "gpu").mkdir(exist_ok=True)
    for fam in fams:
        res = record(fam)
        (HERE / "gpu" / f"{fam}.json").write_text(json.dumps(res, indent=0, sort_keys=True))
        print(f"{fam}: {len(res)} cases recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
