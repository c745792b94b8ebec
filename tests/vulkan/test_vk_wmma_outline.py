"""wmma on the Vulkan backend is built once per kernel module (isa/wmma.py through em.outline
and em.outline_access, backends/vulkan/lower_outline.py): each kind of load, store and mma
is one SPIR-V function, a site is an OpFunctionCall. Built in place, cudaTensorCoreGemm's
kernel (2053 mma, 1541 loads: its k loop unrolled) was 2.6 million SPIR-V ids, 100 s in
cuport's translator. Checked here: the functions and calls of an unrolled kernel, valid
SPIR-V for both warp mappings with address checks, results against numpy on the device,
and a wild address in the second of two sites of one load function failing the launch at
that site's PTX line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of
from spvtools import disassemble, validate

import cuport
from cuport.api import Pointer
from cuport.backends.base import CUDA_ERROR_ILLEGAL_ADDRESS, BackendError

HERE = Path(__file__).resolve().parent
STEPS = 8  # wmma_outline.cu's k steps, unrolled: 8 sites of each load and of mma



@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "wmma_outline.cu", "sm_80")


def _backend():
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return get_vulkan_backend()


def _run(ptx: str, name: str, args: list) -> None:
    """One warp of `name`, arrays staged through device memory (cuport.api)."""
    cuport.Module(ptx, device="vulkan").kernel(name)((1, 1, 1), (32, 1, 1), args)


@pytest.mark.parametrize("subgroup,workgroup_memory", [(32, 48 * 1024), (8, 48 * 1024), (8, 0)])
def test_one_function_per_kind_and_a_call_per_site(ptx, subgroup: int, workgroup_memory: int):
    """Also where the warps' exchanges go through shared memory kept in device memory
    (slices.py), whose accesses are checked in the mma function too."""
    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.backends.vulkan.lower import DeviceCaps
    from cuport.ptx.parser import parse

    caps = DeviceCaps(subgroup_size=subgroup, sink_page=4096, zero_page=8192,  # address checks
                      workgroup_memory=workgroup_memory)
    spirv = compile_kernel(parse(ptx), "gemm_steps", (32, 1, 1), 0, caps).shader.spirv
    validate(spirv)
    text = disassemble(spirv)
    kinds = {name: fid for fid, name in re.findall(r'OpName (%\S+) "(cuport\.outlined\.[^"]+)"', text)}
    assert sorted(kinds) == sorted([
        "cuport.outlined.wmma.load.16x16.f16.row.global.b16",
        "cuport.outlined.wmma.load.16x16.f16.col.global.b16",
        "cuport.outlined.wmma.16x16x16.f32.f16.f16.f32",
        "cuport.outlined.wmma.store.16x16.f32.row.global.b32"]), kinds
    calls = re.findall(r"OpFunctionCall %\S+ (%\S+)", text)
    for name, fid in kinds.items():
        assert calls.count(fid) == (1 if ".store." in name else STEPS), name


def test_unrolled_kernel_results(ptx):
    _backend()
    rng = np.random.default_rng(5)
    A = rng.standard_normal(16 * 16 * STEPS).astype(np.float16)
    B = rng.standard_normal(16 * 16 * STEPS).astype(np.float16)
    D = np.zeros(256, np.float32)
    _run(ptx, "gemm_steps", [A, B, D])
    a = A.reshape(16, 16 * STEPS).astype(np.float64)
    b = B.reshape(16, 16 * STEPS).T.astype(np.float64)  # column-major b: row j of B is column j
    assert np.allclose(D.reshape(16, 16), a @ b, rtol=1e-5, atol=1e-3)


def test_a_wild_address_fails_at_its_own_site(ptx):
    """The load function's address check is noted by the caller: the launch error names the
    second site's PTX line, not the first one's (whose address is fine)."""
    be = _backend()
    if not be.caps.sink_page:
        pytest.skip("global addresses are not checked (CUPORT_VK_ADDRESS_CHECK=0)")
    lines = ptx.splitlines()
    start = next(i for i, t in enumerate(lines) if ".entry two_loads(" in t)
    loads_a = [i + 1 for i in range(start, len(lines)) if "wmma.load.a" in lines[i]]
    assert len(loads_a) == 2
    A = np.ones(256, np.float16)
    D = np.zeros(256, np.float32)
    _run(ptx, "two_loads", [A, A, A, D])
    assert (D == 32).all()
    with pytest.raises(BackendError, match=rf"kernel two_loads: illegal address 0x10 \(PTX line {loads_a[1]}\b") as e:
        _run(ptx, "two_loads", [A, Pointer(0x10), A, D])
    assert e.value.code == CUDA_ERROR_ILLEGAL_ADDRESS
