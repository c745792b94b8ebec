"""Launches recorded by the plan of their kernel and shape (backend.py LaunchPlan,
run_planned): the push constants after a launch's own 16 bytes are packed once per shape,
so a launch must still see its own shape, its own arguments, and memory allocated after the
plan was made.

launch_plans.cu runs the program's view on the CPU (the reference) and on Vulkan. On lavapipe
device addresses are host addresses, so memory allocated later lies inside the span the
kernels already check; the span growing (a discrete GPU's new allocations lie above the
others) is checked at the backend instead.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from pathlib import Path

import pytest
from nvcc_ptx import ptx_of
from vkrt_support import vkrt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))
sys.path.insert(0, str(HERE.parent))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

EXPECTED = [
    "shapes: 27 launches, 0 wrong",
    "memory allocated after the plan: 0 wrong",
    "arguments: 40 launches, 0 wrong",
    "order: 3000 launches, as on the host",
]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    exe = tmp_path_factory.mktemp("launch_plans") / "launch_plans"
    r = run([need_nvcc(), "-o", str(exe), str(HERE / "launch_plans.cu")], timeout=600)
    if r.returncode != 0:
        pytest.fail(f"nvcc failed:\n{r.stderr}")
    return exe


SETTINGS = [(d, {}) for d in devices()] + [
    ("vulkan", {"CUPORT_VK_COPIES": "1"}),  # (parameters recorded with vkCmdUpdateBuffer)
    ("vulkan", {"CUPORT_VK_SUBMIT": "eager"}),  # (submitted on the launching thread)
] if "vulkan" in devices() else [(d, {}) for d in devices()]


@pytest.mark.parametrize("device, extra", SETTINGS,
                         ids=[d + "".join(f"-{v}" for v in e.values()) for d, e in SETTINGS])
def test_launches_of_one_kernel_in_several_shapes(program, device, extra):
    r = run([*cuport_command(), "run", str(program)],
            env=clean_env(CUPORT_DEVICE=device, CUPORT_SPIRV_VALIDATE="1", **extra), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == EXPECTED, r.stdout + r.stderr


def test_a_planned_launch_checks_addresses_against_memory_allocated_since(tmp_path_factory):
    """The plan of axpy<<<1, 32>>> is made while the span of device memory that kernels check
    their addresses against holds none of y (as if y were allocated after it); the next launch
    of that shape writes y, and must use the span of now."""
    if not vkrt.devices():
        pytest.skip("no Vulkan device")
    from cuport.backends.vulkan.backend import get_vulkan_backend

    be = get_vulkan_backend()
    m = be.load_module([ptx_of(tmp_path_factory, HERE / "launch_plans.cu")])
    k = m.kernel(next(n for n in m.kernel_names() if "axpy" in n))
    x, y = be.allocate_buffer(128), be.allocate_buffer(128)
    be.write(x.address, struct.pack("<32f", *range(32)))
    be.write(y.address, struct.pack("<32f", *[1.0] * 32))
    offsets = [p.offset for p in k.info.params]

    def params(a: float, n: int) -> bytes:
        out = bytearray(k.info.param_size)
        struct.pack_into("<Q", out, offsets[0], y.address)
        struct.pack_into("<Q", out, offsets[1], x.address)
        struct.pack_into("<f", out, offsets[2], a)
        struct.pack_into("<i", out, offsets[3], n)
        return bytes(out)

    memory = be.dev.memory
    span = memory.lowest, memory.highest
    be.use_lane(None)
    try:
        memory.lowest = memory.highest = span[1]  # (an empty span: no address passes)
        k.launch_queued((1, 1, 1), (32, 1, 1), 0, params(2.0, 0))  # (touches no memory)
    finally:
        memory.lowest, memory.highest = span
    k.launch_queued((1, 1, 1), (32, 1, 1), 0, params(2.0, 32))
    assert be.drain() is None
    out = ctypes.create_string_buffer(128)
    be.copy_dtoh(ctypes.addressof(out), y.address, 128)
    assert struct.unpack("<32f", out.raw) == tuple(2.0 * i + 1.0 for i in range(32))
