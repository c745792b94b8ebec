"""Driver behaviour that differs from the Vulkan spec in ways cuport must work around,
measured by one probe kernel when the device opens (never assumed from a driver's name).

- A loop budget: Mesa's llvmpipe (lavapipe) ends a shader's loops without a word once
  they have made 65535 passes in all (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS,
  there to keep a shader from hanging the process). A kernel's long loop (a grid-stride
  loop over a large array, a spin wait for another block) would silently stop early; cuport
  then marks every loop so that a launch whose loops the driver cut short fails, and makes
  spin loops wait on each trip (loops.py). The probe's count says only that there is a
  budget (its loop stops early); what a kernel may spend is the driver's to count.
- Memory barriers that act as workgroup barriers: on lavapipe (Mesa 22.3) a memory barrier
  (OpMemoryBarrier, or acquire/release semantics on an atomic or on a volatile access) is
  a point where the workgroup's invocations meet, like OpControlBarrier: in a loop that
  only part of the workgroup runs, the invocations that run it stop for good (measured:
  their later stores never happen). cuport then gives such accesses in block-divergent code
  no memory semantics (relaxed atomics, no fence; see lower_order.py).

The probe is one workgroup of 64 invocations: invocation 0 alone counts a loop to PROBE_N
and runs a loop of 64 iterations with a fence in it.
"""

from __future__ import annotations

import ctypes
import struct

PROBE_N = 100_000
_DIVERGENT_ITERATIONS = 64

_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry quirks(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<5>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra DONE;
    mov.u32 %r3, 0;
COUNT:
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r1;
    @%p2 bra COUNT;
    st.global.u32 [%rd1], %r3;
    mov.u32 %r4, 0;
FENCED:
    ld.relaxed.gpu.global.u32 %r5, [%rd1+8];
    fence.acq_rel.gpu;
    setp.eq.u32 %p3, %r5, 12345;
    @%p3 bra STORE;
    add.u32 %r4, %r4, 1;
    setp.lt.u32 %p4, %r4, ITERATIONS;
    @%p4 bra FENCED;
STORE:
    st.global.u32 [%rd1+4], %r4;
DONE:
    ret;
}
""".replace("ITERATIONS", str(_DIVERGENT_ITERATIONS))


def probe(backend) -> dict[str, object]:
    """The DeviceCaps fields (lower.py) that the device's behaviour sets: {} when it follows
    the spec. `backend` is a VulkanBackend whose caps do not work around anything yet."""
    from .backend import VulkanModule

    buf = backend.allocate_buffer(16, "host")
    try:
        ctypes.memset(buf.host_ptr, 0, 16)
        mod = VulkanModule(backend, [_PTX])
        mod.kernel("quirks").launch((1, 1, 1), (64, 1, 1), 0, struct.pack("<QI", buf.address, PROBE_N))
        failed = backend.drain()  # launches are asynchronous: read the counts once it ran
        if failed is not None:
            raise failed[1]
        count, fenced = struct.unpack("<II", ctypes.string_at(buf.host_ptr, 8))
    finally:
        backend.dev.free(buf)
    out: dict[str, object] = {}
    if count < PROBE_N:
        out["loop_iteration_limit"] = max(count - 1, 1)  # back edges taken before the loop ended
    if fenced != _DIVERGENT_ITERATIONS:
        out["divergent_memory_barriers"] = False
    return out
