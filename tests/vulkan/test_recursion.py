"""Recursive device functions on the Vulkan backend's call stack (passes/call_stack.py).

The kernels are nvcc's (recursion.cu, built with -ptx at test time), run on the CPU backend
and on the first Vulkan device with every SPIR-V module through spirv-val; both must give
the host reference's answers; FRAME_PTX is the one case nvcc does not write. stack_limit.cu
checks that cudaDeviceSetLimit's stack size reaches the Vulkan kernel and that an overflow
is the launch's error.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport
from cuport.backends.base import (
    CUDA_ERROR_HARDWARE_STACK_ERROR,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    CUDA_ERROR_NOT_SUPPORTED,
    BackendError,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

HERE = Path(__file__).resolve().parent
M32, M64 = (1 << 32) - 1, (1 << 64) - 1
STATS = np.dtype([("sum", "<i8"), ("count", "<i4"), ("depth", "<i4")])


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "recursion.cu", "sm_75")


@pytest.fixture(scope="module", params=devices())
def mod(request, ptx):
    if request.param != "cpu":
        mp = pytest.MonkeyPatch()
        mp.setenv("CUPORT_SPIRV_VALIDATE", "1")  # every module the backend builds: spirv-val
        request.addfinalizer(mp.undo)
    return cuport.Module(ptx, device=request.param)


def test_mutual_recursion(mod):
    n = 300
    x = np.random.default_rng(1).integers(0, 100, n).astype(np.uint32)
    out = np.full(n, -1, np.int32)
    mod.kernel("parity")(5, 64, (x, out, n))
    assert out.tolist() == [int(v % 2 == 0) for v in x]


def _hash_of(a: list[int]) -> int:
    h = 1469598103934665603
    for v in reversed(a):
        h = ((h ^ (v & M32)) * 1099511628211) & M64
    return h


def _permute(a: list[int], k: int, n: int) -> int:
    local = list(a[:n])
    if k == 1:
        return _hash_of(local)
    acc = 0
    for i in range(k):
        acc = (acc * 3 + _permute(local, k - 1, n)) & M64
        j = i if k % 2 == 0 else 0
        local[j], local[k - 1] = local[k - 1], local[j]
    return acc


def test_recursion_with_a_local_array_in_each_frame(mod):
    """Heap's algorithm: each frame's copy of the array is its own (and the recursive calls
    sit in a loop, reached again through the loop's header)."""
    n = 70
    a = np.random.default_rng(2).integers(0, 1000, n * 8).astype(np.int32)
    out = np.zeros(n, np.uint64)
    mod.kernel("permutations")(3, 32, (a, out, n))
    want = [_permute(a[8 * t:8 * t + 8].tolist(), 1 + t % 6, 1 + t % 6) for t in range(n)]
    assert out.tolist() == want


def _nest(n: int, k: int) -> int:
    if n <= 0:
        return k & 7
    s = 1
    for i in range(n % 3 + 1):
        s = _i32(s + _nest(n - 1 - i, k + i))
        for j in range((i ^ k) % 3):
            s = _i32(s ^ (_nest(n - 2 - j, k * 3 + j) << 1))
    return s


def _i32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def test_return_sites_in_nested_loops(mod):
    out = np.zeros(64, np.int32)
    mod.kernel("nested_loops")(2, 32, (out,))
    assert out.tolist() == [_nest(t % 9, t) for t in range(64)]


def _split(lo: int, hi: int, depth: int) -> tuple[int, int, int]:
    if hi - lo <= 2:
        return sum(i * i for i in range(lo, hi)), max(hi - lo, 0), depth
    mid = lo + (hi - lo) // 3
    a, b = _split(lo, mid, depth + 1), _split(mid, hi, depth + 1)
    return a[0] + b[0], a[1] + b[1], max(a[2], b[2])


def test_recursive_function_returning_a_struct(mod):
    n = 100
    out = np.zeros(n, STATS)
    mod.kernel("structs")(4, 32, (out, n))
    assert [tuple(int(v) for v in r) for r in out] == [_split(t, 3 * t + 5, 0) for t in range(n)]


def _walk(x: int, depth: int) -> int:
    if depth == 0:
        return x
    r = _walk((x * 3 + 1) & M32, depth - 1)
    if x & 1:
        r = (r + _walk(r ^ x, depth // 2)) & M32
    return r ^ (x >> 1)


def test_different_depths_in_the_lanes_of_a_warp(mod):
    out = np.zeros(96, np.uint32)
    mod.kernel("divergent")(3, 32, (out,))
    assert out.tolist() == [_walk(t, t % 13) for t in range(96)]


@lru_cache(None)
def _digit_sum(x: int) -> int:
    return x if x < 10 else x % 10 + _digit_sum(x // 10)


def _root_steps(x: int) -> int:
    if x < 10:
        return 0
    r = _root_steps(_digit_sum(x))
    return r * r + 1


def test_two_call_sites_and_a_nested_component(mod):
    n = 150
    x = np.random.default_rng(3).integers(0, 10**9, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    steps = np.zeros(n, np.int32)
    mod.kernel("two_sites")(3, 64, (x, out, steps, n))
    want = [_digit_sum(int(v)) + sum(_digit_sum(int(v) + i * 1000003) for i in range(t % 5))
            for t, v in enumerate(x)]
    assert out.tolist() == want
    assert steps.tolist() == [_root_steps(int(v)) for v in x]


def test_stack_overflow_is_the_launchs_error(mod):
    """Depths that fit the default 1024 bytes run; one thread asking for 100000 levels
    fails the launch with CUDA_ERROR_HARDWARE_STACK_ERROR naming the kernel, as on a GPU,
    and the launch ends (no hang, no corrupted memory)."""
    depths = np.array([0, 1, 5, 12] * 8, np.int32)
    out = np.full(32, -1, np.int32)
    sink = np.zeros(1, np.int32)
    mod.kernel("depth")(1, 32, (depths, out, sink))
    assert out.tolist() == depths.tolist()
    depths[9] = 100_000
    with pytest.raises(BackendError) as e:
        mod.kernel("depth")(1, 32, (depths, out, sink))
    assert e.value.code == CUDA_ERROR_HARDWARE_STACK_ERROR
    assert "kernel depth" in e.value.message and "stack" in e.value.message


@pytest.mark.skipif("vulkan" not in devices(), reason="no Vulkan device")
def test_a_stack_the_driver_cannot_make_is_the_launchs_error(ptx, monkeypatch):
    """NVIDIA's driver (580, H100) fails vkCreateComputePipelines with VK_ERROR_UNKNOWN for a
    32 KiB call stack per invocation: the launch fails as a launch beyond the device's
    resources, naming the kernel and the stack limit, not as an internal error."""
    from cuport.backends.vulkan import runtime

    def refuse(self, *args, **kwargs):
        raise runtime.VulkanError("vkCreateComputePipelines failed: VK_ERROR_UNKNOWN",
                                  "vkCreateComputePipelines", -13)

    monkeypatch.setattr(runtime.Device, "pipeline", refuse)
    m = cuport.Module(ptx, device="vulkan")
    out = np.zeros(32, np.int32)
    with pytest.raises(BackendError) as e:
        m.kernel("depth")(1, 32, (np.zeros(32, np.int32), out, np.zeros(1, np.int32)))
    assert e.value.code == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    assert "kernel depth" in e.value.message and "VK_ERROR_UNKNOWN" in e.value.message
    assert "cudaLimitStackSize" in e.value.message


def test_a_barrier_inside_recursion_is_refused_by_name(mod):
    out = np.zeros(32, np.int32)
    with pytest.raises(BackendError) as e:
        mod.kernel("barrier_in_recursion")(1, 32, (out,))
    assert e.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert "the recursive device function _Z6syncedi" in e.value.message
    if mod._backend.name != "cpu":
        assert "a CTA barrier inside the recursive device function _Z6syncedi" in e.value.message


#: nvcc reads a function's parameters first and writes its results last, so each can be one
#: variable (passes/call_stack.py); other PTX may read a parameter after a recursive call
#: and write a result before one: those must be the activation's own. (nvcc's calling
#: sequence, written by hand.)
FRAME_PTX = """
.version 8.0
.target sm_75
.address_size 64
.func (.param .b32 ret) f(.param .b32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    ld.param.u32 %r1, [n];
    st.param.b32 [ret], %r1;
    setp.lt.s32 %p1, %r1, 1;
    @%p1 bra DONE;
    add.s32 %r2, %r1, -1;
    {
    .param .b32 a;
    st.param.b32 [a], %r2;
    .param .b32 r;
    call.uni (r), f, (a);
    ld.param.b32 %r3, [r];
    }
    and.b32 %r4, %r3, 1;
    setp.eq.s32 %p2, %r4, 0;
    @%p2 bra DONE;
    ld.param.u32 %r5, [n];
    mad.lo.s32 %r6, %r5, 3, %r3;
    st.param.b32 [ret], %r6;
DONE:
    ret;
}
.visible .entry frames(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    {
    .param .b32 a;
    st.param.b32 [a], %r1;
    .param .b32 r;
    call.uni (r), f, (a);
    ld.param.b32 %r2, [r];
    }
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r2;
    ret;
}
"""


def _f(n: int) -> int:
    if n < 1:
        return n
    r = _f(n - 1)
    return n if r % 2 == 0 else r + 3 * n


@pytest.mark.parametrize("device", devices())
def test_parameters_read_after_a_call_and_results_written_before_one(device, monkeypatch):
    monkeypatch.setenv("CUPORT_SPIRV_VALIDATE", "1")
    out = np.zeros(40, np.int32)
    cuport.Module(FRAME_PTX, device=device).kernel("frames")(1, 40, (out,))
    assert out.tolist() == [_f(t) for t in range(40)]


def test_the_dispatch_loop_keeps_mutual_recursion_reducible(ptx):
    """The kernel after call_stack: no calls left, and a reducible CFG (the structurizer's
    input) whose one loop is the dispatch's."""
    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.ptx import load

    c = compile_kernel(load([ptx]), "parity", (64, 1, 1))
    assert not any(getattr(s, "op", "") == "call" for s in c.fn.body)
    assert c.cfg.reducible and len(c.cfg.loops) == 1


def test_a_level_of_recursion_takes_no_more_stack_than_on_nvidias_gpus(ptx, tmp_path):
    """Each recursive function's stack a level (its frame and what its calls push) is at
    most the stack frame ptxas gives it for an H100/H200 (sm_90), so whatever recursion fits
    a GPU's cudaLimitStackSize fits cuport's at the same limit."""
    import re

    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.ptx import load

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is needed for NVIDIA's stack frames")
    src = tmp_path / "recursion.ptx"
    src.write_text(ptx)
    log = subprocess.run([ptxas, "-arch=sm_90", "-v", str(src), "-o", str(tmp_path / "out.cubin")],
                         capture_output=True, text=True, check=True).stderr
    nvidia = {m[1]: int(m[2]) for m in re.finditer(
        r"Function properties for (\S+)\n\s+(\d+) bytes stack frame", log)}
    module = load([ptx])
    ours: dict[str, int] = {}
    for kernel in ("parity", "permutations", "nested_loops", "structs", "divergent", "two_sites", "depth"):
        ours.update(compile_kernel(module, kernel, (32, 1, 1)).notes["stack_frames"])
    assert len(ours) == 9, ours
    for name, n in ours.items():
        assert 0 < n <= nvidia[name], (name, n, nvidia[name])


# ---------------------------------------------------------------- the context's stack limit


@pytest.fixture(scope="module")
def stack_limit_program(tmp_path_factory) -> Path:
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    sys.path.insert(0, str(HERE.parent / "capi"))
    from capi_support import need_nvcc

    exe = tmp_path_factory.mktemp("stack-limit") / "stack_limit"
    subprocess.run([need_nvcc(), "-O3", "-o", str(exe), str(HERE / "stack_limit.cu")], check=True,
                   capture_output=True)
    return exe


@pytest.mark.parametrize("limit, lines", [
    (0, ["limit 1024: cudaErrorHardwareStackError"]),  # NVIDIA's default is too small for 300
    (32768, ["limit 32768: cudaSuccess", "300 299"]),
])
@pytest.mark.parametrize("private", [None, "0"], ids=["default", "all-local-in-device-memory"])
def test_cuda_device_set_limit_sizes_the_stack(stack_limit_program, limit, lines, private):
    """The 32 KiB stack is past DeviceCaps.private_memory, so it lives in the blocks' slices
    of device memory (NVIDIA's driver refused it as a private array); with
    CUPORT_VK_PRIVATE_BYTES=0 every kernel's local memory does."""
    from capi_support import clean_env, cuport_command, run

    extra = {"CUPORT_VK_PRIVATE_BYTES": private} if private is not None else {}
    r = run([*cuport_command(), "run", str(stack_limit_program), str(limit), "300"],
            env=clean_env(CUPORT_DEVICE="vulkan", CUPORT_SPIRV_VALIDATE="1", **extra), timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:len(lines)] == lines, r.stdout + r.stderr


def test_local_memory_past_the_private_limit_is_in_the_slice(ptx):
    """The layout (cuport ptx --dump-after layout): a kernel whose local memory passes
    DeviceCaps.private_memory keeps none in a private array; its slice holds every thread's
    words after the shared memory."""
    from spvtools import disassemble, validate

    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.backends.vulkan.lower import DeviceCaps
    from cuport.ptx.parser import parse

    module = parse(ptx)
    small = compile_kernel(module, "depth", (32, 1, 1), 0, DeviceCaps(subgroup_size=8), stack_bytes=1024)
    big = compile_kernel(module, "depth", (32, 1, 1), 0, DeviceCaps(subgroup_size=8, private_memory=0),
                         stack_bytes=1024)
    assert not small.plan.local_in_memory and small.plan.slice_bytes == 0
    assert big.plan.local_in_memory
    assert big.plan.slice_bytes >= 32 * big.plan.local_bytes >= 32 * 1024
    validate(big.shader.spirv)

    def private_arrays(shader) -> int:
        import re

        dis = disassemble(shader.spirv)
        arrays = set(re.findall(r"(%\d+) = OpTypeArray", dis))
        return sum(1 for t in re.findall(r"= OpTypePointer Function (%\d+)", dis) if t in arrays)

    assert private_arrays(small.shader) == 1 and private_arrays(big.shader) == 0
