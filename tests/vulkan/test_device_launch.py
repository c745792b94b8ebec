"""Dynamic parallelism on the Vulkan backend (backends/vulkan/device_launch.py,
lower_launch.py; the rules in backends/device_launch.py).

device_launch.cu, built by nvcc with -rdc=true and linked with libcudadevrt as CUDA programs
are, checks each part against a host reference and prints what it saw; each part runs on
the CPU backend and on Vulkan, and the two must print the same lines. Exhaustion of the
launch queue and of the parameter arena runs on Vulkan only, with a queue of 4 records.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402

PARTS = ["many", "tail", "nested", "params", "depth", "config", "v1"]


def _vulkan():
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    _vulkan()
    nvcc = need_nvcc()
    exe = tmp_path_factory.mktemp("device-launch") / "device_launch"
    r = run([nvcc, "-O3", "-rdc=true", "-o", str(exe), str(HERE / "device_launch.cu")], timeout=600)
    assert r.returncode == 0, r.stderr
    return exe


def _run(exe: Path, *args: str, **env: str) -> list[str]:
    r = run([*cuport_command(), "run", str(exe), *args], env=clean_env(**env), timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == "PASS", (
        f"{args} {env} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}")
    return lines


@pytest.mark.parametrize("part", PARTS)
def test_part_as_on_the_cpu(program, part):
    """many: a launch from every thread, each thread's in order, the tail launch last; tail:
    a tail launch reads what all blocks wrote; nested: a launch tree 7 levels deep; params:
    a struct of mixed members by value and 512 bytes of parameters; depth: 24 levels, then
    cudaErrorLaunchMaxDepthExceeded in device code; config: cudaErrorInvalidConfiguration
    for 2048 threads, a zero dimension, more than __launch_bounds__; v1: cudaGetParameterBuffer
    and cudaLaunchDevice (a buffer launched twice: cudaErrorInvalidValue), streams and events
    made in device code."""
    cpu = _run(program, part)
    vulkan = _run(program, part, CUPORT_DEVICE="vulkan", CUPORT_SPIRV_VALIDATE="1")
    assert vulkan == cpu


def test_full_queue_and_arena_are_the_pending_count_error(program):
    """With room for 4 launches (and 1 KiB of parameter buffers): the 5th and 6th launches
    of a grid get cudaErrorLaunchPendingCountExceeded and do not run; a second 576-byte
    parameter buffer gets it from cudaGetParameterBufferV2 (the launch is skipped)."""
    lines = _run(program, "exhaust", "4", CUPORT_DEVICE="vulkan", CUPORT_VK_LAUNCH_QUEUE="4")
    assert lines[0] == "exhaust: 4 of 6 launches, errors 0 0 0 0 69 69 0 69 69"


def test_parameter_buffers_and_the_error_table_are_global(program):
    """nvcc's code fills a parameter buffer through a generic pointer that libcudadevrt's
    functions return, and each launch reads libcudadevrt's error table through a pointer in
    a module variable: address-space inference (passes/spaces.py) follows the pointer through
    the inlined calls' parameters and finds both global, so no access tests its address's
    space at run time (each test costs lavapipe's compiler seconds)."""
    from cuport.backends import facts
    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.backends.vulkan.lower import DeviceCaps
    from cuport.isa.memory import space_of
    from cuport.loader import relocatable_ptx_in_file
    from cuport.ptx import ir

    module = facts.load_ptx([m.text for m in relocatable_ptx_in_file(str(program), 90)])
    for kernel in ("_Z9flood_bigPiS_i", "_Z2v1PiS_Py"):
        c = compile_kernel(module, kernel, (1, 1, 1), 0, DeviceCaps(subgroup_size=8))
        generic = [s for s in c.fn.body if isinstance(s, ir.Instr) and s.op in ("ld", "st")
                   and space_of(s) == "generic"]
        assert generic, kernel
        spaces = {s.text(): c.spaces.of(s.args[0 if s.op == "st" else 1]) for s in generic}
        assert all(len(x) == 1 for x in spaces.values()), \
            [t for t, x in spaces.items() if len(x) > 1][:5]
