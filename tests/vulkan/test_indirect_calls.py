"""Calls through function pointers on the Vulkan backend (passes/indirect_calls.py): a
device function's address is its token, as on the CPU backend, a call through it reaches
the function, and a call through a number that is no function's address fails the launch
instead of calling something. tests/programs/virtual_calls.cu runs the C++ forms (virtual
functions, tables, recursion) on every backend."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import need_nvcc, run  # noqa: E402

SOURCE = r"""
typedef int (*op_t)(int);
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ int plus3(int x) { return x + 3; }
extern "C" __global__ void pick(op_t* slot, int k) { slot[0] = k ? twice : plus3; }
extern "C" __global__ void call(op_t* slot, int* out) {
    int i = threadIdx.x;
    out[i] = slot[i & 1](i);  // two targets in one warp
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    nvcc = need_nvcc()
    d = tmp_path_factory.mktemp("icall")
    (d / "icall.cu").write_text(SOURCE)
    r = run([nvcc, "-ptx", "-O3", "-arch=sm_80", "-o", str(d / "icall.ptx"), str(d / "icall.cu")])
    assert r.returncode == 0, r.stderr
    return (d / "icall.ptx").read_text()


def _slots(module, ks) -> np.ndarray:
    slots = np.zeros(len(ks), np.uint64)
    one = np.zeros(1, np.uint64)
    for i, k in enumerate(ks):
        module.kernel("pick")((1,), (1,), (one, np.int32(k)))
        slots[i] = one[0]
    return slots


def test_a_call_through_a_pointer_reaches_its_function_on_both_backends(ptx):
    import cuport

    outs = {}
    for device in ("cpu", "vulkan"):
        m = cuport.Module(ptx, device=device)
        slots = _slots(m, [1, 0])
        out = np.zeros(32, np.int32)
        m.kernel("call")((1,), (32,), (slots, out))
        outs[device] = (slots, out)
    want = np.array([2 * i if i % 2 == 0 else i + 3 for i in range(32)], np.int32)
    assert (outs["vulkan"][1] == want).all(), outs["vulkan"][1]
    assert (outs["cpu"][1] == want).all(), outs["cpu"][1]
    assert (outs["vulkan"][0] == outs["cpu"][0]).all()  # the same tokens


def test_a_call_through_a_number_that_is_no_function_fails_the_launch(ptx):
    import cuport

    m = cuport.Module(ptx, device="vulkan")
    slots = _slots(m, [1, 0])
    slots[1] = 0x1234  # not a function's address
    out = np.zeros(32, np.int32)
    with pytest.raises(cuport.BackendError) as e:
        m.kernel("call")((1,), (32,), (slots, out))
    # (a trap at the call's PTX line: a GPU answers an illegal-instruction or -address error)
    assert e.value.code != 0 and "PTX line" in str(e.value) and "trap" in str(e.value), e.value
