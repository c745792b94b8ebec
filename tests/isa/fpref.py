"""Exact reference rounding for the floating-point test cases (pure Python, no cuport).

`rnd(q, fmt, mode)` rounds an exact rational (Fraction or int) to the bit pattern of a binary
format in mode rn/rna/rz/rm/rp, with subnormals and overflow as IEEE 754 says; `val` turns a
bit pattern back into a Python float. Expected values of directed-rounding cases, of cvt and
of the narrow formats are computed with these, independently of the code under test.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

#: name: (exponent bits, mantissa bits, has infinities)
FORMATS = {
    "f64": (11, 52, True), "f32": (8, 23, True), "f16": (5, 10, True), "bf16": (8, 7, True),
    "tf32": (8, 10, True), "e4m3": (4, 3, False), "e5m2": (5, 2, True),
}


def width(fmt: str) -> int:
    e, m, _ = FORMATS[fmt]
    return 1 + e + m


def max_bits(fmt: str) -> int:
    """The largest finite encoding: below the infinity (S.11..1.00..0) where there is one,
    else below the only NaN (e4m3: S.1111.111 is NaN, S.1111.110 = 448 the largest)."""
    e, m, has_inf = FORMATS[fmt]
    top = ((1 << e) - 1) << m
    return top - 1 if has_inf else (top | ((1 << m) - 1)) - 1


def exact(x: float) -> Fraction:
    return Fraction(x)


def rnd(q, fmt: str, mode: str = "rn", neg_zero: bool = False, satfinite: bool = False) -> int:
    """Bits of the rational `q` rounded to `fmt`. A zero result is -0 when q < 0 or, for an
    exact zero, when `neg_zero`."""
    e, m, has_inf = FORMATS[fmt]
    w = 1 + e + m
    q = Fraction(q)
    sign = 1 if q < 0 or (q == 0 and neg_zero) else 0
    a = abs(q)
    bias = (1 << (e - 1)) - 1
    emin = 1 - bias
    if a == 0:
        return sign << (w - 1)
    ex = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** ex > a:
        ex -= 1
    ex = max(ex, emin)
    quantum = Fraction(2) ** (ex - m)
    n, r = divmod(a, quantum)
    n = int(n)
    up = False
    if r:
        if mode == "rn":
            up = r > quantum / 2 or (r == quantum / 2 and n & 1)
        elif mode == "rna":
            up = r >= quantum / 2
        elif mode == "rz":
            up = False
        elif mode == "rm":
            up = bool(sign)
        elif mode == "rp":
            up = not sign
        else:
            raise ValueError(mode)
    n += up
    if n >= 1 << (m + 1):  # carried into the next binade
        n >>= 1
        ex += 1
    if n < 1 << m:  # subnormal (or zero)
        code = n
    else:
        code = ((ex - emin + 1) << m) | (n - (1 << m))
    mx = max_bits(fmt)
    if code > mx:
        toward = satfinite or mode == "rz" or (mode == "rm" and not sign) or (mode == "rp" and sign)
        if toward or not has_inf:
            code = mx if (toward or satfinite) else (1 << (w - 1)) - 1
        else:
            code = mx + 1
    return code | (sign << (w - 1))


def tiny(q, fmt: str, mode: str = "rn") -> bool:
    """IEEE 754 tininess *after* rounding, what `.ftz` flushes on the GPU: the nonzero
    rational q, rounded to fmt's precision with an unbounded exponent range, is smaller in
    magnitude than fmt's smallest normal number."""
    e, m, _ = FORMATS[fmt]
    a = abs(Fraction(q))
    if a == 0:
        return False
    ex = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** ex > a:
        ex -= 1
    quantum = Fraction(2) ** (ex - m)
    n, r = divmod(a, quantum)
    if r:
        neg = q < 0
        up = {"rn": r > quantum / 2 or (r == quantum / 2 and n % 2 == 1), "rz": False,
              "rm": neg, "rp": not neg}[mode]
        n += up
    return n * quantum < Fraction(2) ** (2 - (1 << (e - 1)))


# NaN bit patterns (fprt's docstring has the evidence for each rule)
NAN_LAYOUT = {"f64": (64, 52), "f32": (32, 23), "f16": (16, 10), "bf16": (16, 7)}
DEFAULT_NAN64 = 0xFFF8000000000000


def is_nan_bits(b: int, fmt: str) -> bool:
    w, m = NAN_LAYOUT[fmt]
    e = w - 1 - m
    return (b >> m) & ((1 << e) - 1) == (1 << e) - 1 and b & ((1 << m) - 1) != 0


#: the operands (PTX indices) of an f64 operation in the order in which a NaN among them is the
#: result: DADD, DMUL and DFMA return the NaN of their second source first, then the first's,
#: then the addend's; ptxas's div.f64 code tests a, then b; min/max of two NaNs give b
NAN64_ORDER = {"add": (1, 0), "sub": (1, 0), "mul": (1, 0), "fma": (1, 2, 0), "mad": (1, 2, 0), "div": (0, 1),
               "rcp": (0,), "sqrt": (0,), "neg": (0,), "abs": (0,), "min": (1, 0), "max": (1, 0)}


def nan64(op: str, *operands: int) -> int:
    """The f64 result of `op` (add, fma, div, ...; NAN64_ORDER) that gives NaN: the winning NaN
    operand (bit patterns in PTX operand order) with the quiet bit set, or 0xfff8000000000000
    when no operand is NaN."""
    for i in NAN64_ORDER[op]:
        if i < len(operands) and is_nan_bits(operands[i], "f64"):
            return operands[i] | 1 << 51
    return DEFAULT_NAN64


def nan_convert(b: int, src: str, dst: str) -> int:
    """A NaN converted by F2F: sign kept, payload cut (or extended) at its top, quieted."""
    sw, sm = NAN_LAYOUT[src]
    dw, dm = NAN_LAYOUT[dst]
    sign = b >> (sw - 1) & 1
    mant = b & ((1 << sm) - 1)
    mant = mant >> (sm - dm) if sm >= dm else mant << (dm - sm)
    return sign << (dw - 1) | ((1 << (dw - 1 - dm)) - 1) << dm | 1 << (dm - 1) | mant


def val(bits: int, fmt: str) -> float:
    """The value of a bit pattern (NaN as float('nan'))."""
    e, m, has_inf = FORMATS[fmt]
    w = 1 + e + m
    sign = -1.0 if bits >> (w - 1) & 1 else 1.0
    ex = bits >> m & ((1 << e) - 1)
    frac = bits & ((1 << m) - 1)
    bias = (1 << (e - 1)) - 1
    if has_inf and ex == (1 << e) - 1:
        return sign * math.inf if frac == 0 else math.nan
    if not has_inf and ex == (1 << e) - 1 and frac == (1 << m) - 1:
        return math.nan
    if ex == 0:
        return sign * math.ldexp(frac, 1 - bias - m)
    return sign * math.ldexp(frac | (1 << m), ex - bias - m)


def f32(x: float) -> float:
    """x rounded to nearest f32 (struct does IEEE rounding)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def bits_f64(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b & 0xFFFFFFFFFFFFFFFF))[0]


def uniform(case):
    """The same case with every source in a uniform register (set by `mov` from an immediate),
    so the instruction is emitted in cuport's scalar (uniform) mode rather than per lane."""
    from ptxgen import BITS, Case, to_bits

    decls, movs, names = [], [], {}
    for i, t in enumerate(case.srcs):
        n = BITS[t]
        v = to_bits(case.inputs[i], t)
        if t == "pred":
            decls.append(f".reg .pred %up{i};")
            movs.append(f"setp.ne.u32 %up{i}, {v}, 0")
            names["abcdefgh"[i]] = f"%up{i}"
        else:
            w = max(n, 16)
            decls.append(f".reg .b{w} %u{i};")
            movs.append(f"mov.b{w} %u{i}, {v:#x}")
            names["abcdefgh"[i]] = f"%u{i}"
    tmpl = case.template
    if tmpl is None:
        tmpl = ", ".join(["{d}"] + ["{" + "abcdefgh"[i] + "}" for i in range(len(case.srcs))])
    for i in range(len(case.dsts)):
        names[f"d{i}"] = f"\x00{i}\x00"
    names["d"] = "\x000\x00"
    body = tmpl.format(**names).replace("{", "{{").replace("}", "}}")
    for i in range(len(case.dsts)):
        body = body.replace(f"\x00{i}\x00", f"{{d{i}}}")
    first, rest = movs[0].split(" ", 1)
    text = "; ".join([rest] + movs[1:] + [f"{case.instr} {body}"])
    return Case(first, case.dst, [], [], case.expect, template=text, note=case.note,
                tolerance_ulps=case.tolerance_ulps, abs_tolerance=case.abs_tolerance, gpu_differs=case.gpu_differs,
                extra_decls=" ".join(decls + ([case.extra_decls] if case.extra_decls else [])))


def uniform_variants(cases: list, differs=None) -> list:
    """One uniform-mode copy (see `uniform`) of the first case of every kernel group.

    Their operands are constants to ptxas, which may fold or rearrange the instruction at
    compile time; `differs(case)` returns why the GPU's answer to the copy of `case` is then
    not the hardware rule the case encodes (the copy is checked against `expect` only), or ""."""
    seen, out = set(), []
    for c in cases:
        if c.group() not in seen and c.srcs:
            seen.add(c.group())
            u = uniform(c)
            if differs is not None and not u.gpu_differs:
                u.gpu_differs = differs(c)
            out.append(u)
    return out
