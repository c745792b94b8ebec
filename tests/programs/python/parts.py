"""A self-checking program's parts, each run on its own (shared by the Python programs here).

check(name, test): test() answers ok or (ok, detail). An exception (a launch or call the device
refused: CuPy raises for some, CUB's launches fail silently) is a MISMATCH with its text; one
line per part on stdout, and the part's time on stderr (first runs compile kernels), which also
tells what cuport said about which part. `failed` lists the parts that did not pass.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

failed: list[str] = []


def check(name: str, test: Callable[[], object]) -> None:
    start = time.perf_counter()
    try:
        ok = test()
    except Exception as e:  # noqa: BLE001 - reported as this part's failure, the rest runs
        ok = (False, f"raised {type(e).__name__}: {e}")
    ok, detail = ok if isinstance(ok, tuple) else (ok, "")
    print(f"{name}: {'ok' if ok else 'MISMATCH'} {detail}".rstrip())
    print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    if not ok:
        failed.append(name)
