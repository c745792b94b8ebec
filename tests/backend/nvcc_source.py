"""Test support: PTX that nvcc makes from CUDA source text held in a test module (the
kernels tests/backend's pass tests look at), at test time; no PTX is kept in the repo."""

from __future__ import annotations

import shutil
import subprocess

import pytest

#: for a module's `pytestmark`: its kernels need nvcc
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc builds the kernels")


def ptx_of_source(tmp_path_factory, name: str, source: str, arch: str = "sm_75") -> str:
    d = tmp_path_factory.mktemp(name)
    (d / "k.cu").write_text(source)
    subprocess.run(["nvcc", "-ptx", "-O3", f"-arch={arch}", "-o", str(d / "k.ptx"), str(d / "k.cu")],
                   check=True)
    return (d / "k.ptx").read_text()
