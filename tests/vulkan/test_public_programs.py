"""Regressions found by running public CUDA programs on the Vulkan backend (issue 7), each
reduced to a small program that nvcc builds and `cuport run` runs on the CPU and on Vulkan
(lavapipe here), the output checked against what CUDA prints.

- printf_strings: printf("%s") of a string in the kernel's local or shared memory handed
  the host a generic address of that memory, which the host read as its own: a segfault
  (cuda-samples cdpSimplePrint).
- device_assert (tests/driver/c): only the first failing thread's assert line was printed,
  not every failing thread's as on a GPU and the CPU backend (cuda-samples simpleAssert).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)


def build(tmp_path: Path, name: str, *flags: str, where: Path = HERE) -> Path:
    exe = tmp_path / name
    r = run([need_nvcc(), "-o", str(exe), str(where / f"{name}.cu"), *flags], timeout=600)
    if r.returncode != 0:
        pytest.fail(f"nvcc failed for {name}:\n{r.stderr}")
    return exe


def cuport_run(exe: Path, device: str, *args: str, timeout: float = 300):
    return run([*cuport_command(), "run", str(exe), *args],
               env=clean_env(CUPORT_DEVICE=device, CUPORT_SPIRV_VALIDATE="1"), timeout=timeout)


@pytest.mark.parametrize("device", devices())
def test_printf_of_local_and_shared_strings(tmp_path, device):
    exe = build(tmp_path, "printf_strings")
    r = cuport_run(exe, device)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["| | | block 0 aaa 4", "block 0 aaa 1", "cudaSuccess"], r.stdout


@pytest.mark.parametrize("device", devices())
def test_every_failing_thread_prints_its_assert_line(tmp_path, device):
    c = HERE.parent / "driver" / "c"
    exe = build(tmp_path, "device_assert", where=c)
    r = cuport_run(exe, device)
    assert r.returncode == 0, r.stdout + r.stderr
    where = f"{c / 'device_assert.cu'}:10: void check_limit(const int *, int): block: [1,0,0]"
    assert r.stdout.splitlines() == [
        "-- begin",
        *(f"{where}, thread: [{x},{y},0] Assertion `v[i] < limit` failed."
          for x, y in ((6, 0), (11, 0), (13, 0))),
        "-- end", "cudaErrorAssert"], r.stdout
