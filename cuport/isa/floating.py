"""Floating-point arithmetic on f32 and f64: add, sub, mul, fma, mad, div, neg, abs, min, max.

PTX ISA §9.7.3 (Floating-Point Instructions). IEEE instructions round as their modifier
says (.rn by default), `.ftz` flushes subnormal inputs and results to sign-preserving zero,
`.sat` clamps to [0, 1] (NaN → 0). A `mul` followed by an `add` is never fused.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from .registry import lowers, type_suffix

_ROUND = ("rn", "rz", "rm", "rp")


def rounding(ins: ir.Instr) -> str:
    return next((m for m in ins.mods if m in _ROUND), "rn")


def flush(em, v, t: str):
    """Subnormal → signed zero (the .ftz rule), for f32; f64 is never flushed."""
    if t != "f32":
        return v
    b = em.b
    bits = em.to_bits(v, "f32")
    exp = b.and_(bits, em.const_int(32, 0x7F800000))
    is_sub = b.icmp_unsigned("==", exp, em.const_int(32, 0))
    flushed = b.select(is_sub, b.and_(bits, em.const_int(32, 0x80000000)), bits)
    return em.to_value(flushed, "f32")


def saturate(em, v, t: str):
    b = em.b
    zero, one = em.const(t, 0.0), em.const(t, 1.0)
    v = b.select(b.fcmp_unordered("uno", v, v), zero, v)  # NaN → 0
    v = b.select(b.fcmp_ordered("<", v, zero), zero, v)  # also turns -0.0 into +0.0
    v = b.select(b.fcmp_ordered("==", v, zero), zero, v)
    return b.select(b.fcmp_ordered(">", v, one), one, v)


def finish(em, ins: ir.Instr, t: str, v) -> None:
    if "ftz" in ins.mods:
        v = flush(em, v, t)
    if "sat" in ins.mods:
        v = saturate(em, v, t)
    em.write(ins.args[0], t, v)


def operands(em, ins: ir.Instr, t: str, n: int):
    vals = [em.read(ins.args[1 + i], t) for i in range(n)]
    if "ftz" in ins.mods:
        vals = [flush(em, v, t) for v in vals]
    return vals


def with_rounding(em, ins: ir.Instr, t: str, op: str, args: list):
    """Apply `op` (fadd/fsub/fmul/fdiv/fma/sqrt) in the rounding mode the instruction names."""
    b = em.b
    mode = rounding(ins)
    if mode == "rn":
        if op == "fma":
            return em.intrinsic("llvm.fma", args)
        if op == "sqrt":
            return em.intrinsic("llvm.sqrt", args)
        return getattr(b, op)(*args)
    raise em.error(f"rounding mode .{mode} is not supported yet")


@lowers("add", "sub", "mul", kind="float")
def lower_add(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a, c = operands(em, ins, t, 2)
    v = with_rounding(em, ins, t, {"add": "fadd", "sub": "fsub", "mul": "fmul"}[ins.op], [a, c])
    finish(em, ins, t, v)


@lowers("fma", "mad", kind="float")
def lower_fma(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a, c, d = operands(em, ins, t, 3)
    finish(em, ins, t, with_rounding(em, ins, t, "fma", [a, c, d]))


@lowers("neg", kind="float")
def lower_neg(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    (a,) = operands(em, ins, t, 1)
    finish(em, ins, t, em.b.fneg(a))


@lowers("abs", kind="float")
def lower_abs(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    (a,) = operands(em, ins, t, 1)
    finish(em, ins, t, em.intrinsic("llvm.fabs", [a]))


del ll
