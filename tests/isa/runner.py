"""Run instruction cases through cuport and compare with expectations and GPU recordings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from ptxgen import Case, from_bits, groups, input_rows, kernel_for, to_bits, ulp_distance

import cuport

HERE = Path(__file__).parent


def run_cases(cases: list[Case]) -> dict[str, list[int]]:
    """Execute every case on cuport; result bits per case key (one int per destination)."""
    out: dict[str, list[int]] = {}
    for grp in groups(cases).values():
        ptx = kernel_for(grp)
        mod = cuport.Module(ptx)
        k = mod.kernel("t")
        ins = [np.array(col, dtype=np.uint64) for col in input_rows(grp)]
        nd = len(grp[0].dsts)
        res = np.zeros(len(grp) * nd, dtype=np.uint64)
        block = min(len(grp), 256)
        k(((len(grp) + block - 1) // block, 1, 1), (block, 1, 1), (*ins, res, len(grp)))
        for i, c in enumerate(grp):
            out[c.key()] = [int(x) for x in res[i * nd:(i + 1) * nd]]
    return out


def load_gpu(family: str) -> dict[str, list[int]]:
    p = HERE / "gpu" / f"{family}.json"
    if not p.exists():
        return {}
    return json.loads(p.read_text())


def describe(c: Case) -> str:
    ins = ", ".join(repr(v) for v in c.inputs)
    return f"{c.instr} ({ins})" + (f" [{c.note}]" if c.note else "")


def matches(got: int, want, t: str, c: Case) -> bool:
    wb = to_bits(want, t)
    if got == wb:
        return True
    if t in ("f32", "f64", "f16", "bf16"):
        g, w = from_bits(got, t), from_bits(wb, t)
        if isinstance(g, float) and isinstance(w, float) and math.isnan(g) and math.isnan(w) and c.note != "exact-nan":
            return True
        if c.tolerance_ulps and ulp_distance(got, wb, t) <= c.tolerance_ulps:
            return True
        if c.abs_tolerance and abs(g - w) <= c.abs_tolerance:
            return True
    return False


def check(cases: list[Case], family: str) -> list[str]:
    """All mismatches of cuport against `expect` and against the GPU recording (if any).

    A case with `gpu_differs` (cuport departs from the GPU on purpose, for the reason given)
    is checked against `expect` only."""
    got = run_cases(cases)
    gpu = load_gpu(family)
    errors: list[str] = []
    for c in cases:
        g = got[c.key()]
        if c.expect is not None:
            for i, (t, w) in enumerate(zip(c.dsts, c.expect, strict=False)):
                if not matches(g[i], w, t, c):
                    errors.append(f"{describe(c)}: dst{i} = {from_bits(g[i], t)!r} ({g[i]:#x}), expected {w!r}")
        elif c.gpu_differs:
            errors.append(f"{describe(c)}: a case that differs from the GPU needs an expectation")
        r = gpu.get(c.key())
        if r is not None and not c.gpu_differs:
            for i, t in enumerate(c.dsts):
                if not matches(g[i], _B(r[i]), t, c):
                    errors.append(
                        f"{describe(c)}: dst{i} = {from_bits(g[i], t)!r} ({g[i]:#x}), "
                        f"the GPU answers {from_bits(r[i], t)!r} ({r[i]:#x})"
                    )
        elif r is None and c.expect is None:
            errors.append(f"{describe(c)}: no expectation and no GPU recording")
    return errors


def _B(v: int):
    from ptxgen import Bits

    return Bits(v)
