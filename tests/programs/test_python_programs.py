"""The project's own Python CUDA programs (tests/programs/python), run under `cuport run`.

Each is self-checking (numpy references, one PASS/FAIL line) and was first confirmed on
a real NVIDIA H200. numba-cuda compiles the kernels to PTX with NVVM and, as nvJitLink
is not installed, links them with the driver's cuLink* calls before loading them. CuPy
runs with no settings: it asks NVRTC for cubins, which cuport's NVRTC shim makes PTX.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, run  # noqa: E402


def _nvjitlink_installed() -> bool:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        load_nvidia_dynamic_lib("nvJitLink")
        return True
    except Exception:  # noqa: BLE001 - any failure means numba-cuda cannot use it either
        return False


def test_numba_kernels():
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.skip("numba-cuda is not installed (pip install -e '.[test]')")
    if _nvjitlink_installed():
        pytest.skip("nvidia-nvjitlink is installed: numba-cuda would link SASS, not PTX")
    r = run([*cuport_command(), "run", sys.executable, str(HERE / "python" / "numba_kernels.py")],
            env=clean_env(), timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == "PASS", \
        f"exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert "MISMATCH" not in r.stdout and len(lines) == 9


def test_cupy_arrays():
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed (pip install -e '.[test]')")
    r = run([*cuport_command(), "run", sys.executable, str(HERE / "python" / "cupy_arrays.py")],
            env=clean_env(), timeout=1800)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == "PASS", \
        f"exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert "MISMATCH" not in r.stdout and len(lines) == 18
    assert "cuport:" not in r.stderr, r.stderr[-3000:]  # no failed call, no alarming probe
