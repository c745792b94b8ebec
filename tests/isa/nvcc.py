"""CUDA C++ → PTX with the installed nvcc, for tests whose threads interact.

Each distinct (source, arch) is compiled once per test session into a temporary
directory; tests that need it skip when nvcc is not installed.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import cuport

_DIR = Path(tempfile.mkdtemp(prefix="cuport-isa-nvcc-"))


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    p = Path("/usr/local/cuda/bin/nvcc")
    return str(p) if p.exists() else None


@functools.cache
def ptx_of(source: str, arch: str = "sm_80") -> str:
    """`nvcc -ptx -arch=<arch>` of a CUDA source text."""
    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    h = hashlib.sha1((arch + source).encode()).hexdigest()[:16]
    cu = _DIR / f"k{h}.cu"
    out = _DIR / f"k{h}.ptx"
    cu.write_text(source)
    subprocess.run([nvcc, "-ptx", f"-arch={arch}", "-o", str(out), str(cu)], check=True,
                   capture_output=True, text=True)
    return out.read_text()


@functools.cache
def module_of(source: str, arch: str = "sm_80") -> cuport.Module:
    return cuport.Module(ptx_of(source, arch))


@functools.cache
def ptx_module(ptx: str) -> cuport.Module:
    return cuport.Module(ptx)


def run(mod: cuport.Module, name: str, grid, block, *args) -> None:
    """Launch `name`; NumPy arrays are passed by address and updated in place."""
    mod.kernel(name)(grid, block, tuple(args))


def u32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint32)
