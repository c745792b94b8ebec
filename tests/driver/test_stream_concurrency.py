"""Work of CUDA streams that CUDA does not order runs at the same time, on the CPU backend
(a launch queue per stream: backends/cpu/launch_queue.py's lanes) and on a Vulkan GPU (a
command stream per CUDA stream, on queues of a compute-only family: runtime/properties.py
_pick_compute_family): tests/driver/c/stream_spin_wait.cu, built with nvcc, under
`cuport run`.

A grid on one non-blocking stream, more blocks than cores, spins on a flag in device memory
that a kernel on another non-blocking stream sets; a third stream waits for an event
recorded after that kernel and reads what it wrote. With one queue for all streams the
flag's kernel waited behind the spinning grid: the program's watchdog ends the spin after
10 s and it says FAIL (the timeout here is the backstop).
"""

from __future__ import annotations

import pytest
from capi_support import clean_env
from test_nvcc_regressions import build, cuport_run

EXPECTED = ["waiting blocks that saw the flag: 64 of 64", "sum after the event: 98176", "PASS"]


@pytest.mark.parametrize("workers", ["1", "16"])
def test_a_kernel_waiting_for_another_streams_kernel_ends(tmp_path, workers):
    """On one worker (the pool has no thread: each lane's leader runs its grid alone) and on
    16, more than the cores of most test machines (every pool worker in the spinning grid)."""
    exe = build(tmp_path, "stream_spin_wait", ["stream_spin_wait.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE="cpu", CUPORT_THREADS=workers), timeout=120)
    assert r.stdout.splitlines() == EXPECTED, r.stdout + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr


def test_on_a_vulkan_gpu(tmp_path):
    """The same on a Vulkan device that runs two queues' work at once (NVIDIA's compute-only
    queues: measured on an H100, where the graphics family's queues hung the spin).
    lavapipe runs every submission on its one queue and cuts long shader loops."""
    from cuport.backends.vulkan import runtime

    devs = runtime.devices()
    if not devs:
        pytest.skip("no Vulkan device")
    fam = devs[0].queue_families[devs[0].compute_family]
    if fam.count < 2 or devs[0].device_type == "cpu":
        pytest.skip(f"{devs[0].name}: one queue, or a CPU driver that runs submissions in order")
    exe = build(tmp_path, "stream_spin_wait", ["stream_spin_wait.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE="vulkan"), timeout=120)
    assert r.stdout.splitlines() == EXPECTED, r.stdout + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
