"""f32 with subnormals kept on a device that flushes them (FloatModes.flush32, spirv/subnormal.py),
checked on any device: FloatModes.simulate_flush32 makes the device's own f32 instructions
flush their operands and results as NVIDIA's driver does (measured on the H200 with
tests/vulkan/denormal_probe.py), and the same exact references as the other tests must hold.
The simulation is itself checked: without the emulation, the results are those the H200
gave (subnormal operands and results lost)."""

from __future__ import annotations

import numpy as np
import pytest
import spvrun
import test_spirv_fpmath as fpm
import test_spirv_ops as ops
from elementwise import apply, pairs, same_floats, special_f32

NVIDIA = {"denorm_preserve": (), "flush32": True, "simulate_flush32": True}


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


# ---------------------------------------------------------------- block-level speculation
@pytest.fixture
def speculated(monkeypatch):
    """Counts the runs of f32 operations that went through speculation (spirv/speculate.py),
    so that a test of it fails if its kernel was emitted operation by operation."""
    from cuport.backends.vulkan.spirv import speculate

    runs = []
    real = speculate.BlockSpeculation.run

    def run(self):
        runs.append(len(self.insts))
        return real(self)
    monkeypatch.setattr(speculate.BlockSpeculation, "run", run)
    return runs


def _tiny_mix(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values where flushing matters: subnormals, the smallest normals, zeros of both signs,
    and ordinary values (most of them, as in a real kernel, so most blocks take the fast run)."""
    tiny = np.finfo(np.float32).tiny
    pool = np.concatenate([special_f32(), np.float32([tiny, -tiny, 2 * tiny, 2.0 ** -140, 0.0, -0.0])])
    x = (rng.standard_normal(n) * rng.choice([1.0, 2.0 ** -60, 2.0 ** -63, 2.0 ** -124, 2.0 ** 20], n)).astype(np.float32)
    pick = rng.random(n) < 0.15
    x[pick] = rng.choice(pool, int(pick.sum()))
    return x


def test_speculated_mul_add_chain(flushing_device, speculated) -> None:
    """A block of dependent f32 mul/add/sub (one speculation run): subnormal operands,
    results that go subnormal midway and cancellations, bit for bit against numpy's IEEE
    float32, step by step."""
    rng = np.random.default_rng(31)
    a, b, c, d = (_tiny_mix(rng, 4000) for _ in range(4))

    def build(k, v):
        x, y, z, w = v
        r = k.b.fmul(x, y)
        r = k.b.fadd(r, z)
        r = k.b.fmul(r, w)
        r = k.b.fsub(r, x)
        r = k.b.fmul(r, z)
        return k.b.fadd(k.b.fadd(r, k.b.fmul(y, w)), k.b.fsub(z, w))  # (z - w: small normals)
    got = apply(build, [a, b, c, d], np.float32)
    with np.errstate(all="ignore"):
        want = (((a * b + c) * d - a) * c + b * d) + (c - d)
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:4], b[~ok][:4], c[~ok][:4], d[~ok][:4], got[~ok][:4], want[~ok][:4], strict=True))
    assert len(speculated) == 1 and speculated[0] >= 8


def test_speculated_fma_chain(flushing_device, speculated) -> None:
    """sgemm's shape: an accumulator through a run of fmas of loaded factors. The factors
    have short significands (lavapipe's Fma rounds the product first: on exact products it
    is a fused one), tiny and subnormal ones among them, so that the accumulator goes through
    subnormal values and cancellations; reference: each fma rounded once, exactly."""
    from cuport.backends.vulkan.spirv import FloatModes

    rng = np.random.default_rng(32)
    n = 3000

    def factor():
        k = rng.integers(1, 1 << 10, n) * rng.choice([-1, 1], n)
        e = rng.choice([-150, -140, -130, -75, -70, -10, 0, 5], n) + rng.integers(0, 4, n)
        return (k * np.exp2(e.astype(np.float64))).astype(np.float32)
    fs = [factor() for _ in range(6)]
    acc0 = np.where(rng.random(n) < 0.5, 0.0, fs[0] * np.float32(2.0 ** -20)).astype(np.float32)

    def build(k, v):
        acc = v[0]
        for j in range(3):
            acc = k.intrinsic("llvm.fma.f32", acc.type, [v[1 + 2 * j], v[2 + 2 * j], acc])
        return acc
    got = apply(build, [acc0, *fs], np.float32, float_modes=FloatModes(fused_fma=True))
    want = acc0
    for j in range(3):
        want = np.float32(fpm._fma_ref(fs[2 * j], fs[2 * j + 1], want, np.float32))
    ok = same_floats(got, want)
    assert ok.all(), list(zip(acc0[~ok][:4], got[~ok][:4], want[~ok][:4], strict=True))
    assert speculated, "the fma chain was not speculated"
