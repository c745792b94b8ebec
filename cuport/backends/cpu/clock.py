"""CLOCK_RATE on the CPU backend: the rate of the counter %clock/%clock64 read.

The emitter reads them with llvm.readcyclecounter, which on x86-64 is the time-stamp
counter: a constant rate on current CPUs (the base frequency, more or less), not the
frequency the core runs at. cpufreq's cpuinfo_max_freq, which CLOCK_RATE used to give, is
the highest turbo frequency: on a laptop twice the TSC's rate, so a program dividing
clock64() differences by CLOCK_RATE got half the time. `clock_rate_khz` measures the
counter against the host's monotonic clock over WINDOW_S, the narrowest of TRIES brackets,
the first time a program asks, and keeps the answer in the kernel cache (a verified entry
keyed by the machine and the CPU), so later programs pay nothing; asking costs ~30 ms once.
On AArch64 LLVM reads the virtual counter CNTVCT_EL0 (checked in the assembly LLVM makes;
its rate, CNTFRQ_EL0, is 24 MHz on Apple's M-series, far from any core frequency), which
programs may read, and the same measurement gives its rate. Elsewhere the counter's
meaning is not known to cuport (ARM32's and RISC-V's cycle counters may trap in user
mode): there the old estimate stands (cpufreq's maximum, else /proc/cpuinfo's MHz).
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import time
from functools import cache as once

from .. import cache

WINDOW_S = 0.01
TRIES = 3
VERSION = "1"  # in the cache key: a changed measurement is measured again
_LOCK = threading.Lock()

_IR = """
define i64 @worker() {
  %t = call i64 @llvm.readcyclecounter()
  ret i64 %t
}
declare i64 @llvm.readcyclecounter()
"""


def measurable() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64")


def clock_rate_khz() -> int:
    """Ticks per millisecond of %clock64 on this machine (x86-64: measured once, cached)."""
    from . import jit

    try:
        machine = open("/etc/machine-id").read().strip()
    except OSError:
        machine = os.uname().nodename
    key = cache.make_key("cpu %clock64 rate", VERSION, machine, jit.host_description())
    with _LOCK:
        return _rate(key)


@once
def _rate(key: str) -> int:
    return cache.measured(key, "cpu %clock64 rate", _measure)


def _measure() -> int:
    from . import jit

    linked = jit.link(jit.optimize_and_emit(_IR), {})
    ticks = ctypes.CFUNCTYPE(ctypes.c_uint64)(linked.worker_addr)

    def bracket() -> tuple[int, int, int]:
        """(host ns before, ticks, host ns after)."""
        a = time.perf_counter_ns()
        t = ticks()
        return a, t, time.perf_counter_ns()

    tries = []
    for _ in range(TRIES):
        a0, t0, b0 = bracket()
        time.sleep(WINDOW_S)
        a1, t1, b1 = bracket()
        # the ticks' interval lies within the host's [a1 - b0, b1 - a0]: the narrower, the truer
        tries.append(((b1 - a1) + (b0 - a0), (t1 - t0) / (((a1 + b1) - (a0 + b0)) / 2)))
    return max(1, round(min(tries)[1] * 1e6))
