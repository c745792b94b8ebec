"""Types, a portable PRNG and the input pools of the differential test.

Everything the generator draws comes from `Rng` (splitmix64), not from Python's `random`,
so that the same seed gives the same CUDA source on every Python version: the recording
was made on another machine and the test regenerates the sources to compare with it.
Values are handled as bit patterns (unsigned ints of the type's width) throughout, on the
device (every output slot is a 64-bit word holding the value's bits, zero-extended) and in
Python.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

M64 = (1 << 64) - 1


class Rng:
    """splitmix64: tiny, fast, and the same on every platform."""

    def __init__(self, seed: int) -> None:
        self.s = seed & M64

    def next(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def range(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""
        return lo + self.below(hi - lo + 1)

    def choice(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, p: float) -> bool:
        return self.next() < int(p * (1 << 64))

    def bits(self, k: int) -> int:
        return self.next() >> (64 - k) if k else 0

    def weighted(self, table: list[tuple[object, int]]):
        total = sum(w for _, w in table)
        r = self.below(total)
        for item, w in table:
            if r < w:
                return item
            r -= w
        raise AssertionError

    def shuffle(self, seq: list) -> None:
        for i in range(len(seq) - 1, 0, -1):
            j = self.below(i + 1)
            seq[i], seq[j] = seq[j], seq[i]


@dataclass(frozen=True)
class DType:
    name: str
    c: str          # the CUDA C++ type
    bits: int
    kind: str       # "int", "float", "pred", "vec" (two 16-bit floats)
    signed: bool = False
    fmt: str = ""   # the float format (fpref.FORMATS) of a float or of a vec's halves

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    def signed_value(self, b: int) -> int:
        b &= self.mask
        return b - (1 << self.bits) if self.signed and b >> (self.bits - 1) else b


TYPES = {t.name: t for t in [
    DType("i8", "int8_t", 8, "int", True),
    DType("u8", "uint8_t", 8, "int"),
    DType("i16", "int16_t", 16, "int", True),
    DType("u16", "uint16_t", 16, "int"),
    DType("i32", "int", 32, "int", True),
    DType("u32", "unsigned", 32, "int"),
    DType("i64", "long long", 64, "int", True),
    DType("u64", "unsigned long long", 64, "int"),
    DType("f16", "__half", 16, "float", fmt="f16"),
    DType("bf16", "__nv_bfloat16", 16, "float", fmt="bf16"),
    DType("f32", "float", 32, "float", fmt="f32"),
    DType("f64", "double", 64, "float", fmt="f64"),
    DType("h2", "__half2", 32, "vec", fmt="f16"),
    DType("bf2", "__nv_bfloat162", 32, "vec", fmt="bf16"),
    DType("pred", "bool", 1, "pred"),
]}
INTS = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
#: the types that have an input pool, in the order of their pools in the input buffer
POOLED = INTS + FLOATS + ["h2", "bf2"]
POOL_N = 64  # entries per type; the first SPECIALS[t] of them are the edge values


def f32b(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64b(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _int_specials(bits: int, signed: bool) -> list[int]:
    m = (1 << bits) - 1
    top = 1 << (bits - 1)
    vals = [0, 1, m, top, top - 1, 2, m - 1, top + 1, bits - 1, bits, bits + 1, 0x55 * (m // 0xFF)]
    if bits >= 32:
        vals += [31, 32, 33, 63, 64, 65, 0xFFFF, 0x10000]
    if bits == 64:
        vals += [0xFFFFFFFF, 0x100000000, 0x80000000]
    out = []
    for v in vals:
        v &= m
        if v not in out:
            out.append(v)
    return out


_F32_SPECIALS = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), 0.5, -0.5, 1.5, 2.5, -2.5,
                 2147483520.0, 2147483648.0, -2147483648.0, 4294967296.0, 65504.0, 65520.0, 3.0e38]
_F32_SPECIAL_BITS = [0x7FC00000, 0x7FFFFFFF, 0xFFC00001, 0x7FA12345, 0x00000001, 0x807FFFFF, 0x00800000,
                     0x7F7FFFFF, 0x3F800001, 0x4B800001, 0x5F000000, 0xDF000001, 0x33000000, 0x387FC000]
_F64_SPECIALS = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), 0.5, -2.5, 3.5, 2.0 ** 31, -2.0 ** 31 - 1,
                 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1.0 + 2.0 ** -24, 1.0 + 2.0 ** -24 + 2.0 ** -50,
                 3.4028235677973366e38, 1.401298464324817e-45 / 2]
_F64_SPECIAL_BITS = [0x7FF8000000000000, 0xFFF8000000000001, 0x7FF4000000000000, 0x0000000000000001,
                     0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x3690000000000000]
_F16_SPECIALS = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0x7D01, 0xFE01, 0x0001, 0x83FF, 0x0400,
                 0x7BFF, 0x3C01, 0x3800, 0x4100, 0xC100, 0x5BFF]
_BF16_SPECIALS = [0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1, 0x0001, 0x807F, 0x0080,
                  0x7F7F, 0x3F81, 0x3F00, 0x4020, 0xC020, 0x4EFF]


def specials(t: str) -> list[int]:
    ty = TYPES[t]
    if ty.kind == "int":
        return _int_specials(ty.bits, ty.signed)
    if t == "f32":
        return [f32b(x) for x in _F32_SPECIALS] + _F32_SPECIAL_BITS
    if t == "f64":
        return [f64b(x) for x in _F64_SPECIALS] + _F64_SPECIAL_BITS
    if t == "f16":
        return list(_F16_SPECIALS)
    if t == "bf16":
        return list(_BF16_SPECIALS)
    if t == "h2":
        s = _F16_SPECIALS
        return [s[i] | s[(i * 7 + 3) % len(s)] << 16 for i in range(len(s))]
    if t == "bf2":
        s = _BF16_SPECIALS
        return [s[i] | s[(i * 5 + 1) % len(s)] << 16 for i in range(len(s))]
    raise KeyError(t)


def _random_float(r: Rng, fmt: str) -> int:
    """A float of `fmt` from a mixture: any bits, near 1, small multiples of 1/4, integer
    boundaries, subnormals, halfway points of narrower formats."""
    e, m, w = {"f16": (5, 10, 16), "bf16": (8, 7, 16), "f32": (8, 23, 32), "f64": (11, 52, 64)}[fmt]
    bias = (1 << (e - 1)) - 1
    kind = r.below(12)
    sign = r.bits(1) << (w - 1)
    if kind < 2:
        return r.bits(w)
    if kind < 6:  # exponent within +-12 of 1
        ex = bias + r.range(-12, 12)
        return sign | ex << m | r.bits(m)
    if kind < 8:  # small multiples of 1/4 (exact in every format with 8+ significand bits)
        v = r.range(-400, 400) / 4
        b = f64b(v) if fmt == "f64" else f32b(v)
        if fmt in ("f16", "bf16"):
            b = f32b(v) >> 16 if fmt == "bf16" else _f32_to_f16_exactish(v)
        return b
    if kind < 9:  # subnormal
        return sign | r.bits(m)
    if kind < 10:  # large: near the top of the exponent range
        ex = (1 << e) - 2 - r.below(4)
        return sign | ex << m | r.bits(m)
    if kind < 11 and fmt in ("f32", "f64"):  # near integer-conversion boundaries
        base = r.choice([31, 32, 63, 64, 15, 16, 7, 8])
        ex = bias + base - 1 + r.below(2)
        mant = r.bits(m) if r.chance(0.3) else (r.bits(4) << (m - 4) if r.chance(0.5) else ((1 << m) - 1 - r.bits(3)))
        return sign | ex << m | mant
    # halfway or near-halfway points for rounding to narrower formats and to integers
    ex = bias + r.range(-3, 24 if fmt != "f16" else 12)
    keep = {"f16": 5, "bf16": 4, "f32": 10, "f64": 23}[fmt]
    mant = (r.bits(keep) << (m - keep)) | (1 << (m - keep - 1)) | (r.bits(2) if r.chance(0.5) else 0)
    return sign | ex << m | (mant & ((1 << m) - 1))


def _f32_to_f16_exactish(v: float) -> int:
    """f16 bits of a multiple of 1/4 in [-100, 100] (exact in f16)."""
    return struct.unpack("<H", struct.pack("<e", v))[0]


def pool(t: str, seed: int) -> list[int]:
    """POOL_N bit patterns for type t: its specials, then random values."""
    ty = TYPES[t]
    r = Rng(seed * 1000003 + POOLED.index(t))
    vals = specials(t)[:POOL_N]
    while len(vals) < POOL_N:
        if ty.kind == "int":
            k = r.below(4)
            if k == 0:
                v = r.bits(ty.bits)
            elif k == 1:  # small magnitude, either sign
                v = r.range(-70, 70) & ty.mask
            elif k == 2:
                v = (1 << r.below(ty.bits)) + r.range(-2, 2)
            else:
                v = r.bits(r.range(1, ty.bits))
            vals.append(v & ty.mask)
        elif ty.kind == "float":
            vals.append(_random_float(r, ty.fmt))
        else:
            vals.append(_random_float(r, ty.fmt) | _random_float(r, ty.fmt) << 16)
    return vals


def nspecials(t: str) -> int:
    return min(len(specials(t)), POOL_N)
