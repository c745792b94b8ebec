"""Queued launches on the CPU backend (backends/cpu/launch_queue.py), as a CUDA program
sees them: tests/driver/c/launch_queue.cu, built with nvcc, under `cuport run`.

A launch returns before its kernel has run (a kernel waiting for the host to set a flag
ends once the host sets it after the launch), the stream and an event recorded after it
say cudaErrorNotReady meanwhile, memsets and copies between launches see the launches
before them (more launches than the queue holds at once), small copies (done at once when
nothing is pending) wait for a pending kernel on their stream or, on the legacy stream, on a
blocking stream, and a kernel's trap is the next
synchronising call's error, naming the kernel.
"""

from __future__ import annotations

import pytest
from capi_support import clean_env
from test_nvcc_regressions import build, cuport_run


def test_launches_are_queued_and_ordered(tmp_path):
    exe = build(tmp_path, "launch_queue", ["launch_queue.cu"])
    r = cuport_run(exe, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "handshake: cudaErrorNotReady cudaErrorNotReady, then 1",
        "order: 307 300",
        "small copies: -1, then 1 1; after a host function 7",
        "launch: cudaSuccess",
        "synchronize: cudaErrorLaunchFailure",
    ], r.stdout + r.stderr
    assert "cuport: cuLaunchKernel(_Z4trapv): CUDA_ERROR_LAUNCH_FAILED: kernel _Z4trapv: the " \
           "kernel executed trap" in r.stderr, r.stderr


def test_per_thread_default_streams(tmp_path):
    """`nvcc --default-stream per-thread`: the driver's _ptds/_ptsz entry points, with stream 0
    the calling thread's own stream, and a copy after 100 queued launches on it sees them."""
    exe = build(tmp_path, "per_thread_default", ["per_thread_default.cu"],
                "--default-stream", "per-thread")
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["own stream: 1, another thread's: 1; cudaSuccess 100"], \
        r.stdout + r.stderr


@pytest.mark.parametrize("device, extra", [
    ("cpu", {}),
    ("vulkan", {}),
    ("vulkan", {"CUPORT_VK_COPIES": "1"}),  # (a discrete GPU's copy paths)
    ("vulkan", {"CUPORT_VK_PINNED_QUEUE": "0"}),  # pinned copies as stream ops, as before
], ids=["cpu", "vulkan", "vulkan-copies", "vulkan-pinned-stream-ops"])
def test_async_copies_through_pinned_memory(tmp_path, device, extra):
    """tests/driver/c/pinned_async.cu: copies between device and pinned memory in stream order
    with launches, a stream synchronisation after a copy alone waits for it (32 MiB into
    pinned memory, every byte seen), a synchronous copy into pinned memory is done on return."""
    exe = build(tmp_path, "pinned_async", ["pinned_async.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device, **extra), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "rounds through pinned memory: 0 wrong",
        "32 MiB into pinned memory: all there",
        "synchronous copy after a kernel: 10",
    ], r.stdout + r.stderr


@pytest.mark.parametrize("device, extra", [
    ("cpu", {}),
    ("vulkan", {}),
    # nothing submitted until needed: a later kernel would join the event's submission unless
    # the record ends it (backend.py when_reached), and the event would wait for that kernel
    ("vulkan", {"CUPORT_VK_SUBMIT": "batch"}),
    ("vulkan", {"CUPORT_VK_EVENT_MARKS": "0"}),  # events recorded as stream ops, as before
], ids=["cpu", "vulkan", "vulkan-batch", "vulkan-stream-op-events"])
def test_events_recorded_behind_queued_launches(tmp_path, device, extra):
    """tests/driver/c/event_marks.cu: an event is reached once the work before it has run, not
    the work after it (a later kernel spins until the host, past the event, sets a flag), is
    not ready while the work before it runs, orders another stream's work after the work
    before it, and reports a trap before it."""
    exe = build(tmp_path, "event_marks", ["event_marks.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device, **extra), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "event before a spinning kernel: reached, the stream cudaErrorNotReady, counter 1",
        "event after a spinning kernel: cudaErrorNotReady cudaErrorNotReady, then cudaSuccess "
        "cudaSuccess",
        "another stream waiting for the event: 100; after it 100; elapsed not negative",
        "events reached once their stream is synchronised: 0 late",
        "event after a trap: cudaErrorLaunchFailure",
    ], r.stdout + r.stderr


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_a_program_exits_quietly_with_work_queued(tmp_path, device):
    """tests/driver/c/exit_with_work_queued.cu: main returns with 2000 launches and 200 event
    records handed over and not waited for; no error is printed (on Vulkan the exit handler
    stops the stream's submitter and watcher before the driver shuts down; an event the
    watcher had yet to mark was reported as a failed launch, and the runtime's release of
    its context as an internal error)."""
    exe = build(tmp_path, "exit_with_work_queued", ["exit_with_work_queued.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["exiting with work queued"], r.stdout + r.stderr
    assert "cuport:" not in r.stderr, r.stderr
