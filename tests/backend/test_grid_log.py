"""CUPORT_GRID_LOG: runtime.c writes a line per grid the CPU backend runs, reading the
launch's grid and block count out of LaunchCtx at the offsets layout.py gives it (they
were a hard-coded 24 once); bench/grid_log.py reads the lines back. Checked: the kernel's
name, each grid's dimensions and block count, the workers that took part."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nvcc_source import needs_nvcc

pytestmark = needs_nvcc
ROOT = Path(__file__).resolve().parents[2]

SOURCE = r"""
#include <cstdio>
__global__ void fill(int* out, int v) {
  int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  out[b * blockDim.x + threadIdx.x] = v;
}
int main() {
  int* d; cudaMalloc(&d, 35 * 32 * sizeof(int));
  dim3 grids[] = {dim3(3, 2, 1), dim3(5, 1, 7), dim3(1, 1, 1)};
  int h[35 * 32], ok = 1;
  for (dim3 g : grids) {
    int n = g.x * g.y * g.z * 32;
    cudaMemset(d, 0, n * sizeof(int));
    fill<<<g, 32>>>(d, 9);
    cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; i++) ok &= h[i] == 9;
  }
  printf("%s\n", ok ? "PASS" : "FAIL");
  return !ok;
}
"""


def test_grid_log_names_each_grid(tmp_path):
    (tmp_path / "fill.cu").write_text(SOURCE)
    subprocess.run(["nvcc", "-O2", "-o", str(tmp_path / "fill"), str(tmp_path / "fill.cu")], check=True)
    log = tmp_path / "grids.log"
    env = dict(os.environ, CUPORT_GRID_LOG=str(log), CUPORT_THREADS="2",
               CUPORT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CUPORT_DEVICE", None)
    r = subprocess.run([sys.executable, "-m", "cuport.cli", "run", str(tmp_path / "fill")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "PASS", r.stdout + r.stderr
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    assert [(r[1], r[2], r[3]) for r in rows] == [("_Z4fillPii", "3,2,1", "6"), ("_Z4fillPii", "5,1,7", "35"),
                                                  ("_Z4fillPii", "1,1,1", "1")]
    assert all(1 <= int(r[5]) <= int(r[4]) <= 2 for r in rows)  # workers that ran <= asked <= 2
    sys.path.insert(0, str(ROOT / "bench"))
    import grid_log

    assert {k: v[0] for k, v in grid_log.read(log).items()} == {
        ("fill", "3,2,1", 6): 1, ("fill", "5,1,7", 35): 1, ("fill", "1,1,1", 1): 1}
