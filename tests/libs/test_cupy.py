"""CuPy under `cuport run`, with no extra settings: its cuBLAS, cuSOLVER, cuFFT, cuRAND and
cuSPARSE calls reach cuport's stand-ins (preloaded by `cuport run`, so they win over
NVIDIA's wheels), its own kernels (NVRTC-built, CUB) run on cuport's driver, and the
results are numpy's. tests/libs/cupy_checks.py runs every check in one process (CuPy's
import and its compiled kernels are shared); each test here asserts its check's line."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

import libs_support  # noqa: F401 - puts tests/capi on sys.path
import pytest
from capi_support import clean_env, cuport_command

pytest.importorskip("cupy")

CHECKS = Path(__file__).resolve().parent / "cupy_checks.py"
NAMES = ["matmul_f32", "matmul_f64", "matmul_f16", "matmul_batched", "solve", "inv", "inv_batched", "solve_batched", "svd",
         "fftn", "irfft", "random_state_normal", "default_rng_normal", "sparse_spmv"]


@cache
def results() -> tuple[dict[str, str], str, int]:
    r = subprocess.run([*cuport_command(), "run", sys.executable, str(CHECKS)],
                       env=clean_env(), capture_output=True, text=True, timeout=1500)
    lines = {}
    for line in r.stdout.splitlines():
        name, _, verdict = line.partition(" ")
        lines[name] = verdict
    return lines, r.stderr, r.returncode


@pytest.mark.parametrize("name", NAMES)
def test_cupy(name):
    lines, stderr, code = results()
    assert lines.get(name) == "OK", f"{name}: {lines.get(name)}\n{stderr[-3000:]}"


def test_cupy_exits_cleanly():
    """Every check ran, the process exited 0 and printed nothing about errors at exit
    (CuPy's handles are destroyed after the interpreter has ended)."""
    lines, stderr, code = results()
    assert code == 0 and sorted(lines) == sorted(NAMES), (code, lines)
    assert "Error in sys.excepthook" not in stderr and "Traceback" not in stderr, stderr[-3000:]
