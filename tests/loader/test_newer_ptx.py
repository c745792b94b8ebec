"""PTX for a newer target than the device's compute capability is translated.

cuport reports compute capability 9.0 but translates PTX, so it is not bound by it:
libcudadevrt.a (dynamic parallelism, linked into -rdc=true programs), CuPy's prebuilt
CUB kernels and NVIDIA's library wheels carry PTX for sm_120/sm_121 only, which used
to be refused with CUDA_ERROR_NO_BINARY_FOR_GPU. Made from what nvcc emits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capi"))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402

from cuport.loader import parse_file, relocatable_ptx_in_file  # noqa: E402

VADD = r"""
#include <cstdio>
__global__ void vadd(const int *a, const int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + 3 * b[i];
}
int main() {
    const int n = 1000;
    int h[3][n], *d[3];
    for (int i = 0; i < n; i++) { h[0][i] = i; h[1][i] = 7 - i; }
    for (auto &p : d) cudaMalloc(&p, sizeof h[0]);
    cudaMemcpy(d[0], h[0], sizeof h[0], cudaMemcpyHostToDevice);
    cudaMemcpy(d[1], h[1], sizeof h[1], cudaMemcpyHostToDevice);
    vadd<<<(n + 127) / 128, 128>>>(d[0], d[1], d[2], n);
    cudaError_t e = cudaMemcpy(h[2], d[2], sizeof h[2], cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); return 2; }
    for (int i = 0; i < n; i++)
        if (h[2][i] != i + 3 * (7 - i)) { printf("FAIL at %d\n", i); return 1; }
    printf("PASS\n");
    return 0;
}
"""

# Dynamic parallelism: nvcc links libcudadevrt.a, whose relocatable PTX is sm_121's only.
CDP = r"""
__global__ void child(int *p) { p[threadIdx.x] += 1; }
__global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }
int main() { return 0; }
"""


@pytest.fixture(scope="module")
def nvcc():
    return need_nvcc()


def test_program_with_only_newer_ptx_runs(nvcc, tmp_path):
    src = tmp_path / "vadd.cu"
    src.write_text(VADD)
    exe = tmp_path / "vadd"
    r = run([nvcc, "-o", str(exe), str(src), "-gencode", "arch=compute_120,code=compute_120"],
            timeout=300)
    assert r.returncode == 0, r.stderr
    assert [p.target for p in parse_file(str(exe)).ptx] == ["sm_120"]
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "PASS", r.stdout + r.stderr


def test_libcudadevrt_ptx_is_taken(nvcc, tmp_path):
    src = tmp_path / "cdp.cu"
    src.write_text(CDP)
    exe = tmp_path / "cdp"
    r = run([nvcc, "-rdc=true", "-o", str(exe), str(src)], timeout=300)
    assert r.returncode == 0, r.stderr
    modules = relocatable_ptx_in_file(str(exe), 90)
    targets = [m.target for m in modules]
    assert len(modules) >= 2 and targets[0] == "sm_75", targets
    newer = [m for m in modules if m.arch > 90]
    assert newer and any("cudaGetParameterBuffer" in m.text or "cudaLaunchDevice" in m.text
                         for m in newer), targets
