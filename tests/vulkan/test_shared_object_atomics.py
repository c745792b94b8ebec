"""An atomic through a generic pointer that address-space inference cannot keep off local
memory (`this` of an object in shared memory, the pointer itself kept in shared memory, as
cuda-samples newdelete's placement-new container): the Vulkan backend refused the kernel
("an atomic on local memory"); now the local case is a plain read-modify-write (PTX leaves
atomics on local memory undefined) and the shared one the atomic it is."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import need_nvcc, run  # noqa: E402

SOURCE = r"""
struct Counter {
    int n;
    __device__ void add(int v) { atomicAdd(&n, v); }
};
extern "C" __global__ void shared_counter(int* out) {
    __shared__ Counter c;
    __shared__ Counter* volatile p;
    if (threadIdx.x == 0) { c.n = 0; p = &c; }
    __syncthreads();
    p->add(threadIdx.x + 1);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = p->n;
}
"""


def test_an_atomic_on_an_object_in_shared_memory_through_a_stored_pointer(tmp_path):
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    import cuport

    (tmp_path / "k.cu").write_text(SOURCE)
    r = run([need_nvcc(), "-ptx", "-O3", "-arch=sm_80", "-o", str(tmp_path / "k.ptx"), str(tmp_path / "k.cu")])
    assert r.returncode == 0, r.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    assert "atom.add.u32" in ptx  # (through a generic address: no .shared)
    for device in ("cpu", "vulkan"):
        out = np.zeros(4, np.int32)
        cuport.Module(ptx, device=device).kernel("shared_counter")((4,), (64,), (out,))
        assert (out == 64 * 65 // 2).all(), (device, out)
