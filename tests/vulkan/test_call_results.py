"""A call that names a result its callee does not give: numba-cuda's declare_device of a C
function returning void declares it with a b64 result, and the definition, linked from
another module, has none (numba-cuda's TestDeclareDeviceCABI). The Vulkan backend's inlining
refused the call ("a call of consume with the wrong number of arguments"); the CPU backend ran
it, as a GPU does, leaving the result unwritten. nvcc's PTX of the same shape (-rdc, two
modules) must give the CPU's answers on both backends.
"""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport

CALLER = r"""
extern "C" __device__ long long consume(int x);  // declared with a result
extern "C" __global__ void kernel(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { consume(x[i]); x[i] = 2 * x[i]; }
}
"""
CALLEE = r"""
extern "C" __device__ void consume(int x) { asm volatile("" :: "r"(x)); }  // defined without
"""


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_call_naming_a_result_the_callee_lacks(tmp_path, tmp_path_factory, device):
    if device == "vulkan":
        from cuport.backends.vulkan import runtime

        if not runtime.devices():
            pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    texts = []
    for name, src in (("caller", CALLER), ("callee", CALLEE)):
        (tmp_path / f"{name}.cu").write_text(src)
        texts.append(ptx_of(tmp_path_factory, tmp_path / f"{name}.cu", "sm_90", "-rdc=true"))
    assert "(.param .b64 func_retval0) consume" in texts[0]
    x = np.arange(100, dtype=np.int32)
    cuport.Module(texts, device=device).kernel("kernel")(grid=1, block=128, args=(x, np.int32(100)))
    assert np.array_equal(x, 2 * np.arange(100))
