"""Comparison and selection: setp, selp, set, slct.

PTX ISA §9.7.4 (Comparison and Selection Instructions). Float comparisons without a `u`
are ordered (false when either input is NaN, `ne` included); the `u` forms are unordered
(true when either is NaN); `num`/`nan` test for NaNs. Integer `lo/ls/hi/hs` are unsigned.
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.ir import TYPE_BITS, is_float
from .registry import lowers, type_suffix

_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
_INT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
        "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
_FLT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(em, cmp: str, t: str, a, c, ftz: bool = False):
    b = em.b
    if is_float(t):
        if ftz:
            from .floating import flush

            a, c = flush(em, a, t), flush(em, c, t)
        if cmp == "num":
            return b.fcmp_ordered("ord", a, c)
        if cmp == "nan":
            return b.fcmp_unordered("uno", a, c)
        if cmp.endswith("u") and cmp[:-1] in _FLT:
            return b.fcmp_unordered(_FLT[cmp[:-1]], a, c)
        return b.fcmp_ordered(_FLT[cmp], a, c)
    if cmp in ("lo", "ls", "hi", "hs") or t[0] in "ub":
        return b.icmp_unsigned(_INT[cmp], a, c)
    return b.icmp_signed(_INT[cmp], a, c)


def _parts(ins: ir.Instr):
    cmp = next(m for m in ins.mods if m in _CMP)
    boolop = next((m for m in ins.mods if m in ("and", "or", "xor")), None)
    return cmp, boolop


def _combine(em, boolop, r, ins, arg):
    if boolop is None:
        return r
    c = em.read_bits(arg, "pred")
    return {"and": em.b.and_, "or": em.b.or_, "xor": em.b.xor}[boolop](r, c)


@lowers("setp")
def lower_setp(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    cmp, boolop = _parts(ins)
    a = em.read(ins.args[1], t)
    c = em.read(ins.args[2], t)
    r = compare(em, cmp, t, a, c, "ftz" in ins.mods)
    dst = ins.args[0]
    p = _combine(em, boolop, r, ins, ins.args[3] if boolop else None)
    if isinstance(dst, ir.PredPair):
        em.write(dst.p, "pred", p)
        q = _combine(em, boolop, em.b.not_(r), ins, ins.args[3] if boolop else None)
        em.write(dst.q, "pred", q)
    else:
        em.write(dst, "pred", p)


@lowers("selp")
def lower_selp(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    p = em.read_bits(ins.args[3], "pred")
    em.write(ins.args[0], t, em.b.select(p, a, c))


@lowers("set")
def lower_set(em, ins: ir.Instr) -> None:
    types = [m for m in ins.mods if m in TYPE_BITS]
    dt, st = types[0], types[-1]
    cmp, boolop = _parts(ins)
    a = em.read(ins.args[1], st)
    c = em.read(ins.args[2], st)
    r = compare(em, cmp, st, a, c, "ftz" in ins.mods)
    r = _combine(em, boolop, r, ins, ins.args[3] if boolop else None)
    if dt == "f32":
        v = em.b.select(r, em.const("f32", 1.0), em.const("f32", 0.0))
    else:
        v = em.b.sext(r, em.bty(dt))
    em.write(ins.args[0], dt, v)


@lowers("slct")
def lower_slct(em, ins: ir.Instr) -> None:
    types = [m for m in ins.mods if m in TYPE_BITS]
    dt, ct = types[0], types[-1]
    a = em.read_bits(ins.args[1], dt)
    c = em.read_bits(ins.args[2], dt)
    x = em.read(ins.args[3], ct)
    if ct == "f32":
        if "ftz" in ins.mods:
            from .floating import flush

            x = flush(em, x, ct)
        cond = em.b.fcmp_ordered(">=", x, em.const("f32", 0.0))
    else:
        cond = em.b.icmp_signed(">=", x, em.const_int(32, 0))
    em.write(ins.args[0], dt, em.b.select(cond, a, c))
