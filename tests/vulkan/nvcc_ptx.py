"""Test support: PTX built by nvcc from a .cu file of the tests, at test time (no PTX is kept
in the repository), or a skip where nvcc is not installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def ptx_of(tmp_path_factory, source: Path, arch: str = "sm_80", *flags: str) -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is needed to build the kernels")
    out = tmp_path_factory.mktemp(source.stem) / f"{source.stem}.ptx"
    subprocess.run([nvcc, "-ptx", f"-arch={arch}", "-O3", *flags, "-o", str(out), str(source)],
                   check=True)
    return out.read_text()
