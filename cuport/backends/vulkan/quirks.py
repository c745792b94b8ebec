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

- Float operands known to be +0.0 when the driver compiles: gallivm (llvmpipe's code
  generator, lp_bld_arit.c lp_build_mul/lp_build_add) returns 0.0 for x * 0.0 and x for
  x + 0.0 whatever x is, although the shader declares SignedZeroInfNanPreserve (lavapipe,
  Mesa 22.3: inf * 0 gives 0, -0 + 0 gives -0; libdevice's sinf(inf) is inf * 0). The zero
  may come from a constant the driver propagated through registers; cuport then hides such
  operands from its constant folding (folds.py).
- A signed 64-bit comparison of an i32 sign-extended to i64 with a constant is folded to a
  wrong constant (lavapipe, Mesa 22.3: cvt.s64.s32 then setp.lt.s64 against 0 is false for
  -1, against 7 false for 0; cvt.sat.u64.s32 of a negative value kept it). cuport then
  compares 64-bit integers signed as unsigned with the sign bits flipped
  (folds.py), which the driver compiles correctly.

The probe is one workgroup of 64 invocations: invocation 0 alone counts a loop to PROBE_N,
runs a loop of 64 iterations with a fence in it, and computes inf * 0.0, -0.0 + 0.0 and
(s64) -1 < 0 on values it loads (the constants are the instructions' own).
"""

from __future__ import annotations

import ctypes
import struct

PROBE_N = 100_000
_DIVERGENT_ITERATIONS = 64

# the probe's buffer: counts at 0 and 4, the fenced loop's flag at 8 (never 12345), inputs
# at 16 (f32 inf, f32 -0.0, s32 -1), results at 32
_BYTES = 48
_INPUT = struct.pack("<4I3I5I", 0, 0, 0, 0, 0x7F800000, 0x80000000, 0xFFFFFFFF, 0, 0, 0, 0, 0)

_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry quirks(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<6>;
    .reg .b32 %r<10>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra DONE;
    ld.global.f32 %f1, [%rd1+16];
    mul.rn.f32 %f2, %f1, 0f00000000;
    st.global.f32 [%rd1+32], %f2;
    ld.global.f32 %f3, [%rd1+20];
    add.rn.f32 %f4, %f3, 0f00000000;
    st.global.f32 [%rd1+36], %f4;
    ld.global.s32 %r6, [%rd1+24];
    cvt.s64.s32 %rd2, %r6;
    setp.lt.s64 %p5, %rd2, 0;
    selp.u32 %r7, 1, 0, %p5;
    st.global.u32 [%rd1+40], %r7;
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
    the spec. `backend` is a VulkanBackend whose caps do not work around anything yet. Kept
    in the kernel cache as one verified number per device, driver and cuport's code (which
    compiles the probe), so that only a device's first process runs it."""
    from .. import cache

    return _decode(backend.measured("vulkan quirks probe", (cache.code_fingerprint(), _PTX, str(PROBE_N)),
                                    lambda: _encode(_measure(backend))))


_FLAGS = (("divergent_memory_barriers", False), ("float_zero_folds", True), ("sext64_compare_folds", True))


def _encode(found: dict[str, object]) -> int:
    """A positive number for cache.measured: bit i of the low three for _FLAGS[i], the loop
    limit (plus one, 0 for none) above them."""
    word = 1 << 62  # (positive even when nothing was found)
    for i, (name, _) in enumerate(_FLAGS):
        word |= (name in found) << i
    return word | (int(found.get("loop_iteration_limit", -1)) + 1) << 3


def _decode(word: int) -> dict[str, object]:
    out: dict[str, object] = {}
    limit = ((word & ~(1 << 62)) >> 3) - 1
    if limit >= 0:
        out["loop_iteration_limit"] = limit
    for i, (name, value) in enumerate(_FLAGS):
        if word >> i & 1:
            out[name] = value
    return out


def _measure(backend) -> dict[str, object]:
    from .backend import VulkanModule

    buf = backend.allocate_buffer(_BYTES, "host")
    try:
        ctypes.memmove(buf.host_ptr, _INPUT, _BYTES)
        mod = VulkanModule(backend, [_PTX])
        mod.kernel("quirks").launch((1, 1, 1), (64, 1, 1), 0, struct.pack("<QI", buf.address, PROBE_N))
        failed = backend.drain()  # launches are asynchronous: read the counts once it ran
        if failed is not None:
            raise failed[1]
        count, fenced = struct.unpack("<II", ctypes.string_at(buf.host_ptr, 8))
        inf_times_zero, minus_zero_plus_zero, negative = struct.unpack("<III", ctypes.string_at(buf.host_ptr + 32, 12))
    finally:
        backend.dev.free(buf)
    out: dict[str, object] = {}
    if count < PROBE_N:
        out["loop_iteration_limit"] = max(count - 1, 1)  # back edges taken before the loop ended
    if fenced != _DIVERGENT_ITERATIONS:
        out["divergent_memory_barriers"] = False
    if inf_times_zero != 0x7FFFFFFF or minus_zero_plus_zero != 0:  # the canonical NaN, +0
        out["float_zero_folds"] = True
    if negative != 1:
        out["sext64_compare_folds"] = True
    return out
