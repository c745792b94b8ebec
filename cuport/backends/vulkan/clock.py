"""%globaltimer on Vulkan: the device-scope shader clock, calibrated against host time.

PTX's %globaltimer is a 64-bit nanosecond timer that every thread of the GPU reads alike.
Vulkan's nearest is VK_KHR_shader_clock's device-scope clock (OpReadClockKHR, Device scope:
one counter for the whole device, in units the driver does not state). cuport measures its
rate the first time a kernel reads %globaltimer: a one-thread dispatch reads the clock, and
again about CALIBRATION_S later; each read is put at the middle of the host's
CLOCK_REALTIME before submitting and after the dispatch completed, the narrowest of
SAMPLES tries (the host's epoch, as
NVIDIA's %globaltimer counts from the Unix epoch on Linux). The kernel then computes
    ns = host_ns0 + (ticks - ticks0) * ns_per_tick
in f64 for the difference (exact to a nanosecond for 104 days of ticks) and integers for
the rest. The error is the dispatch latency's jitter over the calibration span: measured
on lavapipe, 3e-5 of an interval and the absolute time inside the host's window around
each launch (tests/vulkan/test_globaltimer.py). A device without the
clock (no shaderDeviceClock) refuses %globaltimer.

%clock/%clock64 read the subgroup-scope clock instead (lower.py: OpReadClockKHR, Subgroup
scope), which on NVIDIA is the SM's cycle counter, as CUDA's %clock64. Its rate is
CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz: ticks per millisecond), which programs divide clock64()
differences by to get time. `clock_rate_khz` measures it the first time a program asks: a
one-thread kernel reads the clock before and after a loop long enough that the host's
window around the launch (RATE_WINDOW_S or more) is mostly the loop, less the least
latency of an empty launch; a launch's latency only widens the window, so the highest of
RATE_TRIES ratios is kept. The answer is
kept in the kernel cache per device and driver (a verified entry, backends/cache.py), so
later programs pay nothing; asking costs ~0.1 s once (lavapipe, the kernel compiled too).
Measured on lavapipe: 0.96-0.99e6 kHz on a loaded 2-core machine, its subgroup clock being
the host's nanoseconds (modulo 2^32, as its device clock: a try across the wrap is not
counted). A device without the subgroup clock refuses %clock64 and answers 0
(attributes.py).
"""

from __future__ import annotations

import ctypes
import struct
import threading
import time

from .. import cache

CALIBRATION_S = 0.1
SAMPLES = 5
RAW = (0, 0, 0.0)  # caps.globaltimer for the calibration kernel itself: the raw ticks
LOCK = threading.Lock()  # one calibration at a time

_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry ticks(.param .u64 out)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, %globaltimer;
    st.global.u64 [%rd1], %rd2;
    ret;
}
"""


RATE_WINDOW_S = 0.02
RATE_TRIES = 3
RATE_VERSION = "1"  # in the cache key: a changed measurement is measured again
_rates: dict[str, int] = {}  # this process's answers, by cache key

# The loop's exit depends on a volatile load (its trip count, read every pass), so that on a
# driver with a loop budget it is a waiting loop, which spends the budget slowly (loops.py:
# lavapipe ends a shader's loops after 65535 passes in all, ~1 ms of a plain loop).
_RATE_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, 0;
    mov.u64 %rd3, %clock64;
LOOP:
    ld.volatile.global.u64 %rd4, [%rd1+16];
    add.u64 %rd2, %rd2, 1;
    setp.lt.u64 %p1, %rd2, %rd4;
    @%p1 bra LOOP;
    mov.u64 %rd5, %clock64;
    st.global.u64 [%rd1], %rd3;
    st.global.u64 [%rd1+8], %rd5;
    ret;
}
"""


def clock_rate_khz(backend) -> int:
    """Ticks per millisecond of the clock %clock64 reads on this device: from the cache, or
    measured (once per backend, then kept)."""
    info = backend.info
    key = cache.make_key("vulkan %clock64 rate", RATE_VERSION, info.name, info.driver_id,
                         str(info.driver_version), bytes(info.uuid).hex())
    with LOCK:
        rate = _rates.get(key)
        if rate is None:
            def measure() -> int:
                with backend.apart():
                    return _measure_rate(backend)

            rate = _rates[key] = cache.measured(key, "vulkan %clock64 rate", measure)
        return rate


def _measure_rate(backend) -> int:
    """clock_rate_khz's measurement (the module docstring says how)."""
    from .backend import VulkanModule

    buf = backend.allocate_buffer(24, "host")
    try:
        k = VulkanModule(backend, [_RATE_PTX]).kernel("spin")
        params = struct.pack("<Q", buf.address)
        words = (ctypes.c_uint64 * 3).from_address(buf.host_ptr)

        def run(trips: int) -> tuple[int, int]:
            """(clock ticks, host ns) of a launch whose loop makes `trips` passes."""
            words[2] = trips
            t0 = time.perf_counter_ns()
            k.launch((1, 1, 1), (1, 1, 1), 0, params)
            _wait(backend)
            t1 = time.perf_counter_ns()
            return words[1] - words[0], t1 - t0  # (a clock that wrapped: negative)

        run(1)  # compiled, and the device awake
        latency = min(run(1)[1] for _ in range(RATE_TRIES))  # a launch's own, at the least
        trips, window = 16, RATE_WINDOW_S * 1e9
        while (ns := run(trips)[1] - latency) < window and trips < 1 << 40:
            # (doubled, then scaled once a pass's cost shows)
            trips = trips * 2 if ns < window / 16 else int(trips * window * 1.1 / ns) + 1
        rates = []
        for _ in range(RATE_TRIES * 2):  # (a try across the clock's wrap does not count)
            ticks, ns = run(trips)
            if ticks > 0:
                rates.append(ticks / (ns - latency))
                if len(rates) == RATE_TRIES:
                    break
        best = max(rates, default=0.0)
    finally:
        backend.dev.free(buf)
    if best <= 0:
        from ...ptx.errors import UnsupportedError

        raise UnsupportedError("%clock64: the shader clock did not advance across a "
                               f"{RATE_WINDOW_S * 1e3:.0f} ms loop, so it has no rate")
    return max(1, round(best * 1e6))


def uses_globaltimer(fn) -> bool:
    from ...ptx import ir

    return any(isinstance(a, ir.Special) and a.name.startswith("%globaltimer")
               for s in fn.body or () if isinstance(s, ir.Instr) for a in s.args)


def _wait(backend) -> None:
    failed = backend.drain_here()  # (calibrating in a stream's launch: not the other streams)
    if failed is not None:
        raise failed[1]


def calibrate(backend) -> tuple[int, int, float]:
    """(ticks0, host ns at ticks0, ns per tick) for caps.globaltimer."""
    import dataclasses

    from .backend import VulkanModule
    from .compiler import compile_kernel

    buf = backend.allocate_buffer(8, "host")
    try:
        mod = VulkanModule(backend, [_PTX])
        k = mod.kernel("ticks")
        c = compile_kernel(mod.ptx, "ticks", (1, 1, 1), 0, dataclasses.replace(backend.caps, globaltimer=RAW))
        k.install(c)
        params = struct.pack("<Q", buf.address)
        k.launch((1, 1, 1), (1, 1, 1), 0, params)  # the device warm
        _wait(backend)

        def sample() -> tuple[int, float]:
            best = None
            for _ in range(SAMPLES):  # the read in the narrowest host window
                t0 = time.time_ns()
                k.launch((1, 1, 1), (1, 1, 1), 0, params)
                _wait(backend)  # launches are asynchronous: the read is done once it ran
                t1 = time.time_ns()
                if best is None or t1 - t0 < best[0]:
                    best = (t1 - t0, ctypes.c_uint64.from_address(buf.host_ptr).value, (t0 + t1) / 2)
            return best[1], best[2]

        c0, h0 = sample()
        time.sleep(CALIBRATION_S)
        c1, h1 = sample()
    finally:
        backend.dev.free(buf)
    scale = (h1 - h0) / ((c1 - c0) % (1 << 64) or 1)
    if c1 <= c0 or (c1 < 1 << 32 and scale < 1000.0):
        # lavapipe's device clock is the host's monotonic nanoseconds modulo 2^32 (measured):
        # a %globaltimer from it would jump back every 4.3 s
        from ...ptx.errors import UnsupportedError

        raise UnsupportedError(f"%globaltimer: this driver's device clock wraps at 32 bits "
                               f"({c0} -> {c1} in {(h1 - h0) / 1e9:.2f} s), so Vulkan shaders "
                               "have no nanosecond clock on it")
    return c0, int(h0), scale


def clock_ns(em):
    """%globaltimer in the emitter `em`: the calibrated device clock, an i64 of nanoseconds."""
    from llvmlite import ir as ll

    caps = em.plan.caps
    if not caps.device_clock:
        raise em.error("%globaltimer: the device has no device-scope shader clock "
                       "(VK_KHR_shader_clock's shaderDeviceClock)")
    if caps.globaltimer is None:
        raise em.error("%globaltimer: the device clock is not calibrated (internal)")
    i64, f64 = ll.IntType(64), ll.DoubleType()
    b = em.b
    ticks = em.spv("OpReadClockKHR", i64, [ll.Constant(ll.IntType(32), 1)], "device")  # Scope Device
    ticks0, ns0, scale = caps.globaltimer
    if scale == 0.0:
        return ticks  # RAW: the calibration kernel
    d = b.uitofp(b.sub(ticks, ll.Constant(i64, ticks0)), f64)
    return b.add(ll.Constant(i64, ns0), b.fptoui(b.fmul(d, ll.Constant(f64, scale)), i64))
