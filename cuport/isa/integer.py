"""Integer arithmetic: add, sub, mul, mad, div, rem, min, max, abs, neg and friends.

PTX ISA §9.7.1 (Integer Arithmetic Instructions). Results wrap modulo 2^n unless `.sat`
asks for clamping. `.lo/.hi/.wide` select the half of the double-width product.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .registry import lowers, type_suffix


def _signed(t: str) -> bool:
    return t[0] == "s"


def _wide(em, v, t: str, bits: int):
    tgt = ll.VectorType(ll.IntType(bits), 32) if em.vec else ll.IntType(bits)
    return em.b.sext(v, tgt) if _signed(t) else em.b.zext(v, tgt)


def _product(em, ins: ir.Instr, t: str, a, b_):
    """mul with .lo/.hi/.wide; returns (value, result type)."""
    b = em.b
    n = TYPE_BITS[t]
    if "wide" in ins.mods:
        rt = {"s": "s", "u": "u"}.get(t[0], "u") + str(2 * n)
        return b.mul(_wide(em, a, t, 2 * n), _wide(em, b_, t, 2 * n)), rt
    if "hi" in ins.mods:
        p = b.mul(_wide(em, a, t, 2 * n), _wide(em, b_, t, 2 * n))
        p = b.lshr(p, em.const_int(2 * n, n))
        return b.trunc(p, em.bty(t)), t
    return b.mul(a, b_), t


@lowers("add", "sub", kind="int")
def lower_add_sub(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    b = em.b
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    if "sat" in ins.mods:
        name = ("llvm.sadd.sat" if ins.op == "add" else "llvm.ssub.sat")
        em.write(ins.args[0], t, em.intrinsic(name, [a, c]))
        return
    if "cc" in ins.mods or ins.op in ("addc", "subc"):
        raise em.error("carry arithmetic is not supported yet")
    em.write(ins.args[0], t, b.add(a, c) if ins.op == "add" else b.sub(a, c))


@lowers("mul", kind="int")
def lower_mul(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    v, rt = _product(em, ins, t, a, c)
    em.write(ins.args[0], rt, v)


@lowers("mad", kind="int")
def lower_mad(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    if "cc" in ins.mods:
        raise em.error("carry arithmetic is not supported yet")
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    v, rt = _product(em, ins, t, a, c)
    d = em.read_bits(ins.args[3], rt)
    if "sat" in ins.mods:
        em.write(ins.args[0], rt, em.intrinsic("llvm.sadd.sat", [v, d]))
        return
    em.write(ins.args[0], rt, em.b.add(v, d))
