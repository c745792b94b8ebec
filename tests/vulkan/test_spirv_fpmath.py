"""Correctly rounded fdiv and llvm.sqrt, and an exact llvm.fma, on the device against exact
references: numpy's IEEE division and square root, and rationals (fractions) rounded once.
Operands: every pair of edge values (zeros, subnormals, the extremes, infinities, NaN),
random bit patterns over the whole range, and quotients that land on subnormal ties.
The emulations run with fused_fma=False (lavapipe's Fma rounds twice), f32 with and
without f64 help."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from elementwise import apply, pairs, same_floats, special_f32, special_f64
from spvtools import F32, F64

from cuport.backends.vulkan.spirv import FloatModes

RNG = np.random.default_rng(99)
EMULATED = {"f64 help": FloatModes(fused_fma=False), "f32 only": FloatModes(fused_fma=False, float64=False)}


def _bits(dt):
    return np.uint32 if dt == np.float32 else np.uint64


def _random_floats(dt, n):
    ib = _bits(dt)
    return RNG.integers(0, np.iinfo(ib).max, n, dtype=ib, endpoint=True).view(dt)


def _operands(dt, n_random=6000):
    vals = special_f32() if dt == np.float32 else special_f64()
    a, b = pairs(vals, RNG, n_random)
    # significands in [1, 2) over exponents that make quotients overflow and go subnormal
    w = np.dtype(dt).itemsize * 8
    e = 127 if w == 32 else 1023
    k = 4000
    sa = (1 + RNG.random(k)) * np.exp2(RNG.integers(-e - 20, e, k).astype(np.float64))
    sb = (1 + RNG.random(k)) * np.exp2(RNG.integers(-e - 20, e, k).astype(np.float64))
    return np.concatenate([a, sa.astype(dt)]), np.concatenate([b, sb.astype(dt)])


def _subnormal_ties(dt):
    """a / b exactly halfway between two subnormals, and just off it."""
    tiny = np.finfo(dt).smallest_subnormal
    odd = np.arange(1, 400, 2, dtype=np.float64)
    a = (odd * float(tiny)).astype(dt)
    two = np.full(len(a), 2.0, dt)
    nxt = np.nextafter(two, dt(3))
    prv = np.nextafter(two, dt(1))
    return np.concatenate([a, a, a, -a]), np.concatenate([two, nxt, prv, two])


@pytest.mark.parametrize("mode", sorted(EMULATED))
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_fdiv_is_correctly_rounded(dt, mode) -> None:
    if dt == np.float64 and mode == "f32 only":
        pytest.skip("f64 never needs f32 help")
    a, b = _operands(dt)
    ta, tb = _subnormal_ties(dt)
    a, b = np.concatenate([a, ta]), np.concatenate([b, tb])
    got = apply(lambda k, v: k.b.fdiv(*v), [a, b], dt, float_modes=EMULATED[mode])
    with np.errstate(all="ignore"):
        want = a / b
    ok = same_floats(got, want)
    assert ok.all(), [(x, y, g, w) for x, y, g, w in zip(a[~ok][:6], b[~ok][:6], got[~ok][:6], want[~ok][:6], strict=True)]


@pytest.mark.parametrize("mode", sorted(EMULATED))
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_sqrt_is_correctly_rounded(dt, mode) -> None:
    if dt == np.float64 and mode == "f32 only":
        pytest.skip("f64 never needs f32 help")
    vals = special_f32() if dt == np.float32 else special_f64()
    a = np.concatenate([vals, _random_floats(dt, 20000), np.abs(_random_floats(dt, 20000)),
                        np.nextafter(np.arange(1, 200, dtype=dt) ** 2, dt(0)),
                        np.nextafter(np.arange(1, 200, dtype=dt) ** 2, dt(1e9))]).astype(dt)
    t = F32 if dt == np.float32 else F64
    name = "llvm.sqrt.f32" if dt == np.float32 else "llvm.sqrt.f64"
    got = apply(lambda k, v: k.intrinsic(name, t, v), [a], dt, float_modes=EMULATED[mode])
    with np.errstate(all="ignore"):
        want = np.sqrt(a)
    ok = same_floats(got, want)
    assert ok.all(), [(x, g, w) for x, g, w in zip(a[~ok][:6], got[~ok][:6], want[~ok][:6], strict=True)]


@np.errstate(over="ignore")
def _round_fraction(x: Fraction, dt) -> float:
    """The float of type dt nearest to x (ties to even), with overflow to infinity."""
    if dt == np.float64:
        try:
            return float(x)  # CPython's int division rounds correctly, subnormals included
        except OverflowError:
            return np.inf if x > 0 else -np.inf
    guess = np.float32(float(x)) if abs(x) < 2**129 else np.float32(np.inf if x > 0 else -np.inf)
    best = None
    for c in (np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))):
        if np.isinf(c):
            lim = Fraction(2**128) - Fraction(2**103)  # halfway between FLT_MAX and 2^128
            fits = (x >= lim) if c > 0 else (x <= -lim)
            if fits:
                return float(c)
            continue
        d = abs(Fraction(float(c)) - x)
        key = (d, int(np.array(c).view(np.uint32)) & 1)
        if best is None or key < best[0]:
            best = (key, float(c))
    return best[1]


def _fma_ref(a, b, c, dt):
    out = []
    for x, y, z in zip(a, b, c, strict=True):
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            with np.errstate(all="ignore"):
                out.append(np.float64(x) * np.float64(y) + np.float64(z) if dt == np.float32 else x * y + z)
            continue
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        if exact == 0:  # the sign of an exact zero: +0 unless both addends are -0
            neg = (np.signbit(x) != np.signbit(y)) and np.signbit(z) and (x == 0 or y == 0)
            out.append(-0.0 if neg else 0.0)
        else:
            out.append(_round_fraction(exact, dt))
    return np.array(out).astype(dt)


@pytest.mark.parametrize("mode", sorted(EMULATED))
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_fma_is_exact(dt, mode) -> None:
    if dt == np.float64 and mode == "f32 only":
        pytest.skip("f64 never needs f32 help")
    vals = special_f32() if dt == np.float32 else special_f64()
    n = 5000
    a = np.concatenate([np.repeat(vals, len(vals)), _random_floats(dt, n), (RNG.standard_normal(n) * 4).astype(dt)])
    b = np.concatenate([np.tile(vals, len(vals)), _random_floats(dt, n), (RNG.standard_normal(n) * 4).astype(dt)])
    c = np.concatenate([np.tile(vals[::-1], len(vals)), _random_floats(dt, n), -(a[-n:].astype(np.float64) * b[-n:]).astype(dt)])
    # products near c: cancellation, and results that go subnormal
    tiny = np.finfo(dt).tiny
    m = 2000
    x = (1 + RNG.random(m)).astype(dt)
    y = ((1 + RNG.random(m)) * float(tiny) * 2.0 ** RNG.integers(-10, 3, m)).astype(dt)
    z = -(x.astype(np.float64) * y).astype(dt)
    # a subnormal c plus exactly half a subnormal unit (a tie), or a little more or less
    unit = float(np.finfo(dt).smallest_subnormal)
    k = RNG.integers(1, 2**20, 300).astype(np.float64)
    cc = np.concatenate([k, -k, k]) * unit
    lo = -538 if dt == np.float64 else -75
    hi = -537 if dt == np.float64 else -75
    aa = np.full(900, 2.0 ** hi)
    aa[600:] = np.nextafter(aa[600:].astype(dt), dt(1)).astype(np.float64)
    bb = np.full(900, 2.0 ** lo)
    a, b, c = (np.concatenate([a, x, aa.astype(dt), -aa.astype(dt)]), np.concatenate([b, y, bb.astype(dt), bb.astype(dt)]),
               np.concatenate([c, z, cc.astype(dt), cc.astype(dt)]))
    t = F32 if dt == np.float32 else F64
    name = "llvm.fma.f32" if dt == np.float32 else "llvm.fma.f64"
    got = apply(lambda k, v: k.intrinsic(name, t, v), [a, b, c], dt, float_modes=EMULATED[mode])
    want = _fma_ref(a, b, c, dt)
    ok = same_floats(got, want)
    assert ok.all(), [(x, y, z, g, w) for x, y, z, g, w in zip(a[~ok][:5], b[~ok][:5], c[~ok][:5], got[~ok][:5], want[~ok][:5], strict=True)]


def test_f16_division_and_sqrt() -> None:
    a = RNG.integers(0, 2**16, 8000, dtype=np.uint16).view(np.float16)
    b = RNG.integers(0, 2**16, 8000, dtype=np.uint16).view(np.float16)
    got = apply(lambda k, v: k.b.fdiv(*v), [a, b], np.float16)
    with np.errstate(all="ignore"):
        want = (a.astype(np.float64) / b).astype(np.float16)
    assert same_floats(got, want).all()


def _probe():
    from spvrun import device

    from cuport.backends.vulkan.spirv import fma_probe_fused, fma_probe_push, fma_probe_shader
    dev = device()
    sh = fma_probe_shader()
    buf = dev.alloc(16)
    try:
        s = dev.stream()
        pipe = dev.pipeline(sh.spirv, sh.entry, sh.local_size, sh.push_size)
        s.dispatch(pipe, (1, 1, 1), fma_probe_push(buf.address))
        out = np.zeros(2, np.uint64)
        s.copy_to_host(out, buf.address)
        return fma_probe_fused(out.tobytes())
    finally:
        dev.free(buf)


def test_fma_probe_tells_the_truth() -> None:
    """The probe's answer agrees with the device's Fma on many operands."""
    fused32, fused64 = _probe()
    for dt, fused in ((np.float32, fused32), (np.float64, fused64)):
        n = 3000
        a = (RNG.standard_normal(n) * 3).astype(dt)
        b = (RNG.standard_normal(n) * 3).astype(dt)
        c = -(a.astype(np.float64) * b).astype(dt)
        t, name = (F32, "llvm.fma.f32") if dt == np.float32 else (F64, "llvm.fma.f64")
        got = apply(lambda k, v, t=t, name=name: k.intrinsic(name, t, v), [a, b, c], dt,
                    device_modes=False, float_modes=FloatModes(fused_fma=True))  # the bare Fma
        assert same_floats(got, _fma_ref(a, b, c, dt)).all() == fused


def test_native_fma_path_on_a_fused_device() -> None:
    """With the device's Fma (fused_fma=True), where the probe says it rounds once: the
    same division, root and fma results (on the H200; lavapipe's Fma rounds twice)."""
    if not all(_probe()):
        pytest.skip("the device's Fma rounds twice (lavapipe); this runs on GPUs whose Fma is fused")
    EMULATED["native"] = FloatModes(fused_fma=True)
    try:
        for dt in (np.float32, np.float64):
            test_fdiv_is_correctly_rounded(dt, "native")
            test_sqrt_is_correctly_rounded(dt, "native")
            test_fma_is_exact(dt, "native")
    finally:
        del EMULATED["native"]


# ---------------------------------------------------------------------- directed rounding
@np.errstate(over="ignore")
def _directed(x: Fraction, dt, mode: str) -> float:
    """x rounded towards zero (rz), down (rm) or up (rp) to dt."""
    f = _round_fraction(x, dt)
    big = float(np.finfo(dt).max)
    if np.isinf(f):
        if mode == "rz" or (mode == "rm" and x > 0) or (mode == "rp" and x < 0):
            return big if x > 0 else -big
        return f
    fx = Fraction(f)
    if mode == "rm" and fx > x:
        return float(np.nextafter(dt(f), dt(-np.inf)))
    if mode == "rp" and fx < x:
        return float(np.nextafter(dt(f), dt(np.inf)))
    if mode == "rz" and abs(fx) > abs(x):
        return float(np.nextafter(dt(f), dt(0)))
    return f


def _zero_sum_sign(terms_negative: list[bool], mode: str) -> float:
    """The sign of an exact zero sum: -0 rounding down unless every addend is +0; else -0
    only when every addend is -0."""
    if mode == "rm":
        return 0.0 if not any(terms_negative) else -0.0
    return -0.0 if all(terms_negative) else 0.0


def _directed_ref(op, args, dt, mode):
    out = []
    for xs in zip(*args, strict=True):
        fs = [float(v) for v in xs]
        if op == "fma" and np.isinf(fs[2]) and np.isfinite(fs[0]) and np.isfinite(fs[1]):
            out.append(fs[2])  # a finite product (exactly) plus an infinity
            continue
        if not all(np.isfinite(fs)):
            with np.errstate(all="ignore"):
                v = {"fadd": lambda a, b: a + b, "fsub": lambda a, b: a - b, "fmul": lambda a, b: a * b,
                     "fdiv": lambda a, b: a / b, "sqrt": np.sqrt, "fma": lambda a, b, c: a * b + c}[op](*[dt(f) for f in fs])
            out.append(float(v))
            continue
        q = [Fraction(f) for f in fs]
        if op == "fdiv" and q[1] == 0:
            with np.errstate(all="ignore"):
                out.append(float(dt(fs[0]) / dt(fs[1])))
            continue
        if op == "sqrt":
            if q[0] < 0:
                out.append(np.nan)
                continue
            if q[0] == 0:
                out.append(fs[0])
                continue
            # the root to more than 130 bits, and whether it is exact
            n, d = q[0].numerator, q[0].denominator
            k = max(0, (d.bit_length() - n.bit_length()) // 2) + 140
            scale = 2 ** k
            r = _isqrt(n * scale * scale // d)
            exact = r * r * d == n * scale * scale
            x = Fraction(r, scale) + (0 if exact else Fraction(1, scale * 2 ** 10))
            out.append(_directed(x, dt, mode))
            continue
        x = {"fadd": lambda a, b: a + b, "fsub": lambda a, b: a - b, "fmul": lambda a, b: a * b,
             "fdiv": lambda a, b: a / b, "fma": lambda a, b, c: a * b + c}[op](*q)
        if x == 0:
            sb = [np.signbit(f) for f in fs]
            if op in ("fmul", "fdiv"):
                out.append(-0.0 if sb[0] != sb[1] else 0.0)
            elif op == "fadd":
                out.append(_zero_sum_sign(sb, mode))
            elif op == "fsub":
                out.append(_zero_sum_sign([sb[0], not sb[1]], mode))
            else:
                out.append(_zero_sum_sign([sb[0] != sb[1], sb[2]], mode))
            continue
        out.append(_directed(x, dt, mode))
    return np.array(out).astype(dt)


def _isqrt(n: int) -> int:
    import math
    return math.isqrt(n)


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["fadd", "fsub", "fmul", "fdiv", "sqrt", "fma"])
def test_directed_rounding_of_constrained_intrinsics(op, dt, mode) -> None:
    """llvm.experimental.constrained.* with a directed rounding (what fprt.strict emits for
    f64 .rz/.rm/.rp) against exact rationals rounded the same way."""
    from llvmlite import ir as ll
    n_args = {"sqrt": 1, "fma": 3}.get(op, 2)
    vals = special_f32() if dt == np.float32 else special_f64()
    if n_args == 1:
        args = [np.concatenate([vals, _random_floats(dt, 3000), np.abs(_random_floats(dt, 3000))]).astype(dt)]
    elif n_args == 2:
        a, b = _operands(dt, 3000)
        args = [a, b]
    else:
        m = 3000
        args = [np.concatenate([np.repeat(vals, len(vals)), _random_floats(dt, m), (RNG.standard_normal(m) * 3).astype(dt)]),
                np.concatenate([np.tile(vals, len(vals)), _random_floats(dt, m), (RNG.standard_normal(m) * 3).astype(dt)]),
                np.concatenate([np.tile(vals[::-1], len(vals)), _random_floats(dt, m), (RNG.standard_normal(m) * 3).astype(dt)])]
    t = F32 if dt == np.float32 else F64
    suffix = "f32" if dt == np.float32 else "f64"
    md_mode = {"rz": "round.towardzero", "rm": "round.downward", "rp": "round.upward"}[mode]

    def build(k, v):
        md = ll.MetaDataType()
        f = k.declare(f"llvm.experimental.constrained.{op}.{suffix}", t, [t] * n_args + [md, md])
        return k.b.call(f, list(v) + [ll.MetaDataString(k.module, md_mode), ll.MetaDataString(k.module, "fpexcept.ignore")])

    got = apply(build, args, dt)
    want = _directed_ref(op, args, dt, mode)
    ok = same_floats(got, want)
    assert ok.all(), [tuple(x[~ok][:4]) for x in args] + [got[~ok][:4], want[~ok][:4]]


class _Mc:
    """The little of an emitter's module context that rounding.strict uses."""

    def __init__(self, k):
        self.llmod = k.module
        self.k = k

    def declare(self, name, ret, args):
        return self.k.declare(name, ret, args)


class _Em:
    def __init__(self, k):
        self.mc = _Mc(k)
        self.b = k.b


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_strictfp_helper_functions(mode) -> None:
    """A directed-rounding helper as the CPU backend builds it (rounding.strict: a defined
    strictfp function that brackets a constrained intrinsic with get/set rounding) is
    translated and runs."""
    from cuport.backends.cpu import rounding
    a, b = _operands(np.float64, 2000)
    got = apply(lambda k, v: rounding.strict(_Em(k), "fdiv", list(v), mode), [a, b], np.float64)
    want = _directed_ref("fdiv", [a, b], np.float64, mode)
    assert same_floats(got, want).all()
