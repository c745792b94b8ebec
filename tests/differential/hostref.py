"""Python semantics of the generated operations, on bit patterns: a reference independent of
both the GPU and cuport.

It exists to cross-check cuport before (and besides) the GPU recording: integer operations,
conversions and the IEEE operations with a named rounding mode are computed exactly here
(rationals, fpref.rnd). A result of `None` means "not modelled" (the GPU recording alone
decides); `ANYNAN` means "some NaN" (the GPU's NaN bits are checked against the recording,
not here).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "isa"))

from fpref import FORMATS, is_nan_bits, rnd  # noqa: E402

ANYNAN = "nan"
W = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32}


def sx(b: int, bits: int) -> int:
    b &= (1 << bits) - 1
    return b - (1 << bits) if b >> (bits - 1) else b


def mask(bits: int) -> int:
    return (1 << bits) - 1


# ---------------------------------------------------------------- float decoding
def is_nan(b: int, fmt: str) -> bool:
    return is_nan_bits(b, fmt)


def is_inf(b: int, fmt: str) -> bool:
    e, m, _ = FORMATS[fmt]
    return b & mask(e + m) == mask(e) << m


def sign(b: int, fmt: str) -> int:
    return b >> (W[fmt] - 1) & 1


def value(b: int, fmt: str):
    """Exact value: a Fraction, or +-inf as float, or None for NaN."""
    e, m, _ = FORMATS[fmt]
    if is_nan(b, fmt):
        return None
    s = -1 if sign(b, fmt) else 1
    ex = b >> m & mask(e)
    frac = b & mask(m)
    if ex == mask(e):
        return s * math.inf
    bias = mask(e - 1)
    if ex == 0:
        return s * Fraction(frac) * Fraction(2) ** (1 - bias - m)
    return s * Fraction(frac | 1 << m) * Fraction(2) ** (ex - bias - m)


def inf_bits(fmt: str, neg: bool) -> int:
    e, m, _ = FORMATS[fmt]
    return (neg << (W[fmt] - 1)) | mask(e) << m


def zero_bits(fmt: str, neg: bool) -> int:
    return int(neg) << (W[fmt] - 1)


def encode(v, fmt: str, mode: str = "rn", neg_zero: bool = False):
    """Round an exact value (Fraction, or +-inf) to fmt's bits."""
    if isinstance(v, float):
        return inf_bits(fmt, v < 0)
    return rnd(v, fmt, mode, neg_zero=neg_zero)


# ---------------------------------------------------------------- IEEE operations
def f_add(a: int, b: int, fmt: str, mode: str = "rn", negate_b: bool = False):
    x, y = value(a, fmt), value(b, fmt)
    if x is None or y is None:
        return ANYNAN
    sb = sign(b, fmt) ^ negate_b
    if negate_b:
        y = -y
    if isinstance(x, float) or isinstance(y, float):
        if isinstance(x, float) and isinstance(y, float) and (x > 0) != (y > 0):
            return ANYNAN
        return inf_bits(fmt, (x if isinstance(x, float) else y) < 0)
    s = x + y
    if s == 0:
        if x == 0 and y == 0:
            neg = sign(a, fmt) and sb
            neg = neg or (mode == "rm" and (sign(a, fmt) or sb))
        else:
            neg = mode == "rm"
        return zero_bits(fmt, neg)
    return rnd(s, fmt, mode)


def f_mul(a: int, b: int, fmt: str, mode: str = "rn"):
    x, y = value(a, fmt), value(b, fmt)
    if x is None or y is None:
        return ANYNAN
    neg = bool(sign(a, fmt) ^ sign(b, fmt))
    if isinstance(x, float) or isinstance(y, float):
        if x == 0 or y == 0:
            return ANYNAN
        return inf_bits(fmt, neg)
    p = x * y
    if p == 0:
        return zero_bits(fmt, neg)
    return rnd(p, fmt, mode)


def f_fma(a: int, b: int, c: int, fmt: str, mode: str = "rn"):
    x, y, z = value(a, fmt), value(b, fmt), value(c, fmt)
    if x is None or y is None or z is None:
        return ANYNAN
    pneg = bool(sign(a, fmt) ^ sign(b, fmt))
    if isinstance(x, float) or isinstance(y, float):
        if x == 0 or y == 0:
            return ANYNAN
        if isinstance(z, float) and (z < 0) != pneg:
            return ANYNAN
        return inf_bits(fmt, pneg)
    if isinstance(z, float):
        return inf_bits(fmt, z < 0)
    p = x * y
    s = p + z
    if s == 0:
        if p == 0 and z == 0:
            neg = (pneg and sign(c, fmt)) or (mode == "rm" and (pneg or sign(c, fmt)))
        else:
            neg = mode == "rm"
        return zero_bits(fmt, bool(neg))
    return rnd(s, fmt, mode)


def f_div(a: int, b: int, fmt: str, mode: str = "rn"):
    x, y = value(a, fmt), value(b, fmt)
    if x is None or y is None:
        return ANYNAN
    neg = bool(sign(a, fmt) ^ sign(b, fmt))
    if isinstance(x, float):
        return ANYNAN if isinstance(y, float) else inf_bits(fmt, neg)
    if isinstance(y, float):
        return zero_bits(fmt, neg)
    if y == 0:
        return ANYNAN if x == 0 else inf_bits(fmt, neg)
    if x == 0:
        return zero_bits(fmt, neg)
    return rnd(x / y, fmt, mode)


def _round_sqrt(q: Fraction, fmt: str, mode: str) -> int:
    """sqrt(q) correctly rounded: the integer part of sqrt(q / quantum^2) at enough precision."""
    e, m, _ = FORMATS[fmt]
    # scale so that the integer square root has m + 3 bits of precision beyond the point
    ex = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    shift = m + 8 - ex
    scaled = q * Fraction(4) ** shift
    n = math.isqrt(scaled.numerator // scaled.denominator)
    exact = Fraction(n * n) == scaled
    # n <= sqrt(scaled) < n+1; n/2^shift approximates sqrt(q); add a sticky bit when inexact
    approx = Fraction(2 * n + (0 if exact else 1)) / Fraction(2) ** (shift + 1)
    return rnd(approx, fmt, mode)


def f_sqrt(a: int, fmt: str, mode: str = "rn"):
    x = value(a, fmt)
    if x is None:
        return ANYNAN
    if x == 0:
        return a
    if x < 0:
        return ANYNAN
    if isinstance(x, float):
        return a
    return _round_sqrt(x, fmt, mode)


def f_rsqrt(a: int, fmt: str, mode: str = "rn"):
    x = value(a, fmt)
    if x is None or x < 0:
        return ANYNAN
    if x == 0:
        return inf_bits(fmt, bool(sign(a, fmt)))
    if isinstance(x, float):
        return 0
    return _round_sqrt(1 / x, fmt, mode)


def f_minmax(a: int, b: int, fmt: str, want_max: bool, nan_prop: bool = False):
    na, nb = is_nan(a, fmt), is_nan(b, fmt)
    if na or nb:
        if nan_prop or (na and nb):
            return ANYNAN
        return b if na else a
    x, y = value(a, fmt), value(b, fmt)
    if x == y:  # +-0: -0 is the smaller
        sa = sign(a, fmt)
        return (b if sa else a) if want_max else (a if sa else b)
    return (a if x > y else b) if want_max else (a if x < y else b)


def f_cmp(a: int, b: int, fmt: str, op: str) -> int:
    x, y = value(a, fmt), value(b, fmt)
    if x is None or y is None:
        return int(op in ("ne", "equ", "neu", "ltu", "leu", "gtu", "geu", "nan"))
    op = op.rstrip("u") if op not in ("nan",) else op
    return int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
                "nan": False}[op])


def f_round_int(a: int, fmt: str, mode: str):
    """cvt.rni/rzi/rmi/rpi.fX.fX: round to an integral value in the same format."""
    x = value(a, fmt)
    if x is None:
        return ANYNAN
    if isinstance(x, float) or x == 0:
        return a
    n = round_int(x, mode)
    if n == 0:
        return zero_bits(fmt, x < 0)
    return rnd(Fraction(n), fmt, "rn")


def round_int(x: Fraction, mode: str) -> int:
    fl = math.floor(x)
    if mode in ("rzi", "rz"):
        return int(x) if x >= 0 else -int(-x)
    if mode in ("rmi", "rm"):
        return fl
    if mode in ("rpi", "rp"):
        return math.ceil(x)
    if mode == "rna":
        return math.floor(x + Fraction(1, 2)) if x >= 0 else -math.floor(-x + Fraction(1, 2))
    r = x - fl  # rni: ties to even
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and fl % 2):
        return fl + 1
    return fl


def f2i(a: int, fmt: str, mode: str, bits: int, signed: bool):
    """Float to integer, saturating; NaN -> 0 (PTX cvt; 64-bit NaN: not modelled)."""
    x = value(a, fmt)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if x is None:  # the H200: f32 NaN -> 0 for up to 32 bits; other NaNs are not modelled
        return 0 if bits <= 32 and fmt == "f32" else None
    if isinstance(x, float):
        n = hi if x > 0 else lo
    else:
        n = min(max(round_int(x, mode), lo), hi)
    return n & mask(bits)


def i2f(v: int, fmt: str, mode: str):
    if v == 0:
        return 0
    return rnd(Fraction(v), fmt, mode)


def f2f(a: int, src: str, dst: str, mode: str = "rn"):
    x = value(a, src)
    if x is None:
        return ANYNAN
    if isinstance(x, float):
        return inf_bits(dst, x < 0)
    if x == 0:
        return zero_bits(dst, bool(sign(a, src)))
    return rnd(x, dst, mode)


# ---------------------------------------------------------------- integer helpers
def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trunc_rem(a: int, b: int) -> int:
    return a - b * trunc_div(a, b)


def clz(v: int, bits: int) -> int:
    return bits - v.bit_length()


def brev(v: int, bits: int) -> int:
    return int(format(v, f"0{bits}b")[::-1], 2)


def prmt(a: int, b: int, s: int) -> int:
    """prmt.b32 default mode (__byte_perm): 4-bit selectors, bit 3 replicates the sign."""
    src = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for n in range(4):
        sel = s >> (4 * n) & 0xF
        byte = src[sel & 7]
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * n)
    return out


def _field(pos: int, ln: int, bits: int) -> tuple[int, int]:
    """A bfe/bfi field's position and length: the low byte of each (the manual) for 32 bits;
    for 64 bits the H200 saturates values above 255 instead (tests/isa/gpu/bitops.json)."""
    if bits == 64:
        return min(pos, 255), min(ln, 255)
    return pos & 0xFF, ln & 0xFF


def bfe(a: int, pos: int, ln: int, bits: int, signed: bool) -> int:
    pos, ln = _field(pos, ln, bits)
    msb = pos + ln - 1
    sbit = 0
    if signed and ln:
        sbit = a >> min(msb, bits - 1) & 1
    d = 0
    for i in range(bits):
        bit = (a >> (pos + i) & 1) if (i < ln and pos + i <= bits - 1) else sbit
        d |= bit << i
    return d


def bfi(a: int, b: int, pos: int, ln: int, bits: int) -> int:
    pos, ln = _field(pos, ln, bits)
    f = b
    for i in range(ln):
        if pos + i > bits - 1:
            break
        f = (f & ~(1 << (pos + i))) | ((a >> i & 1) << (pos + i))
    return f & mask(bits)


def bfind(a: int, bits: int, signed: bool, shiftamt: bool) -> int:
    v = a
    if signed and a >> (bits - 1):
        v = ~a & mask(bits)
    if v == 0:
        return 0xFFFFFFFF
    i = v.bit_length() - 1
    return bits - 1 - i if shiftamt else i
