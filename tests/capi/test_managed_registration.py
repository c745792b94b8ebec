"""`__managed__` variables: the runtime registers them before any context is current.

It calls cuLibraryGetManaged right after loading the library, with no context: the
library API needs none (a managed variable belongs to the library), and cuport answered
CUDA_ERROR_INVALID_CONTEXT, so the program crashed writing the variable from the host.
"""

from __future__ import annotations

import pytest
from capi_support import clean_env, cuport_command, need_nvcc, run

MANAGED = r"""
#include <cstdio>
__managed__ int counter[4];
__managed__ float scale = 1.5f;
__global__ void bump() { atomicAdd(&counter[threadIdx.x % 4], 1); }
__global__ void grow() { scale *= 2.0f; }
int main() {
    counter[0] = 100;  // written by the host before any kernel ran
    bump<<<2, 64>>>();
    grow<<<1, 1>>>();
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("sync failed\n"); return 2; }
    printf("%d %d %d %d %g\n", counter[0], counter[1], counter[2], counter[3], scale);
    bool ok = counter[0] == 132 && counter[1] == 32 && counter[2] == 32 && counter[3] == 32
              && scale == 3.0f;
    printf(ok ? "PASS\n" : "FAIL\n");
    return ok ? 0 : 1;
}
"""


@pytest.mark.parametrize("cudart", ["static", "shared"])
def test_managed_variables(tmp_path, cudart):
    nvcc = need_nvcc()
    src = tmp_path / "managed.cu"
    src.write_text(MANAGED)
    exe = tmp_path / "managed"
    r = run([nvcc, "-o", str(exe), str(src), "-cudart", cudart], timeout=300)
    assert r.returncode == 0, r.stderr
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines() == ["132 32 32 32 3", "PASS"], \
        r.stdout + r.stderr
    assert "cuport:" not in r.stderr, r.stderr
