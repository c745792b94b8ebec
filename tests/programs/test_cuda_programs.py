"""The project's own CUDA programs, built with nvcc and run unmodified under `cuport run`.

Every program in this folder is self-checking (a host reference, one PASS/FAIL line) and
was first confirmed on a real NVIDIA H200. Each is built with the toolkit's static runtime
(nvcc's default) and with `-cudart shared`; a few are also built against the newest CUDA
12.x and 13.x runtimes from PyPI, statically and shared, whose start-up asks the driver for
more (shared/reference/cudart-protocol.md). The test requires the program's PASS and exit
status 0.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import build_flags, clean_env, cuport_command, need_nvcc, run  # noqa: E402

PROGRAMS = sorted(p.stem for p in HERE.glob("*.cu"))
OTHER_RUNTIMES = ["12-static", "12-shared", "13-static", "13-shared"]
# programs that also run against the PyPI runtimes: kernels, streams, symbols, printf-free
ON_OTHER_RUNTIMES = ["reduction", "constant_memory", "pipeline"]

# programs whose kernels need a newer virtual architecture than nvcc's default
PROGRAM_FLAGS = {"wmma": ["-arch=sm_80"],  # bf16, tf32, f64 and s8 wmma
                 "async_copy": ["-arch=sm_90"],  # cp.async.bulk, mbarrier transaction counts
                 "dynamic_parallelism": ["-rdc=true"]}  # links libcudadevrt

# libcudadevrt.a carries PTX for sm_121 only: until cuport accepts PTX for targets newer
# than the device it reports (issue 8, helper "pyusers"), programs linking it cannot load
NEEDS_NEWER_PTX = {"dynamic_parallelism"}

JOBS = [(p, r) for p in PROGRAMS for r in ("toolkit-static", "toolkit-shared")] + [
    (p, r) for p in ON_OTHER_RUNTIMES for r in OTHER_RUNTIMES
]


def _vulkan_available() -> bool:
    from cuport.backends.vulkan import runtime

    return bool(runtime.devices())


#: What a Vulkan device may refuse, in cuport's own words (the program then ends with the
#: error): such a run is skipped with the message. Anything else must PASS.
VULKAN_LIMITS = (
    "the recursive device function",  # no call stack in SPIR-V
    "a warp collective (",  # on devices whose subgroups are not 32 wide, in divergent code
    "a guarded ",  # a guarded collective, likewise
    "a CTA barrier in code that part of the block may skip",
    "a loop that waits for another thread of the block",
    "bytes of workgroup memory",  # more shared memory than the device has
    "cooperative launches on the Vulkan backend",
    "wmma (tensor-core fragments) on the Vulkan backend",
    "device functions must be inlined before translation",  # texture sampling: not yet
    "cannot be shared between processes by cuport",  # IPC: host pages only (ipc)
    "device-runtime function cudaGraphSetConditional",  # conditional nodes (graph_conditional)
    "Vulkan shaders have no nanosecond clock",  # cuda::barrier's wait backoff (async_copy)
)
#: programs that a CPU Vulkan driver (lavapipe) cannot run at all, and why
IN_PROCESS_SKIPS = {"faults": "a Vulkan driver that runs kernels in this process (lavapipe) "
                              "crashes on a wild pointer, where a GPU reports it"}
#: programs that need what only the CPU backend offers
VULKAN_SKIPS = {"dynamic_parallelism": "device-side kernel launches (libcudadevrt's "
                                       "__cuda_syscall_cnpv2 calls) are the CPU backend's only"}
VULKAN_JOBS = [(p, "vulkan") for p in PROGRAMS] if _vulkan_available() else []


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    nvcc = need_nvcc()
    out = tmp_path_factory.mktemp("cuda-programs")

    def build(job):
        name, runtime = job
        try:
            flags = build_flags(runtime)
        except pytest.skip.Exception as e:
            return job, None, str(e)
        exe = out / f"{name}-{runtime}"
        r = run([nvcc, "-O3", "-o", str(exe), str(HERE / f"{name}.cu"), *flags,
                 *PROGRAM_FLAGS.get(name, [])], timeout=600)
        return job, exe if r.returncode == 0 else None, r.stderr

    with ThreadPoolExecutor(2) as pool:
        return {job: (exe, log) for job, exe, log in pool.map(build, JOBS)}


@pytest.mark.parametrize("name", [n for n, _ in VULKAN_JOBS], ids=[f"{n}-vulkan" for n, _ in VULKAN_JOBS])
def test_program_passes_on_vulkan(built, name):
    """The same binaries on the Vulkan backend (CUPORT_DEVICE=vulkan)."""
    from cuport.backends.vulkan import runtime

    info = runtime.devices()[0]
    if info.device_type == "cpu" and name in IN_PROCESS_SKIPS:
        pytest.skip(IN_PROCESS_SKIPS[name])
    if name in VULKAN_SKIPS:
        pytest.skip(VULKAN_SKIPS[name])
    exe, log = built[(name, "toolkit-static")]
    if exe is None:
        pytest.fail(f"nvcc failed for {name}:\n{log}")
    # every SPIR-V module the backend builds goes through spirv-val (backends/vulkan/validate.py)
    env = clean_env(CUPORT_DEVICE="vulkan", CUPORT_SPIRV_VALIDATE="1")
    r = run([*cuport_command(), "run", str(exe)], env=env, timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    if r.returncode == 0 and lines and lines[-1] == "PASS":
        return
    refused = [ln for ln in r.stderr.splitlines() if "CUDA_ERROR_NOT_SUPPORTED" in ln
               or "CUDA_ERROR_INVALID_VALUE" in ln]
    for ln in refused:
        if any(w in ln for w in VULKAN_LIMITS):
            pytest.skip(f"{info.name}: {ln.strip()[:400]}")
    pytest.fail(f"{name} on Vulkan exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}")


@pytest.mark.parametrize("name, runtime", JOBS, ids=[f"{n}-{r}" for n, r in JOBS])
def test_program_passes_under_cuport_run(built, name, runtime):
    exe, log = built[(name, runtime)]
    if exe is None:
        if "not installed" in log:
            pytest.skip(log)
        pytest.fail(f"nvcc failed for {name} ({runtime}):\n{log}")
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=900)
    if name in NEEDS_NEWER_PTX and "CUDA_ERROR_NO_BINARY_FOR_GPU" in r.stderr \
            and "sm_121" in r.stderr:
        pytest.skip("libcudadevrt's sm_121 PTX is refused until newer-target PTX is accepted")
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == "PASS", (
        f"{name} ({runtime}) exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    )
