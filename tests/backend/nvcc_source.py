"""Test support: PTX that nvcc makes from CUDA source text held in a test module (the
kernels tests/backend's pass tests look at), at test time; no PTX is kept in the repo."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

#: for a module's `pytestmark`: its kernels need nvcc
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc builds the kernels")


def ptx_of_source(tmp_path_factory, name: str, source: str, arch: str = "sm_75") -> str:
    d = tmp_path_factory.mktemp(name)
    (d / "k.cu").write_text(source)
    subprocess.run(["nvcc", "-ptx", "-O3", f"-arch={arch}", "-o", str(d / "k.ptx"), str(d / "k.cu")],
                   check=True)
    return (d / "k.ptx").read_text()


#: bench/run.py's 5-point Jacobi sweep over a 16x16 shared tile with its halo, the kernel
#: several backend tests compile (its halo rows and columns, border test, tile reads)
JACOBI_CU = Path(__file__).resolve().parents[2] / "bench" / "kernels" / "jacobi.cu"


def jacobi_source(name: str = "jacobi") -> str:
    """bench/kernels/jacobi.cu as CUDA source whose kernel is `extern "C"` NAME."""
    text = JACOBI_CU.read_text()
    head = "__global__ void jacobi("
    assert text.count(head) == 1, JACOBI_CU
    return text.replace(head, f'extern "C" __global__ void {name}(')


def jacobi_ref(u: np.ndarray) -> np.ndarray:
    """One sweep of jacobi_source's kernel on the host: the border copied."""
    ref = u.copy()
    ref[1:-1, 1:-1] = np.float32(0.25) * ((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2] + u[1:-1, 2:])
    return ref
