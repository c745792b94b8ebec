"""`cuport ptx --dump-after STEP`: the state after each named step of either backend's
pass pipeline, for nvcc's PTX of a kernel with a shared-memory tree and a barrier."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuport.backends.cpu.compiler import STEPS as CPU_STEPS
from cuport.backends.vulkan.compiler import PIPELINE as VULKAN_PIPELINE

SOURCE = r"""
__global__ void tree(const float* in, float* out) {
  __shared__ float s[128];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * 128 + t];
  __syncthreads();
  for (int w = 64; w > 0; w >>= 1) {
    if (t < w) s[t] += s[t + w];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
"""


@pytest.fixture(scope="module")
def ptx_file(tmp_path_factory) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    d = tmp_path_factory.mktemp("ptxdump")
    (d / "tree.cu").write_text(SOURCE)
    subprocess.run([nvcc, "-ptx", "-arch=sm_80", "-o", str(d / "tree.ptx"), str(d / "tree.cu")],
                   check=True, capture_output=True)
    return d / "tree.ptx"


def cuport_ptx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuport.cli", "ptx", *args], capture_output=True,
                          text=True)


def test_list_steps_names_every_step_with_its_reason():
    out = cuport_ptx("--list-steps").stdout.splitlines()
    assert [line.split()[0] for line in out] == CPU_STEPS
    assert all(len(line.split()) > 3 for line in out)  # a reason on each line
    vk = cuport_ptx("--list-steps", "--device", "vulkan").stdout.splitlines()
    assert [line.split()[0] for line in vk] == [n for n, _, _ in VULKAN_PIPELINE]


def test_cpu_steps(ptx_file):
    div = cuport_ptx("--dump-after", "divergence", "--block", "128", str(ptx_file))
    assert div.returncode == 0, div.stderr
    varying = div.stdout.splitlines()[0]
    assert varying.startswith("varying:") and "%r" in varying  # tid.x-derived registers
    bars = cuport_ptx("--dump-after", "barriers", "--block", "128", str(ptx_file)).stdout
    assert "simple protocol: yes" in bars  # every __syncthreads is in converged code
    ir = cuport_ptx("--dump-after", "emit", "--block", "128", str(ptx_file)).stdout
    assert "define internal i32 @\"warp__Z4treePKfPf\"" in ir and "@\"worker\"" not in ir
    full = cuport_ptx("--dump-after", "runner", "--block", "128", str(ptx_file)).stdout
    assert "define void @\"worker\"" in full
    asm = cuport_ptx("--dump-after", "codegen", "--block", "128", str(ptx_file)).stdout
    assert "worker:" in asm


def test_vulkan_steps(ptx_file):
    out = cuport_ptx("--device", "vulkan", "--dump-after", "layout", str(ptx_file))
    assert out.returncode == 0, out.stderr
    assert "shared {'_ZZ4treePKfPfE1s': 0}" in out.stdout


def test_unknown_step_names_the_steps(ptx_file):
    out = cuport_ptx("--dump-after", "nosuchstep", str(ptx_file))
    assert out.returncode == 2
    assert "no step 'nosuchstep'" in out.stderr and "divergence" in out.stderr
