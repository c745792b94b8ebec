"""Comparison and selection: setp, set, selp, slct (PTX ISA §9.7.6, and §9.7.7 for the
f16/bf16 forms).

Float comparisons without a `u` are ordered (false when either input is NaN, `ne`
included); the `u` forms are unordered (true when either is NaN); `num`/`nan` test for
NaNs; `.ftz` flushes subnormal f32/f16 inputs. Integer `lo/ls/hi/hs` are unsigned; `lt` &c.
follow the type's signedness. f16/bf16 values are compared exactly as f32.

`.and/.or/.xor` combine the comparison with a predicate operand c. `setp` with a `p|q`
destination writes BoolOp(t, c) to p and BoolOp(!t, c) to q, or for `.f16x2/.bf16x2`
BoolOp(t_low, c) to p and BoolOp(t_high, c) to q. `set` writes all ones (integer results, per
half-word for packed sources), 1.0 (f32, f16, bf16 results) or zero.
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.ir import TYPE_BITS, is_float
from . import fprt
from .half import HALF, parts
from .registry import lowers, type_suffix

_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
_INT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
        "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
_FLT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ONE_BITS = {"f16": 0x3C00, "bf16": 0x3F80}


def compare(em, cmp: str, t: str, a, c, ftz: bool = False):
    """`a cmp c` as i1 for values of PTX type `t` (floats as LLVM floats)."""
    b = em.b
    if is_float(t):
        if ftz:
            a, c = fprt.flush(em, a, t), fprt.flush(em, c, t)
        if cmp == "num":
            return b.fcmp_ordered("ord", a, c)
        if cmp == "nan":
            return b.fcmp_unordered("uno", a, c)
        if cmp.endswith("u") and cmp[:-1] in _FLT:
            return b.fcmp_unordered(_FLT[cmp[:-1]], a, c)
        if cmp not in _FLT:
            raise em.error(f"the comparison .{cmp} on a float type")
        return b.fcmp_ordered(_FLT[cmp], a, c)
    if cmp not in _INT:
        raise em.error(f"the comparison .{cmp} on an integer type")
    if cmp in ("lo", "ls", "hi", "hs") or t[0] in "ub":
        return b.icmp_unsigned(_INT[cmp], a, c)
    return b.icmp_signed(_INT[cmp], a, c)


def comparison(ins: ir.Instr) -> tuple[str, str | None]:
    """(the comparison, the .and/.or/.xor that combines it or None) of a setp or set."""
    cmp = next(m for m in ins.mods if m in _CMP)
    boolop = next((m for m in ins.mods if m in ("and", "or", "xor")), None)
    return cmp, boolop


def _results(em, ins: ir.Instr, t: str, cmp: str) -> list:
    """The comparison of operands 1 and 2 of type `t`: one i1, or two (low, high) for .x2."""
    ftz = "ftz" in ins.mods
    if t in HALF:
        elem = HALF[t][0]
        pa, pc = parts(em, ins.args[1], t), parts(em, ins.args[2], t)
        out = []
        for a, c in zip(pa, pc, strict=True):
            if ftz:
                a, c = fprt.flush_bits(em, a, elem), fprt.flush_bits(em, c, elem)
            out.append(compare(em, cmp, "f32", fprt.to_f32(em, a, elem), fprt.to_f32(em, c, elem)))
        return out
    if t == "f64" and ftz:
        raise em.error("`.ftz` on an f64 comparison")
    return [compare(em, cmp, t, em.read(ins.args[1], t), em.read(ins.args[2], t), ftz)]


def _combine(em, boolop, r, arg):
    if boolop is None:
        return r
    c = em.read_bits(arg, "pred")
    return {"and": em.b.and_, "or": em.b.or_, "xor": em.b.xor}[boolop](r, c)


@lowers("setp")
def lower_setp(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    cmp, boolop = comparison(ins)
    rs = _results(em, ins, t, cmp)
    c = ins.args[3] if boolop else None
    dst = ins.args[0]
    if isinstance(dst, ir.PredPair):
        p, q = (rs[0], rs[1]) if len(rs) == 2 else (rs[0], em.b.not_(rs[0]))
        em.write(dst.p, "pred", _combine(em, boolop, p, c))
        em.write(dst.q, "pred", _combine(em, boolop, q, c))
    elif len(rs) == 2:
        raise em.error(f"setp on .{t} needs a p|q destination")
    else:
        em.write(dst, "pred", _combine(em, boolop, rs[0], c))


@lowers("set")
def lower_set(em, ins: ir.Instr) -> None:
    types = [m for m in ins.mods if m in TYPE_BITS]
    dt, st = types[0], types[-1]
    cmp, boolop = comparison(ins)
    b = em.b
    rs = [_combine(em, boolop, r, ins.args[3] if boolop else None) for r in _results(em, ins, st, cmp)]
    if len(rs) == 2:
        # packed source: one half-word per comparison
        if dt in ("f16x2", "bf16x2"):
            one = em.const_int(16, _ONE_BITS[dt[:-2]])
        elif dt in ("u32", "s32", "b32"):
            one = em.const_int(16, 0xFFFF)
        else:
            raise em.error(f"set on .{st} with a .{dt} result")
        hs = [b.zext(b.select(r, one, em.const_int(16, 0)), em.bty("b32")) for r in rs]
        em.write(ins.args[0], "b32", b.or_(hs[0], b.shl(hs[1], em.const_int(32, 16))))
        return
    (r,) = rs
    if dt == "f32":
        v = b.select(r, em.const("f32", 1.0), em.const("f32", 0.0))
    elif dt in _ONE_BITS:
        v = b.select(r, em.const_int(16, _ONE_BITS[dt]), em.const_int(16, 0))
        dt = "b16"
    elif dt in ("u16", "s16", "u32", "s32", "b16", "b32"):
        v = b.sext(r, em.bty(dt))
    else:
        raise em.error(f"set with a .{dt} result")
    em.write(ins.args[0], dt, v, signed=False)


@lowers("selp")
def lower_selp(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    p = em.read_bits(ins.args[3], "pred")
    em.write(ins.args[0], t, em.b.select(p, a, c))


@lowers("slct")
def lower_slct(em, ins: ir.Instr) -> None:
    """slct d, a, b, c: a when c >= 0 (-0.0 included; NaN selects b), else b."""
    types = [m for m in ins.mods if m in TYPE_BITS]
    dt, ct = types[0], types[-1]
    a = em.read_bits(ins.args[1], dt)
    c = em.read_bits(ins.args[2], dt)
    x = em.read(ins.args[3], ct)
    if ct == "f32":
        if "ftz" in ins.mods:
            x = fprt.flush(em, x, ct)
        cond = em.b.fcmp_ordered(">=", x, em.const("f32", 0.0))
    elif ct == "s32":
        cond = em.b.icmp_signed(">=", x, em.const_int(32, 0))
    else:
        raise em.error(f"slct with a .{ct} selector")
    em.write(ins.args[0], dt, em.b.select(cond, a, c))
