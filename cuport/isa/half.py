"""Half-precision instructions: f16, f16x2, bf16, bf16x2 (PTX ISA §9.7.4, §9.7.7).

add sub mul fma neg abs min max ex2 tanh; the comparisons (setp/set on these types) live in
compare.py and use `parts`/`to_f32` from here. A `.x2` type is two independent halves of a
32-bit register, the low half first.

Arithmetic is done in a wider format and rounded once to nearest-even: f16 add/sub/mul in
f32 (24 >= 2*11+1 bits, so rounding twice equals rounding once), everything else (bf16, and
every fma) in f64, where the product is exact; the f64 value then goes to f32 by round-to-odd
and from there to the narrow format. An fma's sum goes there as TwoSum's exact pair: when c is
more than 53 bits below a*b, the sum rounded to nearest is a*b itself, which may be a tie of
the narrow format that c breaks (bf16 0x7d96 * -2.5 + 0.00146 is 0xfe3b on an H200, not 0xfe3c). `.ftz` (f16 only) flushes subnormal
inputs, and results that are tiny after rounding (11 bits, unbounded exponent, below 2^-14:
the f32 rule, fprt.flush_tiny), `.sat` clamps to [0, 1] with NaN → +0, `.relu` clamps
negative results to +0. NaN results are the canonical 0x7fff, neg/abs included: ptxas
implements them as HADD2 -RZ, -a (f16) and HFMA2.BF16 -RZ, RZ, -a (bf16).
"""

from __future__ import annotations

from ..ptx import ir
from . import fprt
from .registry import type_suffix

HALF = {"f16": ("f16", 1), "f16x2": ("f16", 2), "bf16": ("bf16", 1), "bf16x2": ("bf16", 2)}


def parts(em, op, t: str) -> list:
    """The half-word bit patterns (i16) of an operand of type `t`, low half first."""
    elem, n = HALF[t]
    b = em.b
    if n == 1:
        return [em.read_bits(op, "b16")]
    v = em.read_bits(op, "b32")
    return [b.trunc(v, em.bty("b16")), b.trunc(b.lshr(v, em.const_int(32, 16)), em.bty("b16"))]


def pack(em, hs: list):
    """Half-words (i16) back into a b16 or b32 value, low half first."""
    if len(hs) == 1:
        return hs[0]
    b = em.b
    lo = b.zext(hs[0], em.bty("b32"))
    hi = b.shl(b.zext(hs[1], em.bty("b32")), em.const_int(32, 16))
    return b.or_(lo, hi)


def to_f32(em, h, elem: str):
    return fprt.to_f32(em, h, elem)


def _inputs(em, ins: ir.Instr, t: str, n: int, ftz: bool) -> list[list]:
    """Per half: the list of source half-words (flushed when `ftz`)."""
    elem, k = HALF[t]
    srcs = [parts(em, ins.args[1 + i], t) for i in range(n)]
    if ftz:
        srcs = [[fprt.flush_bits(em, h, elem) for h in s] for s in srcs]
    return [[s[j] for s in srcs] for j in range(k)]


def _clamp(em, ins: ir.Instr, v, t: str):
    """.sat and .relu on the wide value before the final rounding (both commute with it)."""
    b = em.b
    if "sat" in ins.mods:
        v = fprt.saturate(em, v, t)
    if "relu" in ins.mods:
        zero = em.const(t, 0.0)
        v = b.select(b.fcmp_unordered("<=", v, zero), b.select(fprt.is_nan(em, v), v, zero), v)
    return v


def _round(em, v, t: str, elem: str):
    """A wide value (f32 for f16 add/sub/mul, else f64) to the narrow format, nearest-even."""
    if t == "f64":
        v = fprt.f64_to_f32(em, v, None, "ro")
    return fprt.from_f32(em, v, elem)


def _ftz_tiny(em, h, v, wide: str, elem: str):
    """f16 `.ftz` on the rounded result h of the wide value v: zero of h's sign when v rounded
    to 11 bits with an unbounded exponent is below 2^-14, found by rounding v * 2^16 (exact)
    and comparing with 2^2 (f16 0x4400)."""
    if elem != "f16":
        return h
    b = em.b
    t = _round(em, b.fmul(v, em.const(wide, 2.0 ** 16)), wide, elem)
    tiny = b.icmp_unsigned("<", b.and_(t, em.const_int(16, 0x7FFF)), em.const_int(16, 0x4400))
    return b.select(tiny, b.and_(h, em.const_int(16, 0x8000)), h)


def _finish(em, ins: ir.Instr, t: str, hs: list) -> None:
    elem = HALF[t][0]
    if "ftz" in ins.mods:
        hs = [fprt.flush_bits(em, h, elem) for h in hs]
    em.write(ins.args[0], "b32" if len(hs) == 2 else "b16", pack(em, hs))


def _check(em, ins: ir.Instr, t: str) -> None:
    elem = HALF[t][0]
    bad = [m for m in ins.mods if m in ("rz", "rm", "rp")]
    if bad:
        raise em.error(f"rounding mode .{bad[0]} on .{t}")
    if elem == "bf16" and "ftz" in ins.mods and ins.op != "ex2":
        raise em.error("`.ftz` on a bf16 instruction")


def lower_arith(em, ins: ir.Instr) -> None:
    """add/sub/mul on f16, f16x2, bf16, bf16x2."""
    t = type_suffix(ins)
    _check(em, ins, t)
    elem = HALF[t][0]
    b = em.b
    wide = "f32" if elem == "f16" else "f64"
    op = {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[ins.op]
    out = []
    for a, c in _inputs(em, ins, t, 2, "ftz" in ins.mods):
        x, y = to_f32(em, a, elem), to_f32(em, c, elem)
        if wide == "f64":
            x, y = fprt.fpext(em, x), fprt.fpext(em, y)
        v = _clamp(em, ins, op(x, y), wide)
        h = _round(em, v, wide, elem)
        if "ftz" in ins.mods and ins.op == "mul":  # a tiny sum or difference is exact
            h = _ftz_tiny(em, h, v, wide, elem)
        out.append(h)
    _finish(em, ins, t, out)


def lower_fma(em, ins: ir.Instr) -> None:
    """fma.rn{.ftz}{.sat|.relu} on f16/f16x2/bf16/bf16x2: one rounding of a*b + c."""
    t = type_suffix(ins)
    _check(em, ins, t)
    if "oob" in ins.mods:
        raise em.error("fma.oob (tensor out-of-bounds NaN) is not supported")
    elem = HALF[t][0]
    b = em.b
    out = []
    for a, c, d in _inputs(em, ins, t, 3, "ftz" in ins.mods):
        x, y, z = (fprt.fpext(em, to_f32(em, h, elem)) for h in (a, c, d))
        s, e = fprt.two_sum(em, b.fmul(x, y), z)  # the product is exact; see the module docstring
        v = _clamp(em, ins, fprt.f64_to_f32(em, s, e, "ro"), "f32")
        h = fprt.from_f32(em, v, elem)
        out.append(_ftz_tiny(em, h, v, "f32", elem) if "ftz" in ins.mods else h)
    _finish(em, ins, t, out)


def lower_signop(em, ins: ir.Instr) -> None:
    """neg/abs: the sign bit of each half (`.ftz` flushes first); a NaN gives 0x7fff, as
    from the addition ptxas turns them into."""
    t = type_suffix(ins)
    _check(em, ins, t)
    b = em.b
    c = em.const_int
    expmask = 0x7C00 if HALF[t][0] == "f16" else 0x7F80
    out = []
    for (a,) in _inputs(em, ins, t, 1, "ftz" in ins.mods):
        r = b.xor(a, c(16, 0x8000)) if ins.op == "neg" else b.and_(a, c(16, 0x7FFF))
        nan = b.icmp_unsigned(">", b.and_(a, c(16, 0x7FFF)), c(16, expmask))
        out.append(b.select(nan, c(16, 0x7FFF), r))
    _finish(em, ins, t, out)


def lower_minmax(em, ins: ir.Instr) -> None:
    """min/max{.ftz}{.NaN}{.xorsign.abs}: compared exactly in f32; the chosen value converts
    back exactly, NaN results are 0x7fff."""
    from .floating import minmax_values

    t = type_suffix(ins)
    _check(em, ins, t)
    elem = HALF[t][0]
    b = em.b
    out = []
    for hs in _inputs(em, ins, t, len(ins.args) - 1, "ftz" in ins.mods):
        signs = [b.icmp_signed("<", h, em.const_int(16, 0)) for h in hs]  # (a NaN's own sign)
        v = minmax_values(em, ins, "f32", [to_f32(em, h, elem) for h in hs], signs)
        if elem == "f16":
            r = b.bitcast(b.fptrunc(v, em.ty("f16")), em.bty("b16"))
        else:
            r = b.trunc(b.lshr(em.to_bits(v, "f32"), em.const_int(32, 16)), em.bty("b16"))
        out.append(b.select(fprt.is_nan(em, v), em.const_int(16, 0x7FFF), r))
    _finish(em, ins, t, out)


def lower_approx(em, ins: ir.Instr) -> None:
    """ex2.approx (f16: 2^-9.9 relative; bf16 requires .ftz: 2^-7) and tanh.approx (absolute
    2^-10.987 for f16, 2^-8 for bf16): computed in f64 and rounded once."""
    t = type_suffix(ins)
    elem = HALF[t][0]
    ftz = "ftz" in ins.mods
    if ins.op == "ex2" and elem == "bf16" and not ftz:
        raise em.error("ex2.approx.bf16 requires .ftz")
    out = []
    for (a,) in _inputs(em, ins, t, 1, ftz):
        x = fprt.fpext(em, to_f32(em, a, elem))
        v = fprt.exp2_f64(em, x) if ins.op == "ex2" else fprt.tanh_f64(em, x)
        h = _round(em, v, "f64", elem)
        out.append(fprt.flush_bits(em, h, elem) if ftz else h)
    em.write(ins.args[0], "b32" if len(out) == 2 else "b16", pack(em, out))
