"""The project's own Python CUDA programs (tests/programs/python), run under `cuport run`.

Each is self-checking (numpy references, one line per part, then PASS or FAIL) and was
first confirmed on a real NVIDIA H200. numba-cuda compiles the kernels to PTX with NVVM and,
as nvJitLink is not installed, links them with the driver's cuLink* calls before loading
them. CuPy runs with no settings: it asks NVRTC for cubins, which cuport's NVRTC shim makes
PTX.

Each program runs on the CPU and on the first Vulkan device (where there is one, as a user
with a GPU would get it by default). A part that the Vulkan device refuses by design
(tests/device_limits.py: lavapipe's 8-wide subgroups refuse warp collectives and warp
barriers in code only part of the block runs, e.g. numba-cuda's cuda.reduce, CUB's scan
and radix sort) must be refused with cuport's message, which stderr places before the part's
own time line; the other parts must still pass, and the test is then skipped with the
refusals as its reason. Any other failure, a stray `cuport:` line or a crash fails it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))
sys.path.insert(0, str(HERE.parent))

from capi_support import clean_env, cuport_command, run  # noqa: E402
from device_limits import device_limit  # noqa: E402

#: each program's parts, in the order they run (stdout: "part: ok|MISMATCH ...")
PARTS = {
    "numba_kernels": ["tiled matmul", "shared-memory histogram", "warp shuffle sums, atomic max",
                      "device function, local array", "xoroshiro128p Monte Carlo pi",
                      "grid sync (cooperative groups)", "cuda.reduce"],
    "cupy_arrays": ["elementwise", "ufuncs", "integer ops", "astype", "sum int", "sum f32",
                    "(a*2).sum()", "sum axis", "mean/std", "cumsum", "sort f32", "random uniform",
                    "random normal", "random seeded", "RawKernel", "ElementwiseKernel",
                    "ReductionKernel"],
}


def _nvjitlink_installed() -> bool:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        load_nvidia_dynamic_lib("nvJitLink")
        return True
    except Exception:  # noqa: BLE001 - any failure means numba-cuda cannot use it either
        return False


def _vulkan_available() -> bool:
    from cuport.backends.vulkan import runtime

    return bool(runtime.devices())


DEVICES = ["cpu", "vulkan"] if _vulkan_available() else ["cpu"]


def refusals_by_part(stderr: str, parts: list[str]) -> dict[str, list[str]]:
    """The `cuport:` lines of stderr, by the part they came in (the part's time line, which
    the program prints when the part ends, follows them); "" holds those outside any part."""
    by_part: dict[str, list[str]] = {}
    pending: list[str] = []
    timed = re.compile(r"(.+): [\d.]+ s")
    for line in stderr.splitlines():
        m = timed.fullmatch(line)
        if line.startswith("cuport:"):
            pending.append(line)
        elif m and m.group(1) in parts:
            if pending:
                by_part[m.group(1)] = pending
            pending = []
    if pending:
        by_part[""] = pending
    return by_part


def check_program(name: str, device: str, timeout: float) -> None:
    """Run tests/programs/python/NAME.py under `cuport run` on `device`; every part passes,
    or is refused by the device by design (then the test is skipped, saying which)."""
    r = run([*cuport_command(), "run", sys.executable, str(HERE / "python" / f"{name}.py")],
            env=clean_env(CUPORT_DEVICE=device), timeout=timeout)
    report = f"exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    parts = PARTS[name]
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    results = {ln.split(": ", 1)[0]: ln for ln in lines[:-1]}
    assert list(results) == parts, report  # every part ran, and told its result
    said = refusals_by_part(r.stderr, parts)
    assert "" not in said, report  # nothing said outside a part (at start-up or exit)
    refused = {}
    for part in parts:
        ok = results[part].startswith(f"{part}: ok")
        lines_said = said.get(part, [])
        limits = [ln for ln in lines_said if "CUDA_ERROR_NOT_SUPPORTED: " in ln
                  and device_limit(device, 801, ln)]
        if not ok and limits and len(limits) == len(lines_said):
            refused[part] = limits[0]
            continue
        assert ok and not lines_said, f"{device}: part {part!r}:\n{report}"
    if not refused:
        assert r.returncode == 0 and lines[-1] == "PASS", report
        return
    assert r.returncode == 1 and lines[-1].startswith("FAIL"), report  # the program's verdict
    pytest.skip(f"{len(parts) - len(refused)} of {len(parts)} parts passed; refused by the "
                "device by design: " + "; ".join(f"{p}: {_reason(ln)}" for p, ln in refused.items()))


def _reason(line: str) -> str:
    """The cause in a refusal's line, without the (long, mangled) kernel names before it."""
    cause = line.split("CUDA_ERROR_NOT_SUPPORTED: ", 1)[1]
    return cause[cause.find("PTX line"):] if "PTX line" in cause else cause


@pytest.mark.parametrize("device", DEVICES)
def test_numba_kernels(device):
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.skip("numba-cuda is not installed (pip install -e '.[test]')")
    if _nvjitlink_installed():
        pytest.skip("nvidia-nvjitlink is installed: numba-cuda would link SASS, not PTX")
    check_program("numba_kernels", device, timeout=900)


@pytest.mark.parametrize("device", DEVICES)
def test_cupy_arrays(device):
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed (pip install -e '.[test]')")
    check_program("cupy_arrays", device, timeout=1800)
