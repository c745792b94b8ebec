"""f32 with subnormals kept on a device that flushes them (FloatModes.flush32, spirv/subnormal.py),
checked on any device: FloatModes.simulate_flush32 makes the device's own f32 instructions
flush their operands and results as NVIDIA's driver does (measured on the H200 with
tests/vulkan/denormal_probe.py), and the same exact references as the other tests must hold.
The simulation is itself checked: without the emulation, the results are those the H200
gave (subnormal operands and results lost)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import spvrun
import test_spirv_fpmath as fpm
import test_spirv_ops as ops
from elementwise import apply, pairs, same_floats, special_f32

from cuport.backends.vulkan.spirv.probe import fma32_variant

# (fma made exact as CUPORT_VK_FMA32 says, so that these tests check each variant)
NVIDIA = {"denorm_preserve": (), "flush32": True, "simulate_flush32": True,
          "fma32": fma32_variant(os.environ.get("CUPORT_VK_FMA32", ""))}


@pytest.fixture
def flushing_device(monkeypatch):
    spvrun.device()  # skips without a device
    monkeypatch.setattr(spvrun, "_modes", dict(NVIDIA))


def test_the_simulation_flushes_as_the_h200_did(monkeypatch) -> None:
    """Without the emulation, fadd on simulated flushing loses what the H200 lost."""
    spvrun.device()
    monkeypatch.setattr(spvrun, "_modes", dict(NVIDIA, flush32=False))
    a, b = pairs(special_f32(), np.random.default_rng(3), 0)
    got = apply(lambda k, v: k.b.fadd(*v), [a, b], np.float32)
    with np.errstate(all="ignore"):
        want = a + b
    lost = ~same_floats(got, want)
    tiny = np.finfo(np.float32).tiny
    sub = lambda x: (x != 0) & (np.abs(x) < tiny)  # noqa: E731
    assert lost.any()
    assert (sub(a) | sub(b) | sub(want))[lost].all()  # only where a subnormal is involved


@pytest.mark.parametrize("pred", ops.FCMP)
def test_fcmp(flushing_device, pred) -> None:
    for ordered in (True, False):
        ops.test_fcmp(pred, ordered)


@pytest.mark.parametrize("name", sorted(ops.FLOAT_BINOPS))
def test_add_sub_mul_with_subnormals(flushing_device, name) -> None:
    vals = special_f32()
    rng = np.random.default_rng(11)
    a, c = pairs(vals, rng, 3000)
    tiny = np.finfo(np.float32).tiny
    # operands and results near and below 2^-126, and sums of small normals that go subnormal
    s = (rng.standard_normal(3000) * tiny * rng.choice([1, 2.0 ** -10, 2.0 ** 10, 2.0 ** 30], 3000)).astype(np.float32)
    t = (-s * rng.choice([1.0, 1.5, 2.0 ** -20, 2.0 ** 20], 3000) + rng.standard_normal(3000) * tiny).astype(np.float32)
    a, c = np.concatenate([a, s, s]), np.concatenate([c, t, np.roll(s, 1)])
    build, ref = ops.FLOAT_BINOPS[name]
    got = apply(lambda k, v: build(k.b, *v), [a, c], np.float32)
    with np.errstate(all="ignore"):
        want = ref(a, c)
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:5], c[~ok][:5], got[~ok][:5], want[~ok][:5], strict=True))


@pytest.mark.parametrize("name", ["minnum", "maxnum", "minimum", "maximum"])
def test_min_max_with_subnormals(flushing_device, name) -> None:
    a, c = pairs(special_f32(), np.random.default_rng(5), 300)
    got = apply(lambda k, v: k.intrinsic(f"llvm.{name}.f32", v[0].type, v), [a, c], np.float32)
    want = ops.MINMAX[name](a, c)
    zeros = (a == 0) & (c == 0)  # the sign of an equal pair of zeros is unspecified for minnum
    if name in ("minnum", "maxnum"):
        got, want = np.where(zeros, 0, got).astype(np.float32), np.where(zeros, 0, want).astype(np.float32)
    assert same_floats(got, want).all()


def test_negate_abs_and_widen(flushing_device) -> None:
    a = special_f32()
    assert same_floats(apply(lambda k, v: k.b.fneg(v[0]), [a], np.float32), -a).all()
    assert same_floats(apply(lambda k, v: k.intrinsic("llvm.fabs.f32", v[0].type, v), [a], np.float32), np.abs(a)).all()
    from spvtools import F64

    assert same_floats(apply(lambda k, v: k.b.fpext(v[0], F64), [a], np.float64), a.astype(np.float64)).all()


@pytest.mark.parametrize("mode", sorted(fpm.EMULATED))
@pytest.mark.parametrize("op", ["fdiv", "sqrt", "fma"])
def test_division_root_fma(flushing_device, op, mode) -> None:
    {"fdiv": fpm.test_fdiv_is_correctly_rounded, "sqrt": fpm.test_sqrt_is_correctly_rounded,
     "fma": fpm.test_fma_is_exact}[op](np.float32, mode)


def test_fma_over_the_devices_fma(flushing_device) -> None:
    """The guarded path over the device's own Fma (NVIDIA's is fused). lavapipe's rounds the
    product first, so the factors here have exact products (short significands, products
    of at least 2^-120): then its Fma is a fused one, and whatever the guard lets through
    must already be right; c, cancellations and subnormal factors bring in the rest."""
    from cuport.backends.vulkan.spirv import FloatModes

    rng = np.random.default_rng(21)
    n = 6000
    ka = rng.integers(1, 1 << 11, n) * rng.choice([-1, 1], n)
    kb = rng.integers(1, 1 << 11, n) * rng.choice([-1, 1], n)
    ea = rng.integers(-149, 40, n)
    eb = np.maximum(rng.integers(-60, 60, n), -120 - ea + 22)
    a = (ka * np.exp2(ea.astype(np.float64))).astype(np.float32)
    b = (kb * np.exp2(eb.astype(np.float64))).astype(np.float32)
    p = a.astype(np.float64) * b
    tiny = np.finfo(np.float32).tiny
    c = np.where(rng.random(n) < 0.4, -p * (1 + rng.choice([0, 2.0 ** -23, -(2.0 ** -22)], n)),
                 rng.standard_normal(n) * tiny * rng.choice([2.0 ** -20, 1, 2.0 ** 30], n)).astype(np.float32)
    got = apply(lambda k, v: k.intrinsic("llvm.fma.f32", v[0].type, v), [a, b, c], np.float32,
                float_modes=FloatModes(fused_fma=True))
    want = fpm._fma_ref(a, b, c, np.float32)
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:4], b[~ok][:4], c[~ok][:4], got[~ok][:4], want[~ok][:4], strict=True))


def test_mul_fma_with_zeros(flushing_device) -> None:
    """Zeros of both signs against subnormals, the smallest normals and ordinary values:
    the guard lets zeros through on the device's instruction (sgemm's matrices hold many),
    so the sign of each zero result and every tiny product must still be CUDA's."""
    from cuport.backends.vulkan.spirv import FloatModes

    tiny = float(np.finfo(np.float32).tiny)
    vals = np.array([0.0, -0.0, 2.0 ** -149, -(2.0 ** -140), tiny, -tiny, 2.0 ** -63, 2.0 ** -70,
                     -0.75 * 2.0 ** -60, 1.5, -3.0,
                     2.0 ** 100], np.float32)
    a, b, c = (x.ravel() for x in np.meshgrid(vals, vals, vals, indexing="ij"))
    got = apply(lambda k, v: k.intrinsic("llvm.fma.f32", v[0].type, v), [a, b, c], np.float32,
                float_modes=FloatModes(fused_fma=True))
    want = fpm._fma_ref(a, b, c, np.float32)
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:4], b[~ok][:4], c[~ok][:4], got[~ok][:4], want[~ok][:4], strict=True))
    got = apply(lambda k, v: k.b.fmul(*v), [a, b], np.float32)
    with np.errstate(over="ignore"):  # (2^100 * 2^100 is inf on both sides)
        want = a * b
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:4], b[~ok][:4], got[~ok][:4], want[~ok][:4], strict=True))


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
@pytest.mark.parametrize("op", ["fadd", "fsub", "fmul", "fdiv", "sqrt", "fma"])
def test_directed_rounding(flushing_device, op, mode) -> None:
    fpm.test_directed_rounding_of_constrained_intrinsics(op, np.float32, mode)


# ---------------------------------------------------------------- DenormPreserve declared anyway
def test_int_order32_routes_only_comparisons_and_min_max(flushing_device) -> None:
    """A device that keeps subnormals once DenormPreserve is declared but whose GLSL FMin/FMax
    flush (NVIDIA's driver, measured on an H100): under int_order32 min/max and comparisons
    use the integer order (no FMin/FMax, no float comparison in the SPIR-V), arithmetic is the
    device's own (no slow path), and the results keep subnormals."""
    from spvtools import F32, Kernel, disassemble

    from cuport.backends.vulkan.spirv import FloatModes

    modes = FloatModes(fused_fma=True, denorm_preserve=(32,), int_order32=True)
    k = Kernel("mm")
    p = k.push_ptr(0)
    x = k.b.load(k.element(p, k.global_id(64), F32), typ=F32)
    y = k.b.fadd(x, x)
    lo = k.intrinsic("llvm.minnum.f32", F32, [x, y])
    hi = k.intrinsic("llvm.maxnum.f32", F32, [x, y])
    lt = k.b.fcmp_ordered("<", lo, hi)
    k.b.store(k.b.select(lt, lo, hi), k.element(p, k.global_id(64), F32))
    k.b.ret_void()
    text = disassemble(k.shader((64, 1, 1), modes).spirv)
    assert "FMin" not in text and "FMax" not in text and "OpFOrdLessThan" not in text
    assert "OpFAdd" in text and "OpFunctionCall" not in text  # the sum is the device's own

    a, c = pairs(special_f32(), np.random.default_rng(8), 500)
    for name, ref in (("minnum", np.fmin), ("maxnum", np.fmax)):
        got = apply(lambda k, v, name=name: k.intrinsic(f"llvm.{name}.f32", v[0].type, v), [a, c], np.float32,
                    device_modes=False, float_modes=FloatModes(int_order32=True, simulate_flush32=False))
        zeros = (a == 0) & (c == 0)
        want = np.where(zeros, 0, ref(a, c)).astype(np.float32)
        assert same_floats(np.where(zeros, 0, got).astype(np.float32), want).all()


@pytest.mark.parametrize("found, modes", [
    # (probe without the mode, probe with it): (arithmetic, Fma, min/max flush) -> what the
    # backend uses
    ({False: (False, False, False)}, {"denorm_preserve": (), "flush32": False, "int_order32": False, "fma32": ""}),
    ({False: (True, True, True), True: (False, False, True)},
     {"denorm_preserve": (32,), "flush32": False, "int_order32": True, "fma32": ""}),
    ({False: (True, True, True), True: (False, False, False)},
     {"denorm_preserve": (32,), "flush32": False, "int_order32": False, "fma32": ""}),
    # NVIDIA's driver on an H100: the mode keeps them everywhere but in FMin/FMax and Fma
    ({False: (True, True, True), True: (False, True, True)},
     {"denorm_preserve": (32,), "flush32": False, "int_order32": True, "fma32": "guard"}),
    ({False: (False, True, False), True: (False, True, False)},
     {"denorm_preserve": (32,), "flush32": False, "int_order32": False, "fma32": "guard"}),
    ({False: (True, True, True), True: (True, True, True)},
     {"denorm_preserve": (), "flush32": True, "int_order32": False, "fma32": "guard"}),
])
def test_subnormal_modes_from_the_probes(found, modes) -> None:
    """How a device's f32 subnormal handling follows from what the probes measured
    (spirv/probe.py subnormal_modes, which the backend and these tests' spvrun use)."""
    from cuport.backends.vulkan.spirv.probe import subnormal_modes

    fc = {"shaderDenormPreserveFloat16": True, "shaderDenormPreserveFloat64": True}
    got = subnormal_modes(fc, "", lambda preserve: found[preserve])
    want = dict(modes, denorm_preserve=tuple(sorted((16, 64, *modes["denorm_preserve"]))))
    assert {k: got[k] for k in want} == want
    assert subnormal_modes(fc, "1", lambda preserve: found[preserve])["flush32"]
    assert not subnormal_modes(fc, "0", lambda preserve: found[preserve])["flush32"]
    f64 = subnormal_modes(fc, "", lambda preserve: found[preserve], "f64")["fma32"]
    assert f64 == ("f64" if modes["fma32"] else "")
    if not modes["flush32"]:  # (where the rest keeps subnormals, fma may be left to the device)
        assert subnormal_modes(fc, "", lambda preserve: found[preserve], "device")["fma32"] == ""
    # where only Fma flushes and the driver fuses a multiply and an add that keep subnormals
    # (the contraction probe), fma is that pair unless a variant is asked for
    for verdict in ("contract", "contract-alone"):
        fuses = subnormal_modes(fc, "", lambda preserve: found[preserve], contract=lambda v=verdict: v)["fma32"]
        assert fuses == (verdict if modes["fma32"] and not modes["flush32"] else modes["fma32"])
        assert subnormal_modes(fc, "", lambda preserve: found[preserve], "guard",
                               contract=lambda v=verdict: v)["fma32"] == modes["fma32"]
    assert subnormal_modes(fc, "", lambda preserve: found[preserve],
                           contract=lambda: "")["fma32"] == modes["fma32"]


def test_the_probe_tells_fma_from_the_rest() -> None:
    """The probe's words: the Fma word alone wrong is (False, True, ...)."""
    import struct

    from cuport.backends.vulkan.spirv.probe import (
        MINMAX_EXPECTED,
        SUBNORMAL_EXPECTED,
        subnormal_probe_flushes,
    )

    def data(words, minmax=MINMAX_EXPECTED):
        return struct.pack("<6I8xQ2I", *words[:6], words[6], *minmax)

    assert subnormal_probe_flushes(data(SUBNORMAL_EXPECTED)) == (False, False, False)
    fma_flushed = list(SUBNORMAL_EXPECTED)
    fma_flushed[2] = 0
    assert subnormal_probe_flushes(data(fma_flushed)) == (False, True, False)
    add_flushed = list(SUBNORMAL_EXPECTED)
    add_flushed[0] = 0
    assert subnormal_probe_flushes(data(add_flushed, (0, 0))) == (True, False, True)


def _preserving() -> dict:
    """The device's own subnormal modes where they keep f32 subnormals (lavapipe's; NVIDIA's
    with DenormPreserve declared): skips on a device that flushes whatever is declared."""
    modes = dict(spvrun.device_float_modes())
    if modes["flush32"]:
        pytest.skip("the device flushes f32 subnormals even with DenormPreserve declared")
    return modes


def _fma_cases(n: int = 4000):
    """Random f32 triples over the whole range, subnormals, zeros, cancellations and the
    specials (the f64 path never uses the device's Fma, so any inputs do)."""
    rng = np.random.default_rng(33)
    pool = special_f32()
    tiny = np.finfo(np.float32).tiny
    a = np.concatenate([rng.choice(pool, n), (rng.standard_normal(n) * tiny * 2.0 ** rng.integers(-24, 60, n))])
    b = np.concatenate([rng.choice(pool, n), (rng.standard_normal(n) * 2.0 ** rng.integers(-70, 10, n))])
    c = np.concatenate([rng.choice(pool, n), -(a[n:].astype(np.float64) * b[n:])
                        * (1 + rng.choice([0, 2.0 ** -23, -(2.0 ** -22), 2.0 ** -30], n))])
    return a.astype(np.float32), b.astype(np.float32), c.astype(np.float32)


@pytest.mark.parametrize("flush", [True, False], ids=["flushing", "preserving"])
def test_fma32_through_f64(monkeypatch, flush) -> None:
    """FloatModes.fma32 f64 (CUPORT_VK_FMA32=f64): fma always in f64 rounded to odd, on a
    device that flushes (simulated) and on one that keeps subnormals but whose Fma may not
    (NVIDIA's with DenormPreserve): CUDA's fma.rn.f32, bit for bit, with no branch."""
    from spvtools import disassemble

    from cuport.backends.vulkan.spirv import FloatModes

    spvrun.device()
    modes = dict(NVIDIA, fma32="f64") if flush else dict(_preserving(), fma32="f64")
    monkeypatch.setattr(spvrun, "_modes", modes)
    a, b, c = _fma_cases()
    got = apply(lambda k, v: k.intrinsic("llvm.fma.f32", v[0].type, v), [a, b, c], np.float32,
                float_modes=FloatModes(fused_fma=True))
    want = fpm._fma_ref(a, b, c, np.float32)
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:4], b[~ok][:4], c[~ok][:4], got[~ok][:4], want[~ok][:4], strict=True))
    from spvtools import F32, Kernel

    k = Kernel("f")
    p = k.push_ptr(0)
    x = k.b.load(k.element(p, k.global_id(64), F32), typ=F32)
    k.b.store(k.intrinsic("llvm.fma.f32", F32, [x, x, x]), k.element(p, k.global_id(64), F32))
    k.b.ret_void()
    text = disassemble(k.shader((64, 1, 1), FloatModes(fused_fma=True, **{
        key: v for key, v in modes.items() if key != "simulate_flush32"})).spirv)
    assert "Fma" not in text and "OpBranchConditional" not in text and "OpFConvert" in text


def test_fma32_guard_over_a_preserving_device(monkeypatch) -> None:
    """fma32 guard with DenormPreserve (NVIDIA's case: its Fma flushes operands and results
    even with the mode, measured on an H100): the device's Fma and the guard, the rest of
    f32 the device's own. lavapipe's Fma rounds twice, so the products are exact."""
    from spvtools import F32, Kernel, disassemble

    from cuport.backends.vulkan.spirv import FloatModes

    spvrun.device()
    monkeypatch.setattr(spvrun, "_modes", dict(_preserving(), fma32="guard"))
    k = Kernel("g")
    p = k.push_ptr(0)
    x = k.b.load(k.element(p, k.global_id(64), F32), typ=F32)
    y = k.b.fadd(x, x)
    k.b.store(k.intrinsic("llvm.fma.f32", F32, [x, y, y]), k.element(p, k.global_id(64), F32))
    k.b.ret_void()
    text = disassemble(k.shader((64, 1, 1), FloatModes(fused_fma=True, fma32="guard")).spirv)
    assert "Fma" in text and "OpFunctionCall" in text  # the guard's rare branch to the helper
    # two for the fma alone (the hot test, then inside it the zero test: _guarded); the add
    # is the device's
    assert text.count("OpBranchConditional") == 2
    test_fma_over_the_devices_fma(None)
    test_mul_fma_with_zeros(None)
