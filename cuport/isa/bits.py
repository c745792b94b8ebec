"""Logic and shifts: and, or, xor, not, cnot, shl, shr.

PTX ISA §9.7.8 (Logic and Shift Instructions). Shift amounts are unsigned 32-bit values;
amounts of at least the operand width give 0 (or all sign bits for shr.s), where LLVM
would give poison, so they are clamped explicitly.
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .registry import lowers, type_suffix


@lowers("and", "or", "xor")
def lower_logic(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    f = {"and": em.b.and_, "or": em.b.or_, "xor": em.b.xor}[ins.op]
    em.write(ins.args[0], t, f(a, c))


@lowers("not")
def lower_not(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    em.write(ins.args[0], t, em.b.not_(em.read_bits(ins.args[1], t)))


@lowers("cnot")
def lower_cnot(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    z = em.b.icmp_unsigned("==", a, em.const_int(TYPE_BITS[t], 0))
    em.write(ins.args[0], t, em.b.zext(z, em.bty(t)))


@lowers("shl", "shr")
def lower_shift(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    n = TYPE_BITS[t]
    b = em.b
    a = em.read_bits(ins.args[1], t)
    amt32 = em.read_bits(ins.args[2], "u32")
    big = b.icmp_unsigned(">=", amt32, em.const_int(32, n))
    amt = em._resize(amt32, em.bty(t).element if em.vec else em.bty(t), False)
    if ins.op == "shl":
        v = b.select(big, em.const_int(n, 0), b.shl(a, b.select(big, em.const_int(n, 0), amt)))
    elif t[0] == "s":
        v = b.ashr(a, b.select(big, em.const_int(n, n - 1), amt))
    else:
        v = b.select(big, em.const_int(n, 0), b.lshr(a, b.select(big, em.const_int(n, 0), amt)))
    em.write(ins.args[0], t, v)
