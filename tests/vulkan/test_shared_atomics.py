"""Float atomics on shared memory in the device's workgroup memory (shared_atomics.cu, nvcc's
PTX): atom.shared.add.f32 asked the driver for OpAtomicFAddEXT on the Workgroup array of
integer words, which SPIR-V cannot express, so every such kernel failed to translate
(CUDA_ERROR_NOT_SUPPORTED, "access of float through a pointer to i32") on a device with
shaderSharedFloat32AtomicAdd (lavapipe; NVIDIA's driver too): numba-cuda's shared-memory
atomic adds. Checked against a host reference and the CPU backend's answers; the SPIR-V goes
through spirv-val.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport

HERE = Path(__file__).resolve().parent
BINS = 64


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "shared_atomics.cu", "sm_90")


def _args(keys: np.ndarray) -> list:
    return [keys, np.int32(len(keys)), np.zeros(BINS, np.float32)]


def test_float_atomic_adds_on_workgroup_memory(ptx, monkeypatch):
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    monkeypatch.setenv("CUPORT_SPIRV_VALIDATE", "1")
    keys = np.random.default_rng(5).integers(0, 1 << 20, 20000, dtype=np.uint32)
    args = _args(keys)
    k = cuport.Module(ptx, device="vulkan").kernel("shared_float_sums")
    k((6, 1, 1), (256, 1, 1), args)
    assert k._k.slice_bytes((256, 1, 1), 0) == 0  # in workgroup memory, not a device slice
    counts = np.bincount(keys % BINS, minlength=BINS)
    assert np.array_equal(args[2], 0.5 * counts.astype(np.float32))
    cpu = _args(keys)
    cuport.Module(ptx).kernel("shared_float_sums")((6, 1, 1), (256, 1, 1), cpu)
    assert np.array_equal(args[2], cpu[2])
