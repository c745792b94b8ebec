"""Integer and float instructions and LLVM intrinsics, run on the device and compared with
numpy on edge values and random bits (one case per line: name, LLVM side, numpy side)."""

from __future__ import annotations

import numpy as np
import pytest
from elementwise import apply, pairs, same_floats, special_f32, special_f64
from llvmlite import ir as ll

RNG = np.random.default_rng(1234)


def _ints(dtype, extra=3000):
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    raw = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, info.max, info.max - 1, info.min, info.min + 1, -1, info.max // 2]
    unsigned = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    edge = np.array([v & (2**bits - 1) for v in raw], dtype=np.uint64).astype(unsigned).view(dtype)
    a, b = np.meshgrid(edge, edge)
    ra = RNG.integers(info.min, info.max, extra, dtype=dtype, endpoint=True)
    rb = RNG.integers(info.min, info.max, extra, dtype=dtype, endpoint=True)
    return np.concatenate([a.ravel(), ra]), np.concatenate([b.ravel(), rb])


def _wrap(f):
    def g(a, b):
        with np.errstate(over="ignore"):
            return f(a, b)
    return g


U = np.uint32
INT_BINOPS = {
    "add": (lambda b, x, y: b.add(x, y), _wrap(lambda a, c: a + c)),
    "sub": (lambda b, x, y: b.sub(x, y), _wrap(lambda a, c: a - c)),
    "mul": (lambda b, x, y: b.mul(x, y), _wrap(lambda a, c: a * c)),
    "udiv": (lambda b, x, y: b.udiv(x, y), lambda a, c: a // c),
    "urem": (lambda b, x, y: b.urem(x, y), lambda a, c: a % c),
    "sdiv": (lambda b, x, y: b.sdiv(x, y), None),
    "srem": (lambda b, x, y: b.srem(x, y), None),
    "shl": (lambda b, x, y: b.shl(x, y), None),
    "lshr": (lambda b, x, y: b.lshr(x, y), None),
    "ashr": (lambda b, x, y: b.ashr(x, y), None),
    "and": (lambda b, x, y: b.and_(x, y), lambda a, c: a & c),
    "or": (lambda b, x, y: b.or_(x, y), lambda a, c: a | c),
    "xor": (lambda b, x, y: b.xor(x, y), lambda a, c: a ^ c),
}


def _signed_ref(name, a, c, bits):
    """sdiv, srem, shifts on Python integers (the signed view of the bits)."""
    m = 2**bits

    def signed(x):
        x = int(x)
        return x - m if x >= m // 2 else x

    out = []
    for x, y in zip(a, c, strict=True):
        sx, sy = signed(x), signed(y)
        if name == "sdiv":
            r = _tdiv(sx, sy)
        elif name == "srem":
            r = sx - _tdiv(sx, sy) * sy
        elif name == "shl":
            r = int(x) << (int(y) % bits)
        elif name == "lshr":
            r = int(x) >> (int(y) % bits)
        else:
            r = sx >> (int(y) % bits)
        out.append(r % m)
    return np.array(out, dtype=object).astype(a.dtype)


def _tdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("name", sorted(INT_BINOPS))
def test_integer_binops(name: str, bits: int) -> None:
    dt = np.uint32 if bits == 32 else np.uint64
    a, c = _ints(dt)
    if name in ("udiv", "urem", "sdiv", "srem"):
        c = np.where(c == 0, dt(3), c)
        if name in ("sdiv", "srem"):  # INT_MIN / -1 overflows (undefined in LLVM)
            smin = dt(1 << (bits - 1))
            c = np.where((a == smin) & (c == np.iinfo(dt).max), dt(5), c)
    if name in ("shl", "lshr", "ashr"):
        c = c % dt(bits)  # LLVM: a shift by the width or more is poison
    build, ref = INT_BINOPS[name]
    got = apply(lambda k, v: build(k.b, *v), [a, c], dt)
    want = ref(a, c) if ref is not None else _signed_ref(name, a, c, bits)
    assert np.array_equal(got, np.asarray(want).astype(dt))


@pytest.mark.parametrize("pred", ["==", "!=", "<", "<=", ">", ">="])
@pytest.mark.parametrize("signed", [False, True])
def test_icmp(pred: str, signed: bool) -> None:
    a, c = _ints(np.int32 if signed else np.uint32)
    got = apply(lambda k, v: (k.b.icmp_signed if signed else k.b.icmp_unsigned)(pred, *v), [a, c], np.uint8)
    want = {"==": a == c, "!=": a != c, "<": a < c, "<=": a <= c, ">": a > c, ">=": a >= c}[pred]
    assert np.array_equal(got, want.astype(np.uint8))


FLOAT_BINOPS = {"fadd": (lambda b, x, y: b.fadd(x, y), np.add), "fsub": (lambda b, x, y: b.fsub(x, y), np.subtract),
                "fmul": (lambda b, x, y: b.fmul(x, y), np.multiply)}


def _normal_only(x: np.ndarray) -> np.ndarray:
    """Subnormals replaced by zeros of the same sign (the device may flush them: Vulkan
    allows that without the DenormPreserve mode, which lavapipe lacks)."""
    tiny = np.finfo(x.dtype).tiny
    return np.where((np.abs(x) < tiny) & (x != 0), np.copysign(np.zeros_like(x), x), x)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(FLOAT_BINOPS))
def test_float_binops_are_correctly_rounded(name: str, dt) -> None:
    vals = special_f32() if dt == np.float32 else special_f64()
    a, c = pairs(vals, RNG, 4000)
    a, c = _normal_only(a), _normal_only(c)
    build, ref = FLOAT_BINOPS[name]
    got = apply(lambda k, v: build(k.b, *v), [a, c], dt)
    with np.errstate(all="ignore"):
        want = ref(a, c)
    ok = same_floats(got, want) | (same_floats(got, _normal_only(want)))
    assert ok.all(), list(zip(a[~ok][:5], c[~ok][:5], got[~ok][:5], want[~ok][:5], strict=True))


FCMP = ["==", "!=", "<", "<=", ">", ">=", "ord", "uno"]


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("pred", FCMP)
def test_fcmp(pred: str, ordered: bool) -> None:
    a, c = pairs(special_f32(), RNG, 500)
    f = (lambda k, v: k.b.fcmp_ordered(pred, *v)) if ordered else (lambda k, v: k.b.fcmp_unordered(pred, *v))
    got = apply(f, [a, c], np.uint8)
    nan = np.isnan(a) | np.isnan(c)
    base = {"==": a == c, "!=": a != c, "<": a < c, "<=": a <= c, ">": a > c, ">=": a >= c,
            "ord": ~nan, "uno": nan}[pred]
    if pred not in ("ord", "uno"):
        base = base & ~nan if ordered else base | nan
        if pred == "!=":  # numpy's != is already true on NaN
            base = (a != c) & ~nan if ordered else (a != c) | nan
    assert np.array_equal(got, base.astype(np.uint8))


def _intr(name: str):
    def build(k, v):
        return k.intrinsic(name, v[0].type, v)
    return build


def _u32_unary():
    a = np.concatenate([np.array([0, 1, 2, 3, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFF, 0x00010000, 0x100], dtype=np.uint32),
                        RNG.integers(0, 2**32, 3000, dtype=np.uint32), (np.uint32(1) << RNG.integers(0, 32, 200, dtype=np.uint32))])
    return a


def _popcount(a: np.ndarray) -> np.ndarray:
    return np.array([bin(int(x)).count("1") for x in a], dtype=a.dtype)


def _clz(a, w):
    return np.array([w - int(x).bit_length() for x in a], dtype=a.dtype)


def _ctz(a, w):
    return np.array([w if x == 0 else (int(x) & -int(x)).bit_length() - 1 for x in a], dtype=a.dtype)


def _rev(a, w):
    return np.array([int(format(int(x), f"0{w}b")[::-1], 2) for x in a], dtype=a.dtype)


@pytest.mark.parametrize("dt", [np.uint8, np.uint16, np.uint32, np.uint64], ids=["i8", "i16", "i32", "i64"])
@pytest.mark.parametrize("name", ["ctpop", "ctlz", "cttz", "bitreverse"])
def test_bit_counting(name: str, dt) -> None:
    w = np.dtype(dt).itemsize * 8
    a = _u32_unary().astype(np.uint64)
    a = np.concatenate([a, a << np.uint64(32), RNG.integers(0, 2**63, 1000, dtype=np.uint64)]).astype(dt)
    full = f"llvm.{name}.i{w}"
    if name in ("ctlz", "cttz"):
        def f(k, v):
            return (k.intrinsic(full, v[0].type, [v[0], ll.Constant(ll.IntType(1), 0)]))
    else:
        f = _intr(full)
    got = apply(f, [a], dt)
    want = {"ctpop": lambda: _popcount(a), "ctlz": lambda: _clz(a, w), "cttz": lambda: _ctz(a, w),
            "bitreverse": lambda: _rev(a, w)}[name]()
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dt", [np.uint32, np.uint64], ids=["i32", "i64"])
@pytest.mark.parametrize("name", ["fshl", "fshr"])
def test_funnel_shifts(name: str, dt) -> None:
    w = np.dtype(dt).itemsize * 8
    a, b = _ints(dt, 1500)
    s = RNG.integers(0, 3 * w, len(a), dtype=np.uint64).astype(dt)
    got = apply(lambda k, v: k.intrinsic(f"llvm.{name}.i{w}", v[0].type, v), [a, b, s], dt)
    want = []
    for x, y, z in zip(a, b, s, strict=True):
        cat = (int(x) << w) | int(y)
        z = int(z) % w
        want.append((cat << z) >> w & (2**w - 1) if name == "fshl" else (cat >> z) & (2**w - 1))
    assert np.array_equal(got, np.array(want, dtype=np.uint64).astype(dt))


SAT = {"sadd.sat": (np.int32, lambda a, c: np.clip(a.astype(np.int64) + c, -2**31, 2**31 - 1)),
       "ssub.sat": (np.int32, lambda a, c: np.clip(a.astype(np.int64) - c, -2**31, 2**31 - 1)),
       "uadd.sat": (np.uint32, lambda a, c: np.clip(a.astype(np.int64) + c, 0, 2**32 - 1)),
       "usub.sat": (np.uint32, lambda a, c: np.clip(a.astype(np.int64) - c, 0, 2**32 - 1)),
       "smin": (np.int32, np.minimum), "smax": (np.int32, np.maximum),
       "umin": (np.uint32, np.minimum), "umax": (np.uint32, np.maximum)}


@pytest.mark.parametrize("name", sorted(SAT))
def test_integer_min_max_saturation(name: str) -> None:
    dt, ref = SAT[name]
    a, c = _ints(dt)
    got = apply(_intr(f"llvm.{name}.i32"), [a, c], dt)
    assert np.array_equal(got, ref(a, c).astype(dt))


def test_abs() -> None:
    a, _ = _ints(np.int32)
    got = apply(lambda k, v: k.intrinsic("llvm.abs.i32", v[0].type, [v[0], ll.Constant(ll.IntType(1), 0)]), [a], np.int32)
    with np.errstate(over="ignore"):
        assert np.array_equal(got, np.abs(a))


@pytest.mark.parametrize("src,dst,signed", [(np.float32, np.int32, True), (np.float32, np.uint32, False),
                                            (np.float64, np.int64, True), (np.float64, np.uint32, False),
                                            (np.float64, np.int32, True), (np.float32, np.uint64, False)])
def test_fpto_int_sat(src, dst, signed) -> None:
    vals = special_f32() if src == np.float32 else special_f64()
    extra = RNG.standard_normal(2000) * np.exp2(RNG.integers(-5, 70, 2000))
    a = np.concatenate([vals, vals + 0.5, -vals, extra.astype(src)]).astype(src)
    sw, dw = np.dtype(src).itemsize * 8, np.dtype(dst).itemsize * 8
    name = f"llvm.fpto{'s' if signed else 'u'}i.sat.i{dw}.f{sw}"
    got = apply(lambda k, v: k.intrinsic(name, ll.IntType(dw), v), [a], dst)
    info = np.iinfo(dst)
    want = []
    for x in a.astype(np.float64):
        if np.isnan(x):
            want.append(0)
        elif x >= info.max:
            want.append(info.max)
        elif x <= info.min:
            want.append(info.min)
        else:
            want.append(int(np.trunc(x)))
    assert np.array_equal(got, np.array(want, dtype=object).astype(dst))


def _nan_or(x, y, f):
    return np.where(np.isnan(x), y, np.where(np.isnan(y), x, f(x, y)))


@np.errstate(invalid="ignore")
def _ieee_min(a, c, lower, nan_wins):
    out = []
    for x, y in zip(a.astype(np.float64), c.astype(np.float64), strict=True):
        if np.isnan(x) or np.isnan(y):
            out.append(np.nan if nan_wins or (np.isnan(x) and np.isnan(y)) else (y if np.isnan(x) else x))
        elif x == y:
            out.append(min(x, y, key=lambda z: np.copysign(1, z)) if lower else max(x, y, key=lambda z: np.copysign(1, z)))
        else:
            out.append(min(x, y) if lower else max(x, y))
    return np.array(out, dtype=a.dtype)


MINMAX = {
    "minnum": lambda a, c: _nan_or(a, c, np.minimum), "maxnum": lambda a, c: _nan_or(a, c, np.maximum),
    "minimum": lambda a, c: _ieee_min(a, c, True, True), "maximum": lambda a, c: _ieee_min(a, c, False, True),
    "minimumnum": lambda a, c: _ieee_min(a, c, True, False), "maximumnum": lambda a, c: _ieee_min(a, c, False, False),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(MINMAX))
def test_float_min_max(name: str, dt) -> None:
    vals = special_f32() if dt == np.float32 else special_f64()
    a, c = pairs(_normal_only(vals), RNG, 500)
    a, c = _normal_only(a), _normal_only(c)
    w = np.dtype(dt).itemsize * 8
    got = apply(_intr(f"llvm.{name}.f{w}"), [a, c], dt)
    want = MINMAX[name](a, c)
    if name in ("minnum", "maxnum"):  # the sign of an equal pair of zeros is unspecified
        zeros = (a == 0) & (c == 0)
        got, want = np.where(zeros, 0, got).astype(dt), np.where(zeros, 0, want).astype(dt)
    ok = same_floats(got, want)
    assert ok.all(), list(zip(a[~ok][:5], c[~ok][:5], got[~ok][:5], want[~ok][:5], strict=True))


ROUNDING = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "roundeven": np.rint,
            "fabs": np.abs}


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_rounding_intrinsics(name: str, dt) -> None:
    vals = special_f32() if dt == np.float32 else special_f64()
    extra = (RNG.standard_normal(2000) * np.exp2(RNG.integers(-3, 30, 2000))).astype(dt)
    a = _normal_only(np.concatenate([vals, vals + dt(0.5), -vals - dt(0.5), extra]).astype(dt))
    w = np.dtype(dt).itemsize * 8
    got = apply(_intr(f"llvm.{name}.f{w}"), [a], dt)
    ok = same_floats(got, ROUNDING[name](a))
    assert ok.all(), list(zip(a[~ok][:5], got[~ok][:5], strict=True))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_copysign(dt) -> None:
    vals = special_f32() if dt == np.float32 else special_f64()
    a, c = pairs(vals, RNG, 500)
    w = np.dtype(dt).itemsize * 8
    got = apply(_intr(f"llvm.copysign.f{w}"), [a, c], dt)
    ib = np.uint32 if w == 32 else np.uint64
    sign = ib(1 << (w - 1))
    want = ((a.view(ib) & ~sign) | (c.view(ib) & sign)).view(dt)
    assert np.array_equal(got.view(ib), want.view(ib))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_fma_is_fused(dt) -> None:
    """fma(a, b, c) with one rounding: a*b - round(a*b) is exact through it."""
    n = 3000
    a = (RNG.standard_normal(n) * 3).astype(dt)
    b = (RNG.standard_normal(n) * 3).astype(dt)
    p = (a * b).astype(dt)
    w = np.dtype(dt).itemsize * 8
    got = apply(lambda k, v: k.intrinsic(f"llvm.fma.f{w}", v[0].type, [v[0], v[1], k.b.fneg(v[2])]), [a, b, p], dt)
    if dt == np.float32:
        want = (a.astype(np.float64) * b - p).astype(np.float32)  # exact in f64, then one rounding
    else:
        from fractions import Fraction
        want = np.array([float(Fraction(float(x)) * Fraction(float(y)) - Fraction(float(z))) for x, y, z in zip(a, b, p, strict=True)])
    assert np.array_equal(got, want)


def test_overflow_intrinsics_through_extractvalue() -> None:
    a, c = _ints(np.uint32)
    ok_t = ll.LiteralStructType([ll.IntType(32), ll.IntType(1)])

    def build(k, v):
        r = k.intrinsic("llvm.uadd.with.overflow.i32", ok_t, v)
        s = k.b.extract_value(r, 0)
        o = k.b.zext(k.b.extract_value(r, 1), ll.IntType(32))
        return k.b.add(k.b.shl(s, ll.Constant(ll.IntType(32), 1)), o)

    got = apply(build, [a, c], np.uint32)
    s = (a.astype(np.uint64) + c)
    want = (((s & 0xFFFFFFFF) << 1) + (s >> 32)).astype(np.uint32)
    assert np.array_equal(got, want)
