"""PTX `.volatile` accesses stay volatile in the CPU backend's LLVM IR (cpu/llvm_volatile.py):
llvmlite writes no `volatile` keyword, so nvcc's ld.volatile/st.volatile were plain accesses
that LLVM merged (two reads of a flag became one, two writes one)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport

pytestmark = needs_nvcc

SOURCE = r"""
extern "C" __global__ void twice(volatile int* flag, int* out) {
  int a = *flag;
  int b = *flag;
  out[threadIdx.x] = a * 3 + b;
  if (threadIdx.x == 0) { flag[1] = a; flag[1] = b + 1; }
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "volatile", SOURCE)


def test_volatile_reads_and_writes_survive_llvm(ptx, tmp_path):
    assert ptx.count("ld.volatile.global") == 2 and ptx.count("st.volatile.global") == 2
    (tmp_path / "k.ptx").write_text(ptx)
    r = subprocess.run([sys.executable, "-m", "cuport.cli", "ptx", "--dump-after", "optimize",
                        "--block", "32", str(tmp_path / "k.ptx")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("load volatile") >= 2, r.stdout
    assert r.stdout.count("store volatile") >= 2, r.stdout


def test_the_kernel_still_computes(ptx):
    flag = np.array([5, 0], np.int32)
    out = np.zeros(32, np.int32)
    cuport.Module(ptx).kernel("twice")(1, 32, (flag, out))
    assert (out == 20).all() and flag[1] == 6
