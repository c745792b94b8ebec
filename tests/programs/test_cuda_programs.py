"""The project's own CUDA programs, built with nvcc and run unmodified under `cuport run`.

Every program in this folder is self-checking (a host reference, one PASS/FAIL line) and
was first confirmed on a real NVIDIA H200. Each is built with the toolkit's static runtime
(nvcc's default) and with `-cudart shared`; a few are also built against the newest CUDA
12.x and 13.x runtimes from PyPI, statically and shared, whose start-up asks the driver for
more (shared/reference/cudart-protocol.md). The test requires the program's PASS and exit
status 0.
"""

from __future__ import annotations

import os
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
                 "mbarrier_tokens": ["-arch=sm_90"],  # mbarrier.expect_tx
                 "dynamic_parallelism": ["-rdc=true"],  # links libcudadevrt
                 # (cudaMemcpy on the per-thread default stream, as NVIDIA's _ptds entries)
                 "stream_legacy_order": ["--default-stream", "per-thread"]}

#: What each program printed on an H200 (driver 580.159, CUDA 13.0, nvcc -O3): cuport's
#: output must be the same, line for line, but for the lines below, which differ for a
#: reason.
H200_OUTPUT = HERE / "h200"
VARIES = {
    "pipeline": [(r"stream \d: [\d.]+ ms", "timing")],
    "grid_sync": [(r"\d+ blocks of 256 threads, 3 rounds",
                   "the grid is sized by the SM count: cuport reports the CPU's cores")],
    "reduction": [(r"float sum [\d.]+, reference [\d.]+, relative error \S+",
                   "float atomicAdd of block partials: their order varies, on a GPU too")],
    "math_f32": [(r"(expf|rsqrtf|__expf|__fdividef|__sinf|__logf) +worst error \S+ (ulp|abs)",
                  "approximate instructions (ex2, rsqrt, rcp, sin, lg2 .approx): within "
                  "their documented error, not the GPU's special function unit's bits")],
}


def check_h200_output(name: str, stdout: str) -> None:
    """cuport printed what the H200 printed, but for the lines of VARIES."""
    import re

    path = H200_OUTPUT / f"{name}.txt"
    if not path.exists():
        return
    varies = [re.compile(rx) for rx, _ in VARIES.get(name, [])]
    ours = [ln for ln in stdout.splitlines() if ln.strip()]
    gpu = [ln for ln in path.read_text().splitlines() if ln.strip()]
    assert len(ours) == len(gpu), (ours, gpu)
    for a, b in zip(ours, gpu, strict=True):
        same_kind = [rx for rx in varies if rx.fullmatch(a) and rx.fullmatch(b)]
        assert a == b or same_kind, f"{name}: cuport printed {a!r}, the H200 {b!r}"


JOBS = [(p, r) for p in PROGRAMS for r in ("toolkit-static", "toolkit-shared")] + [
    (p, r) for p in ON_OTHER_RUNTIMES for r in OTHER_RUNTIMES
]


def _vulkan_available() -> bool:
    from cuport.backends.vulkan import runtime

    return bool(runtime.devices())


#: What a Vulkan device may refuse, in cuport's own words (the program then ends with the
#: error): such a run is skipped with the message. Anything else must PASS.
VULKAN_LIMITS = (
    "a warp collective (",  # on devices whose subgroups are not 32 wide, in divergent code
    "a guarded ",  # a guarded collective, likewise
    "a warp barrier (bar.warp.sync) in code",  # likewise: a barrier of the block there
    "a CTA barrier in code that part of the block may skip",
    "a loop that waits for another thread of the block",
    "cooperative launches on the Vulkan backend",
    "device functions must be inlined before translation",  # texture sampling: not yet
    "device memory cannot be shared with other processes: ",  # no exportable memory (ipc)
    "Vulkan shaders have no nanosecond clock",  # cuda::barrier's wait backoff (async_copy)
)
#: programs that a CPU Vulkan driver (lavapipe) cannot run at all, and why
IN_PROCESS_SKIPS: dict[str, str] = {}  # (kernels check their global addresses: faults runs)
#: programs the CPU backend cannot run yet, and why
CPU_SKIPS: dict[str, str] = {}
#: programs a CPU Vulkan driver (lavapipe) cannot run, and why
CPU_VULKAN_SKIPS: dict[str, str] = {
    "stream_overlap": "a kernel spinning on a flag the host writes into mapped pinned memory: "
                      "lavapipe runs every submission on its one queue, in order, and ends a "
                      "shader loop after 65535 passes (on NVIDIA's Vulkan driver, which shows "
                      "a running shader host writes to device-local memory only, cuport "
                      "places small pinned allocations there: runtime/memory.py)",
}
#: settings a program needs on the Vulkan backend: device memory exportable where the driver
#: pays for it (lavapipe: runtime/external.py COSTLY)
VULKAN_ENV = {"ipc": {"CUPORT_VK_EXPORTABLE": "1"}}
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

    with ThreadPoolExecutor(max(2, min(8, os.cpu_count() or 2))) as pool:  # nvcc is slow
        return {job: (exe, log) for job, exe, log in pool.map(build, JOBS)}


#: programs also run on a Vulkan device made to flush f32 subnormals as NVIDIA's driver does
#: (CUPORT_VK_FLUSH32=simulate): cuport's emulation must keep CUDA's results
FLUSHING_JOBS = ["math_f32", "reduction", "matmul_tiled"] if VULKAN_JOBS else []


@pytest.mark.parametrize("name", FLUSHING_JOBS, ids=[f"{n}-vulkan-flush32" for n in FLUSHING_JOBS])
def test_program_passes_on_a_flushing_vulkan_device(built, name):
    test_program_passes_on_vulkan(built, name, {"CUPORT_VK_FLUSH32": "simulate"})


@pytest.mark.parametrize("name", [n for n, _ in VULKAN_JOBS], ids=[f"{n}-vulkan" for n, _ in VULKAN_JOBS])
def test_program_passes_on_vulkan(built, name, extra_env=None):
    """The same binaries on the Vulkan backend (CUPORT_DEVICE=vulkan)."""
    from cuport.backends.vulkan import runtime

    info = runtime.devices()[0]
    if info.device_type == "cpu" and name in IN_PROCESS_SKIPS:
        pytest.skip(IN_PROCESS_SKIPS[name])
    if info.device_type == "cpu" and name in CPU_VULKAN_SKIPS:
        pytest.skip(CPU_VULKAN_SKIPS[name])
    exe, log = built[(name, "toolkit-static")]
    if exe is None:
        pytest.fail(f"nvcc failed for {name}:\n{log}")
    # every SPIR-V module the backend builds goes through spirv-val (backends/vulkan/validate.py)
    env = clean_env(CUPORT_DEVICE="vulkan", CUPORT_SPIRV_VALIDATE="1", **VULKAN_ENV.get(name, {}),
                    **(extra_env or {}))
    r = run([*cuport_command(), "run", str(exe)], env=env, timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    if r.returncode == 0 and lines and lines[-1] == "PASS":
        return
    # a refusal must reach the program before any result does: a FAIL line is a wrong answer
    wrong = [ln for ln in lines if ln.startswith("FAIL")]
    refused = [] if wrong else [ln for ln in r.stderr.splitlines() if "CUDA_ERROR_NOT_SUPPORTED" in ln
                                or "CUDA_ERROR_INVALID_VALUE" in ln]
    for ln in refused:
        if any(w in ln for w in VULKAN_LIMITS):
            pytest.skip(f"{info.name}: {ln.strip()[:400]}")
    pytest.fail(f"{name} on Vulkan exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}")


@pytest.mark.parametrize("name, runtime", JOBS, ids=[f"{n}-{r}" for n, r in JOBS])
def test_program_passes_under_cuport_run(built, name, runtime):
    if name in CPU_SKIPS:
        pytest.skip(CPU_SKIPS[name])
    exe, log = built[(name, runtime)]
    if exe is None:
        if "not installed" in log:
            pytest.skip(log)
        pytest.fail(f"nvcc failed for {name} ({runtime}):\n{log}")
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == "PASS", (
        f"{name} ({runtime}) exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    )
    check_h200_output(name, r.stdout)
