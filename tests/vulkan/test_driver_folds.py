"""Folds that lavapipe's compiler gets wrong (quirks.py probes them; folds.py rewrites the code
where the probe saw them): nvcc's kernels (driver_folds.cu) on the CPU and on the first Vulkan
device must give the IEEE/ISA answers; the bare SPIR-V shows the driver's own behaviour, so
that the probe and the device cannot disagree unnoticed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
NAN = 0x7FFFFFFF  # the canonical f32 NaN of the GPU's arithmetic


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "driver_folds.cu", "sm_90", "-fmad=false")


def _bits(a: np.ndarray) -> list[str]:
    return [hex(v) for v in a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64)]


@pytest.mark.parametrize("device", devices())
def test_libdevice_trig_of_infinities(ptx, device):
    """sinf/tanf/cospif(inf) are NaN (libdevice multiplies the argument by a register holding
    0: lavapipe folded that to 0, so sinf(inf) was 0 and cospif(inf) 1), and sinpif/cospif
    keep the sign of an exact zero (d05_k030, d06_k033, d09ftz_k037 of the differential
    test: the H200's values)."""
    x = np.array([np.inf, -np.inf, 2.5, -1.8438977e19, -0.0], np.float32)
    out = np.zeros(4 * len(x), np.float32)
    cuport.Module(ptx, device=device).kernel("trig")((1,), (len(x),), (x, out))
    got = _bits(out)
    assert got[0:4] == [hex(NAN)] * 4 and got[4:8] == [hex(NAN)] * 4
    assert got[10] == "0x0"  # cospif(2.5) = +0 (d05_k030 o0[3])
    assert got[15] == "0x80000000"  # sinpif(-1.8e19) = -0 (d05_k030 o2[18])
    assert got[16] == "0x80000000" and got[19] == "0x80000000"  # sinf(-0), sinpif(-0)


@pytest.mark.parametrize("device", devices())
def test_float_operands_that_are_zero_registers(ptx, device):
    """x * (a register holding +0) and x + 0.0 as IEEE 754 says, whatever the driver could
    fold: inf * 0 = NaN, -2.5 * 0 = -0, -0 + 0 = +0."""
    x = np.array([np.inf, -2.5, -0.0, 1.0], np.float32)
    out = np.zeros(2 * len(x), np.float32)
    cuport.Module(ptx, device=device).kernel("zero_operands")((1,), (len(x),), (x, out))
    assert _bits(out) == [hex(NAN), "0x7f800000", "0x80000000", "0xc0200000", "0x80000000", "0x0", "0x0",
                          "0x3f800000"]


@pytest.mark.parametrize("device", devices())
def test_sign_extended_comparisons(ptx, device):
    """cvt.sat.u64.s32 of a negative value is 0 (d09ftz_k000 o13: 0xf0000000 gave
    0xfffffffff0000000 on lavapipe), and (s64)x < 7 after cvt.s64.s32 is the comparison of x."""
    xs = [-268435456, -1, 0, 5, 9, 0x7FFFFFFF]
    out = np.zeros(2 * len(xs), np.uint64)
    cuport.Module(ptx, device=device).kernel("sat_widen")((1,), (len(xs),), (np.array(xs, np.int32), out))
    assert out.tolist() == [v for x in xs for v in (max(x, 0), int(x < 7))]


def test_the_probe_tells_the_driver_apart():
    """The bare SPIR-V (no guard) of x * 0.0 and of (i64)sext(x) < 7 on the first Vulkan
    device: where the quirks probe reports a fold, the driver really answers wrongly (inf * 0
    = 0, a minimal case of the Vulkan spec's SignedZeroInfNanPreserve being ignored; the
    comparison constant), and where it reports none, the answer is right."""
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    from elementwise import apply
    from llvmlite import ir as ll
    from spvtools import F32, I64

    from cuport.backends.vulkan.backend import get_vulkan_backend

    caps = get_vulkan_backend().caps
    x = np.array([np.inf, -2.5], np.float32)
    prod = apply(lambda k, v: k.b.fmul(v[0], ll.Constant(F32, 0.0)), [x], np.float32)
    right = bool(np.isnan(prod[0])) and _bits(prod)[1] == "0x80000000"  # (any NaN: NVIDIA's is 0x7fffffff)
    assert (not right) == caps.float_zero_folds, _bits(prod)
    i = np.array([-1, 0], np.int32)
    lt = apply(lambda k, v: k.b.zext(k.b.icmp_signed("<", k.b.sext(v[0], I64), ll.Constant(I64, 7)), I64),
               [i], np.uint64)
    assert (lt.tolist() != [1, 1]) == caps.sext64_compare_folds, lt.tolist()


@pytest.mark.parametrize("found", [
    {}, {"loop_iteration_limit": 65534}, {"float_zero_folds": True},
    {"loop_iteration_limit": 1, "divergent_memory_barriers": False, "float_zero_folds": True,
     "sext64_compare_folds": True},
])
def test_the_quirks_probes_cached_number_gives_back_what_it_found(found):
    """quirks.probe keeps what it found as one number in the kernel cache: every field that a
    driver's behaviour sets comes back as it was (a device that differs from lavapipe's
    answers, e.g. NVIDIA's folds, included)."""
    from cuport.backends.vulkan import quirks

    word = quirks._encode(found)
    assert word > 0 and quirks._decode(word) == found
