"""%globaltimer on Vulkan (backends/vulkan/clock.py): the device clock calibrated against
the host's CLOCK_REALTIME, checked against host time around launches."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

from cuport.backends.base import BackendError
from cuport.backends.vulkan.compiler import compile_kernel
from cuport.backends.vulkan.lower import DeviceCaps
from cuport.ptx.errors import UnsupportedError
from cuport.ptx.parser import parse

PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry gt(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, %globaltimer;
    st.global.u64 [%rd1], %rd2;
    mov.u32 %r1, %globaltimer_lo;
    mov.u32 %r2, %globaltimer_hi;
    st.global.u32 [%rd1+8], %r1;
    st.global.u32 [%rd1+12], %r2;
    ret;
}
"""


def _backend():
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    be = get_vulkan_backend()
    if not be.caps.device_clock:
        pytest.skip(f"{be.info.name} has no device-scope shader clock")
    return be


def test_globaltimer_reads_host_nanoseconds():
    be = _backend()
    k = be.load_module([PTX]).kernel("gt")
    out = be.allocate(16)
    params = struct.pack("<Q", out)
    try:
        k.launch((1, 1, 1), (1, 1, 1), 0, params)  # compiled (and the clock calibrated)
    except BackendError as e:
        if "wraps at 32 bits" in e.message:  # lavapipe's (test_a_wrapping_clock_is_refused)
            pytest.skip(e.message)
        raise
    reads = []
    for _ in range(3):
        h0 = time.time_ns()
        k.launch((1, 1, 1), (1, 1, 1), 0, params)
        assert be.drain() is None  # launches are asynchronous: the kernel ran by now
        h1 = time.time_ns()
        r = np.zeros(2, np.uint64)
        be.copy_dtoh(r.ctypes.data, out, 16)
        reads.append((h0, int(r[0]), h1, int(r[1])))
        time.sleep(0.2)
    slack = 2_000_000  # 2 ms: calibration error and scheduling on a busy machine
    for h0, g, h1, lohi in reads:
        assert h0 - slack <= g <= h1 + slack
        assert 0 <= lohi - g < slack  # _lo and _hi read later, in the same nanoseconds
    for (a0, ga, a1, _), (b0, gb, b1, _) in zip(reads, reads[1:], strict=False):
        # the rate: nanoseconds (each read lies in its launch's host window, which a busy
        # machine widens: the interval between two reads lies between the windows' spans)
        assert (b0 - a1) - slack <= gb - ga <= (b1 - a0) + slack


def test_a_wrapping_clock_is_refused():
    """lavapipe's device clock is the host's monotonic nanoseconds modulo 2^32: a kernel
    reading %globaltimer is refused (CUDA_ERROR_NOT_SUPPORTED) rather than jumping back."""
    be = _backend()
    if be.info.driver_id != "MESA_LLVMPIPE":
        pytest.skip(f"{be.info.name}: not lavapipe")
    k = be.load_module([PTX]).kernel("gt")
    with pytest.raises(BackendError) as e:
        k.launch((1, 1, 1), (1, 1, 1), 0, struct.pack("<Q", be.allocate(16)))
    assert e.value.code == 801 and "wraps at 32 bits" in e.value.message


def test_globaltimer_needs_the_device_clock():
    with pytest.raises(UnsupportedError, match="no device-scope shader clock"):
        compile_kernel(parse(PTX), "gt", (1, 1, 1), caps=DeviceCaps(device_clock=False))
